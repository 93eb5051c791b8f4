"""Masks drawn from column-major pixel intervals: the last step of every COCO segmentation form (RLE runs,
polygon insides) in ``nobg-metrics instances``.

A COCO mask is read in column-major order (``position = col * h + row``); its foreground is a set of intervals
``[start, stop)`` of positions. :func:`intervals_to_masks` draws the intervals of many masks with one difference
array (+1 at a start, -1 at a stop) and one cumulative sum, on any device; :func:`union_intervals` first merges
the intervals of a mask that overlap (the parts of one object, pycocotools ``merge``), so that the sum is 0 or 1
everywhere and the int8 bytes are the bool mask.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops.row_bands import RowBands


def union_intervals(rows: Tensor, starts: Tensor, stops: Tensor, pixels: int) -> tuple[Tensor, Tensor, Tensor]:
    """Overlapping intervals of a row merged: the union as intervals that overlap nowhere (they may touch).

    Sorted by ``(row, start)``, an interval opens a new group unless it starts before the furthest stop so far in
    its row (a running maximum of ``row * (pixels + 1) + stop``: rows never mix); a group is its first start and
    its furthest stop.

    Examples:
        >>> [t.tolist() for t in union_intervals(torch.tensor([0, 0, 0, 1]), torch.tensor([5, 1, 2, 1]),
        ...                                      torch.tensor([6, 4, 3, 2]), 9)]
        [[0, 0, 1], [1, 5, 1], [4, 6, 2]]
    """
    if rows.numel() == 0:
        return rows, starts, stops
    stride = pixels + 1
    order = torch.argsort(rows * stride + starts)
    rows, starts, stops = rows[order], starts[order], stops[order]
    furthest = torch.cummax(rows * stride + stops, 0).values
    opens = torch.ones_like(rows, dtype=torch.bool)
    opens[1:] = rows[1:] * stride + starts[1:] >= furthest[:-1]  # touching or past: a new group
    last = torch.cat([torch.nonzero(opens).flatten()[1:] - 1, rows.new_full((1,), rows.numel() - 1)])
    return rows[opens], starts[opens], furthest[last] - rows[opens] * stride


def intervals_to_masks(rows: Tensor, starts: Tensor, stops: Tensor, n: int, height: int, width: int,
                       overlap: bool = False, transposed: bool = False,
                       device: torch.device | str | None = None) -> Tensor:
    """``(n, height, width)`` bool masks that are the union of column-major pixel intervals.

    Args:
        rows: ``(K,)`` int64, the mask each interval belongs to (``0 <= rows < n``).
        starts, stops: ``(K,)`` int64, intervals ``[start, stop)`` of column-major positions ``col * h + row``,
            ``0 <= start <= stop <= height * width``.
        n, height, width: the output's shape.
        overlap: intervals of one mask may overlap (they are merged first, :func:`union_intervals`).
        transposed: return the masks transposed, ``(n, width, height)``: the column-major layout as it is built,
            without the transposing copy (which costs more than building).
        device: where the masks are built (default: the CPU); only the intervals travel there.

    Returns:
        ``(n, height, width)`` bool (``(n, width, height)`` if ``transposed``), contiguous: one difference array
        (+1 at a start, -1 at a stop) and one cumulative sum for all masks.

    Examples:
        >>> intervals_to_masks(torch.tensor([0, 0]), torch.tensor([1, 2]), torch.tensor([3, 4]), 1, 2, 3,
        ...                    overlap=True).int().tolist()
        [[[0, 1, 0], [1, 1, 0]]]
    """
    pixels = height * width
    if overlap:
        rows, starts, stops = union_intervals(rows, starts, stops, pixels)
    device = torch.device("cpu") if device is None else torch.device(device)
    edges = torch.zeros(n * pixels + 1, dtype=torch.int8, device=device)
    offset = rows.to(device) * pixels
    ones = torch.ones(rows.numel(), dtype=torch.int8, device=device)
    edges.index_add_(0, offset + starts.to(device), ones)
    edges.index_add_(0, offset + stops.to(device), -ones)  # a stop of h*w: the next mask's first pixel
    inside = torch.cumsum(edges[:-1], 0, dtype=torch.int8).view(n, width, height)  # disjoint intervals: 0 or 1
    if transposed:
        return inside.view(torch.bool)  # the bytes are bools already
    return torch.empty(n, height, width, dtype=torch.bool, device=device).copy_(inside.transpose(1, 2))


def intervals_to_bands(rows: Tensor, starts: Tensor, stops: Tensor, n: int, height: int, width: int,
                       overlap: bool = False, ordered: bool = False) -> RowBands:
    """The masks of column-major pixel intervals as row bands of the **transposed** masks, ``(n, width, height)``:
    each mask's image columns ``[top, bottom)`` that hold a pixel, drawn alone (no full frame) when its pixels are
    first read; until then the bands hold the runs, sorted by mask and not overlapping
    (:meth:`~nobg_metrics.ops.row_bands.RowBands.from_runs`).

    Args: as :func:`intervals_to_masks` (CPU); ``ordered``: the intervals are known to be sorted by ``(row, start)``
    and non-empty (RLE runs as :func:`~nobg_metrics.io.coco.rle_text.decode_runs` gives them): not checked again.

    Returns:
        :class:`~nobg_metrics.ops.row_bands.RowBands` of shape ``(n, width, height)``; its
        :meth:`~nobg_metrics.ops.row_bands.RowBands.dense` equals
        ``intervals_to_masks(..., transposed=True)``.

    Examples:
        >>> bands = intervals_to_bands(torch.tensor([1, 1]), torch.tensor([4, 6]), torch.tensor([5, 8]), 2, 3, 4)
        >>> bands.tops, bands.bottoms, bands.rows.int().tolist()
        ([0, 1], [0, 3], [[0, 1, 0], [1, 1, 0], [0, 0, 0]])
    """
    if overlap:
        rows, starts, stops = union_intervals(rows, starts, stops, height * width)
    elif ordered:
        pass
    elif rows.numel() > 1 and bool((rows[1:] < rows[:-1]).any()):  # forms decoded one after the other: by mask
        order = torch.argsort(rows, stable=True)  # (each mask's runs are in order already)
        rows, starts, stops = rows[order], starts[order], stops[order]
    if not ordered and not bool((stops > starts).all()):
        some = torch.nonzero(stops > starts).flatten()
        rows, starts, stops = rows.index_select(0, some), starts.index_select(0, some), stops.index_select(0, some)
    return RowBands.from_runs(rows, starts, stops, n, width, height)
