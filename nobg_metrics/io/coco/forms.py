"""The segmentations of one image sorted by form, the compressed strings decoded with numpy: the torch-free first
half of reading masks (:func:`~nobg_metrics.io.coco.masks.forms_intervals` is the second).

``nobg-metrics instances`` runs this half in its reading process, which never loads torch, and hands the
:class:`Forms` of each image to the scoring process; read in one process, :mod:`~nobg_metrics.io.coco.masks` calls
both halves in turn. The forms and their checks are those of :mod:`~nobg_metrics.io.coco.masks` (pycocotools'
``annToRLE``): a list of polygons, an RLE with a list of counts, an RLE with a compressed string. Errors of form
(an RLE of another size, a polygon list pycocotools refuses, counts that are not integers) are raised here; strings
that :func:`~nobg_metrics.io.coco.rle_text.decode_runs` does not take are kept as they are, for the counts decoder of
the second half, which names their fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from nobg_metrics.io.coco.rle_text import ascii_strings, decode_runs
from nobg_metrics.io.errors import MalformedRle, SegmentationError


@dataclass
class Forms:
    """``count`` segmentations of one ``height x width`` image by form; owners are positions in the call.

    Attributes:
        string_runs: the compressed strings' foreground runs ``(owner, start, stop)``, numpy int64 (or int32, as
            a reading process sends them), sorted by ``(owner, start)`` (``None``: no string decoded here).
        strings, string_owner: compressed strings left to the counts decoder (not decoded here).
        lists, list_owner, list_lengths: uncompressed RLE counts, joined, and the owner and length of each RLE.
        polygons, polygon_owner: the polygons of every polygon list, and the segmentation of each.
        extents: where every segmentation is a decoded string, each mask's first and one-past-last image column
            and its pixel count, :math:`(N,)` int64 each (an empty mask: ``0, 0, 0``); else ``None``.
    """

    count: int
    height: int
    width: int
    string_runs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    strings: list[str | bytes] = field(default_factory=list)
    string_owner: list[int] = field(default_factory=list)
    lists: list[int] = field(default_factory=list)
    list_owner: list[int] = field(default_factory=list)
    list_lengths: list[int] = field(default_factory=list)
    polygons: list = field(default_factory=list)
    polygon_owner: list[int] = field(default_factory=list)
    extents: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


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


def split_forms(segmentations: Sequence[object], height: int, width: int) -> Forms:
    """``N`` JSON segmentations of one image sorted by form, the compressed strings decoded to runs.

    Args:
        segmentations: ``N`` JSON values: polygon lists, or RLE dicts with list or string ``counts``.
        height, width: the image's size.

    Returns:
        :class:`Forms`.

    Raises:
        SegmentationError: a form pycocotools cannot read, an RLE of another size (named by its position).

    Examples:
        >>> forms = split_forms([{"size": [2, 2], "counts": "13"}, [[0, 0, 1, 0, 1, 1]]], 2, 2)
        >>> [a.tolist() for a in forms.string_runs], forms.polygon_owner
        ([[0], [1], [4]], [1])
    """
    forms = Forms(len(segmentations), height, width)
    strings, string_owner = forms.strings, forms.string_owner
    for index, segmentation in enumerate(segmentations):  # sort the JSON values by form; decoding is batched
        if type(segmentation) is dict:  # the usual: a compressed string of the image's size (checked in full below)
            counts, size = segmentation.get("counts"), segmentation.get("size")
            if (type(counts) is str and type(size) is list and len(size) == 2 and type(size[0]) is int
                    and type(size[1]) is int and size[0] == height and size[1] == width):
                strings.append(counts)
                string_owner.append(index)
                continue
        if isinstance(segmentation, list):
            parts = _polygon_list(index, segmentation)
            forms.polygons.extend(parts)
            forms.polygon_owner.extend([index] * len(parts))
        elif isinstance(segmentation, dict) and "counts" in segmentation:
            _check_size(index, segmentation, height, width)
            counts = segmentation["counts"]
            if isinstance(counts, (str, bytes)):
                forms.strings.append(counts)
                forms.string_owner.append(index)
            elif isinstance(counts, list):
                if not all(_is_count(c) for c in counts):
                    raise SegmentationError(index, "uncompressed RLE counts must be integers in [0, 2^32)")
                forms.lists.extend(counts)
                forms.list_owner.append(index)
                forms.list_lengths.append(len(counts))
            else:
                raise SegmentationError(index, f"RLE 'counts' must be a string or a list of integers, got "
                                               f"{type(counts).__name__}")
        else:
            raise SegmentationError(index, "a segmentation must be a list of polygons or an RLE dict with 'size' "
                                           f"and 'counts', got {type(segmentation).__name__}"
                                           f"{' without counts' if isinstance(segmentation, dict) else ''}")
    if forms.strings:
        _decode_strings(forms)
    return forms


def _decode_strings(forms: Forms) -> None:
    """The compressed strings to runs where :func:`decode_runs` takes them all (else they stay for the counts
    decoder, which also reports a string that is not ASCII)."""
    try:
        encoded = ascii_strings(forms.strings)
    except MalformedRle:
        return
    found = decode_runs(encoded, forms.height * forms.width)
    if found is None:
        return
    owner, start, stop = found
    if len(forms.string_owner) != forms.count:  # owners are positions among all segmentations
        owner = np.asarray(forms.string_owner, dtype=np.int64)[owner]
    else:
        forms.extents = _extents(owner, start, stop, forms.count, forms.height)
    forms.string_runs = owner, start, stop
    forms.strings, forms.string_owner = [], []


def _extents(owner: np.ndarray, start: np.ndarray, stop: np.ndarray, count: int, height: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each mask's first and one-past-last column and pixel count, from its runs (sorted by ``(owner, start)``,
    non-empty): its first run's column, its last run's, the sum of its run lengths."""
    masks = np.arange(count)
    if owner.size == 0:  # every mask empty
        return np.zeros(count, np.int64), np.zeros(count, np.int64), np.zeros(count, np.int64)
    first, end = np.searchsorted(owner, masks), np.searchsorted(owner, masks, side="right")
    some = end > first
    lengths = np.concatenate([[0], np.cumsum(stop - start)])
    tops = np.where(some, start[np.minimum(first, owner.size - 1)] // height, 0)
    bottoms = np.where(some, (stop[np.maximum(end - 1, 0)] - 1) // height + 1, 0)
    return tops, bottoms, lengths[end] - lengths[first]

