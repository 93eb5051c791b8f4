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

from nobg_metrics.io.coco.intervals import intervals_to_bands, intervals_to_masks, union_intervals
from nobg_metrics.io.coco.polygons import polygon_intervals
from nobg_metrics.io.coco.rle import check_counts, rle_intervals
from nobg_metrics.io.coco.rle_runs import string_runs
from nobg_metrics.io.errors import BadPolygon, MalformedRle, SegmentationError
from nobg_metrics.ops.row_bands import RowBands


def _is_count(value: object) -> bool:
    """An RLE count as pycocotools stores it (``uint``)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**32


def _check_size(index: int, rle: dict, height: int, width: int) -> None:
    size = rle.get("size")
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and all(isinstance(v, int) for v in size)):
        raise SegmentationError(index, f"an RLE needs 'size': [height, width], got {size!r}")
    if list(size) != [height, width]:
        raise SegmentationError(index, f"the RLE's size {list(size)} is not its image's [height, width] = "
                                       f"{[height, width]}")


def _polygon_list(index: int, segmentation: list) -> list:
    if not segmentation:
        raise SegmentationError(index, "an empty list of polygons (pycocotools cannot read it either)")
    if not all(isinstance(p, (list, tuple)) for p in segmentation):
        raise SegmentationError(index, "a list segmentation must be a list of polygons [[x0, y0, x1, y1, ...], ...]")
    first = len(segmentation[0])
    if first == 4:
        raise SegmentationError(index, "its first polygon has 4 numbers: pycocotools' frPyObjects takes that for "
                                       "a box and fails; give polygons of at least 3 points")
    if first < 4:
        raise SegmentationError(index, f"its first polygon has {first} numbers: pycocotools' frPyObjects refuses "
                                       "it; give polygons of at least 3 points")
    return list(segmentation)


def _intervals(segmentations: Sequence[object], height: int, width: int
               ) -> tuple[Tensor, Tensor, Tensor] | None:
    """Every segmentation's foreground as column-major intervals ``(owner, start, stop)``, each mask's sorted and
    not overlapping (the masks in the order of their forms: polygons, strings, lists); ``None`` where there are
    none."""
    polygons: list = []
    polygon_owner: list[int] = []
    strings: list[str | bytes] = []
    string_owner: list[int] = []
    lists: list[int] = []
    list_owner: list[int] = []
    list_lengths: list[int] = []
    for index, segmentation in enumerate(segmentations):  # sort the JSON values by form; decoding is batched
        if isinstance(segmentation, list):
            parts = _polygon_list(index, segmentation)
            polygons.extend(parts)
            polygon_owner.extend([index] * len(parts))
        elif isinstance(segmentation, dict) and "counts" in segmentation:
            _check_size(index, segmentation, height, width)
            counts = segmentation["counts"]
            if isinstance(counts, (str, bytes)):
                strings.append(counts)
                string_owner.append(index)
            elif isinstance(counts, list):
                if not all(_is_count(c) for c in counts):
                    raise SegmentationError(index, "uncompressed RLE counts must be integers in [0, 2^32)")
                lists.extend(counts)
                list_owner.append(index)
                list_lengths.append(len(counts))
            else:
                raise SegmentationError(index, f"RLE 'counts' must be a string or a list of integers, got "
                                               f"{type(counts).__name__}")
        else:
            raise SegmentationError(index, "a segmentation must be a list of polygons or an RLE dict with 'size' "
                                           f"and 'counts', got {type(segmentation).__name__}"
                                           f"{' without counts' if isinstance(segmentation, dict) else ''}")
    rows: list[Tensor] = []
    starts: list[Tensor] = []
    stops: list[Tensor] = []
    if strings:  # the compressed strings: straight to their runs
        try:
            rle, start, stop = string_runs(strings, height, width)
        except MalformedRle as error:
            raise SegmentationError(string_owner[error.index], f"malformed RLE: {error.reason}") from None
        whole = len(string_owner) == len(segmentations)  # every segmentation a string: owners are positions
        rows.append(rle if whole else torch.tensor(string_owner).index_select(0, rle))
        starts.append(start)
        stops.append(stop)
    if list_owner:
        try:
            counts, lengths = torch.tensor(lists, dtype=torch.int64), torch.tensor(list_lengths)
            check_counts(counts, lengths, height, width)
        except MalformedRle as error:
            raise SegmentationError(list_owner[error.index], f"malformed RLE: {error.reason}") from None
        rle, start, stop = rle_intervals(counts, lengths)
        rows.append(torch.tensor(list_owner)[rle])
        starts.append(start)
        stops.append(stop)
    if polygons:
        try:
            polygon, start, stop = polygon_intervals(polygons, height, width)
        except BadPolygon as error:
            raise SegmentationError(polygon_owner[error.index], error.reason) from None
        # sorted by (mask, start), the parts of one object merged (pycocotools merge: they may overlap); first,
        # so that gt polygons before detection strings need no sorting afterwards
        owner, start, stop = union_intervals(torch.tensor(polygon_owner)[polygon], start, stop, height * width)
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
    found = _intervals(segmentations, height, width)
    if found is None:
        shape = (width, height) if transposed else (height, width)
        return torch.zeros(len(segmentations), *shape, dtype=torch.bool, device=device)
    return intervals_to_masks(*found, len(segmentations), height, width, False, transposed, device)


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
    found = _intervals(segmentations, height, width)
    if found is None:
        none = torch.zeros(0, dtype=torch.int64)
        return RowBands.from_runs(none, none, none, len(segmentations), width, height)
    return intervals_to_bands(*found, len(segmentations), height, width)
