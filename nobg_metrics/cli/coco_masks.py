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

from nobg_metrics.cli.coco_polygons import BadPolygon, polygon_masks
from nobg_metrics.cli.coco_rle import MalformedRle, counts_to_masks, decode_strings


class SegmentationError(ValueError):
    """A segmentation that cannot be read; ``index`` is its position in the call, ``reason`` what is wrong."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"segmentation {index}: {reason}")
        self.index, self.reason = index, reason


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


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


def segmentation_masks(segmentations: Sequence[object], height: int, width: int) -> Tensor:
    """The masks of ``N`` segmentations of one ``height x width`` image, read as pycocotools reads them.

    Polygons of all segmentations are drawn together, compressed strings decoded together, uncompressed counts
    filled together.

    Args:
        segmentations: ``N`` JSON values: polygon lists, or RLE dicts with list or string ``counts``.
        height, width: the image's size (``images[i]["height"]``, ``["width"]``).

    Returns:
        ``(N, height, width)`` bool.

    Raises:
        SegmentationError: a form pycocotools cannot read, a malformed RLE or polygon, an RLE of another size.

    Example:
        >>> square = [[0.5, 0.5, 2.5, 0.5, 2.5, 2.5, 0.5, 2.5]]
        >>> masks = segmentation_masks([square, {"size": [3, 3], "counts": [0, 9]}], 3, 3)
        >>> masks.sum((1, 2)).tolist()
        [4, 9]
    """
    out = torch.zeros(len(segmentations), height, width, dtype=torch.bool)
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
                    raise SegmentationError(index, "uncompressed RLE counts must be integers >= 0")
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
    try:
        if strings:
            counts, lengths = decode_strings(strings)
            out[torch.tensor(string_owner)] = counts_to_masks(counts, lengths, height, width)
    except MalformedRle as error:
        raise SegmentationError(string_owner[error.index], f"malformed RLE: {error.reason}") from None
    try:
        if lists:
            counts, lengths = torch.tensor(lists, dtype=torch.int64), torch.tensor(list_lengths)
            out[torch.tensor(list_owner)] = counts_to_masks(counts, lengths, height, width)
    except MalformedRle as error:
        raise SegmentationError(list_owner[error.index], f"malformed RLE: {error.reason}") from None
    if polygons:
        try:
            drawn = polygon_masks(polygons, height, width)
        except BadPolygon as error:
            raise SegmentationError(polygon_owner[error.index], error.reason) from None
        _merge_into(out, drawn, torch.tensor(polygon_owner))
    return out


def _merge_into(out: Tensor, drawn: Tensor, owner: Tensor) -> None:
    """``out[owner[i]] |= drawn[i]`` (pycocotools ``merge``: the union of an object's parts), ``owner``
    non-decreasing: one vectorised round per part number, as many rounds as the object with most parts has."""
    first = torch.ones_like(owner, dtype=torch.bool)
    first[1:] = owner[1:] != owner[:-1]
    start = torch.cummax(torch.where(first, torch.arange(owner.numel()), 0), 0).values
    part = torch.arange(owner.numel()) - start
    for rank in range(int(part.max()) + 1):  # bounded by the most parts of one object
        pick = part == rank
        out[owner[pick]] |= drawn[pick]
