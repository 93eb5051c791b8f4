"""A COCO / LVIS ``segmentation`` of any form to a mask, as pycocotools' ``annToRLE`` + ``decode`` read it.

``annToRLE`` (pycocotools ``coco.py``, lvis ``lvis.py``) knows three forms:

- a **list of polygons** ``[[x0, y0, x1, y1, ...], ...]``: each drawn by ``frPyObjects`` (:mod:`.coco_polygons`),
  the parts of one object merged by ``merge`` (their union). ``frPyObjects`` decides the form from the *first*
  polygon: one of exactly 4 numbers is taken for a box and fails (``TypeError``), one of fewer is refused; both
  are errors here too. Later polygons of 0-4 numbers draw nothing (fewer than 3 points).
- an **uncompressed RLE** ``{"size": [h, w], "counts": [int, ...]}`` (COCO's crowd annotations);
- a **compressed RLE** ``{"size": [h, w], "counts": "..."}`` (detectron2's results, :mod:`.coco_rle`).

An RLE carries its own size; pycocotools then gives an IoU of -1 against masks of another size. Here an RLE whose
size is not its image's is an error, like a malformed RLE (:class:`SegmentationError`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from nobg_metrics.io.coco.forms import Forms, split_forms
from nobg_metrics.io.coco.intervals import intervals_to_bands, intervals_to_masks, union_intervals
from nobg_metrics.io.coco.polygons import polygon_intervals
from nobg_metrics.io.coco.rle import check_counts, rle_intervals
from nobg_metrics.io.coco.rle_runs import string_runs
from nobg_metrics.io.errors import BadPolygon, MalformedRle, SegmentationError
from nobg_metrics.ops.row_bands import RowBands


def forms_intervals(forms: Forms) -> tuple[Tensor, Tensor, Tensor] | None:
    """The second half of reading masks (:func:`~nobg_metrics.io.coco.forms.split_forms` is the first): every
    segmentation's foreground as column-major intervals ``(owner, start, stop)``, each mask's sorted and not
    overlapping (the masks in the order of their forms: polygons, strings, lists); ``None`` where there are none.

    Raises:
        SegmentationError: a malformed RLE or polygon, named by its position.
    """
    height, width = forms.height, forms.width
    rows: list[Tensor] = []
    starts: list[Tensor] = []
    stops: list[Tensor] = []
    if forms.string_runs is not None:  # decoded in the first half
        rle, start, stop = (torch.from_numpy(array).long() for array in forms.string_runs)  # (int32: widened)
        rows.append(rle)
        starts.append(start)
        stops.append(stop)
    if forms.strings:  # the compressed strings the first half left: the counts decoder names their fault
        try:
            rle, start, stop = string_runs(forms.strings, height, width)
        except MalformedRle as error:
            raise SegmentationError(forms.string_owner[error.index], f"malformed RLE: {error.reason}") from None
        whole = len(forms.string_owner) == forms.count  # every segmentation a string: owners are positions
        rows.append(rle if whole else torch.tensor(forms.string_owner).index_select(0, rle))
        starts.append(start)
        stops.append(stop)
    if forms.list_owner:
        try:
            counts, lengths = torch.tensor(forms.lists, dtype=torch.int64), torch.tensor(forms.list_lengths)
            check_counts(counts, lengths, height, width)
        except MalformedRle as error:
            raise SegmentationError(forms.list_owner[error.index], f"malformed RLE: {error.reason}") from None
        rle, start, stop = rle_intervals(counts, lengths)
        rows.append(torch.tensor(forms.list_owner)[rle])
        starts.append(start)
        stops.append(stop)
    if forms.polygons:
        try:
            polygon, start, stop = polygon_intervals(forms.polygons, height, width)
        except BadPolygon as error:
            raise SegmentationError(forms.polygon_owner[error.index], error.reason) from None
        # sorted by (mask, start), the parts of one object merged (pycocotools merge: they may overlap); first,
        # so that gt polygons before detection strings need no sorting afterwards
        owner, start, stop = union_intervals(torch.tensor(forms.polygon_owner)[polygon], start, stop, height * width)
        rows.insert(0, owner)
        starts.insert(0, start)
        stops.insert(0, stop)
    if not rows:
        return None
    if len(rows) == 1:
        return rows[0], starts[0], stops[0]
    return torch.cat(rows), torch.cat(starts), torch.cat(stops)


def segmentation_masks(segmentations: Sequence[object], height: int, width: int, *,
                       transposed: bool = False, device: torch.device | str | None = None) -> Tensor:
    """The masks of ``N`` segmentations of one ``height x width`` image, read as pycocotools reads them.

    Compressed strings are decoded together, polygons walked together; every mask's foreground, as column-major
    intervals (RLE runs, polygon insides; an object's parts united, pycocotools ``merge``), is drawn in one pass.

    Args:
        segmentations: ``N`` JSON values: polygon lists, or RLE dicts with list or string ``counts``.
        height, width: the image's size (``images[i]["height"]``, ``["width"]``).
        transposed: return ``(N, width, height)`` masks, each image transposed (the layout RLEs are in: no
            transposing copy).
        device: where the masks are built (strings and polygons are read on the CPU; only their runs travel).

    Returns:
        ``(N, height, width)`` bool (``(N, width, height)`` if ``transposed``).

    Raises:
        SegmentationError: a form pycocotools cannot read, a malformed RLE or polygon, an RLE of another size.

    Examples:
        >>> square = [[0.5, 0.5, 2.5, 0.5, 2.5, 2.5, 0.5, 2.5]]
        >>> masks = segmentation_masks([square, {"size": [3, 3], "counts": [0, 9]}], 3, 3)
        >>> masks.sum((1, 2)).tolist()
        [4, 9]
    """
    return forms_masks(split_forms(segmentations, height, width), transposed=transposed, device=device)


def forms_masks(forms: Forms, *, transposed: bool = False, device: torch.device | str | None = None) -> Tensor:
    """:func:`segmentation_masks` of segmentations already sorted by form
    (:func:`~nobg_metrics.io.coco.forms.split_forms`).

    Examples:
        >>> forms_masks(split_forms([{"size": [1, 3], "counts": [1, 2]}], 1, 3)).int().tolist()
        [[[0, 1, 1]]]
    """
    found = forms_intervals(forms)
    if found is None:
        shape = (forms.width, forms.height) if transposed else (forms.height, forms.width)
        return torch.zeros(forms.count, *shape, dtype=torch.bool, device=device)
    return intervals_to_masks(*found, forms.count, forms.height, forms.width, False, transposed, device)


def segmentation_bands(segmentations: Sequence[object], height: int, width: int) -> RowBands:
    """The masks of :func:`segmentation_masks` (``transposed=True``) as row bands: each mask drawn into its own
    columns only (:func:`~nobg_metrics.io.coco.intervals.intervals_to_bands`), what the CPU counting reads.

    Returns:
        :class:`~nobg_metrics.ops.row_bands.RowBands` of shape ``(N, width, height)``.

    Raises:
        SegmentationError: as :func:`segmentation_masks`.

    Examples:
        >>> bands = segmentation_bands([{"size": [3, 4], "counts": [4, 1, 1, 2, 4]}], 3, 4)
        >>> bands.shape, bands.tops, bands.bottoms
        (torch.Size([1, 4, 3]), [1], [3])
    """
    return forms_bands(split_forms(segmentations, height, width))


def forms_bands(forms: Forms) -> RowBands:
    """:func:`segmentation_bands` of segmentations already sorted by form
    (:func:`~nobg_metrics.io.coco.forms.split_forms`).

    Examples:
        >>> forms_bands(split_forms([{"size": [3, 4], "counts": [4, 1, 1, 2, 4]}], 3, 4)).bottoms
        [3]
    """
    found = forms_intervals(forms)
    if found is not None and forms.extents is not None:  # every mask a decoded string: bands known already
        tops, bottoms, areas = forms.extents
        return RowBands(None, tops.tolist(), bottoms.tolist(), forms.width, forms.height, found,
                        torch.from_numpy(areas))
    if found is None:
        none = torch.zeros(0, dtype=torch.int64)
        return RowBands.from_runs(none, none, none, forms.count, forms.width, forms.height)
    only_strings = not (forms.strings or forms.list_owner or forms.polygons)  # decode_runs' order, no empty run
    return intervals_to_bands(*found, forms.count, forms.height, forms.width, ordered=only_strings)
