"""The ``"fixed"`` form of :func:`nobg_metrics.ops.polyline.approx_poly_dp_open`: open Douglas–Peucker on a padded
list whose size comes from the caller's frame, in a fixed number of levels, with no host read.

The same procedure as the ``"data_sized"`` form in :mod:`nobg_metrics.ops.polyline` (OpenCV 4.14 ``approxPolyDP_``;
read that module first). What changes:

- the list keeps its length ``S``: padding entries are masked (``real``), never removed; per-slice tables have
  ``S + 1`` slots (the last a sink);
- "the previous / next break of a polyline" is a running ``cummax`` / reversed ``cummin`` of break indices;
- Douglas–Peucker runs a fixed number of levels, ``levels``. Every level splits every unfinished slice, so a
  polyline of n points needs at most n − 2 levels — no small bound holds in general (the recursion depth of
  Douglas–Peucker is data-dependent). After the budget one more level is evaluated as a test: a slice that would
  still split is flagged (``exhausted``).

Host reads: none.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _previous_index(flags: Tensor, strict: bool = False) -> Tensor:
    """Per entry, the index of the last True at or before it (strictly before if ``strict``); -1 if none."""
    index = torch.arange(flags.numel(), device=flags.device)
    last = torch.cummax(torch.where(flags, index, -1), 0).values
    return torch.cat([last.new_full((1,), -1), last[:-1]]) if strict else last


def _next_index(flags: Tensor, strict: bool = False) -> Tensor:
    """Per entry, the index of the first True at or after it (strictly after if ``strict``); ``S`` if none."""
    size = flags.numel()
    index = torch.arange(size, device=flags.device)
    first = torch.flip(torch.cummin(torch.flip(torch.where(flags, index, size), (0,)), 0).values, (0,))
    return torch.cat([first[1:], first.new_full((1,), size)]) if strict else first


def keep_fixed(pts: Tensor, first: Tensor, real: Tensor, epsilon: float, levels: int) -> tuple[Tensor, Tensor]:
    """The ``"fixed"`` form of :func:`~nobg_metrics.ops.polyline.approx_poly_dp_open` (call that): the padded list
    as it is, ``levels`` fixed levels and one more as the test.

    Args:
        pts: :math:`(S, 2)` int64 ``(x, y)``, polylines laid end to end.
        first: :math:`(S,)` bool, True where a polyline starts (True on every padding entry).
        real: :math:`(S,)` bool, False on padding.
        epsilon: the tolerance; levels: Douglas–Peucker levels before the test.

    Returns:
        ``(keep, exhausted)``: :math:`(S,)` bool each; ``exhausted`` marks the start of every slice that would
        still split after ``levels`` levels (then ``keep`` is not OpenCV's for that polyline).

    Examples:
        >>> curve = torch.tensor([[0, 0], [1, 0], [2, 0], [3, 1], [4, 5], [5, 5]])
        >>> first = torch.tensor([True, False, False, False, False, False])
        >>> keep, exhausted = keep_fixed(curve, first, torch.ones(6, dtype=torch.bool), 1.0, 32)
        >>> keep.int().tolist(), bool(exhausted.any())
        ([1, 0, 1, 0, 0, 1], False)
    """
    size = pts.shape[0]
    device = pts.device
    eps2 = float(epsilon) * float(epsilon)
    index = torch.arange(size, device=device)
    is_last = torch.cat([first[1:], first.new_ones(1)])
    first_of = _previous_index(first)
    last_of = _next_index(is_last)
    coincide = (pts[first_of] == pts[last_of]).all(dim=1) & (last_of > first_of) & real
    breaks = first | is_last
    settled = breaks | ~real
    # 1. ends coincide: split once at the first point farthest from point 0, or write point 0 only
    candidate = coincide & (index > first_of)
    delta = pts - pts[first_of]
    dist = (delta[:, 0] * delta[:, 0] + delta[:, 1] * delta[:, 1]).double()
    slot = torch.where(candidate, first_of, size)
    best = torch.zeros(size + 1, dtype=torch.float64, device=device).scatter_reduce(0, slot, dist, "amax")
    far = torch.full((size + 1,), size, dtype=torch.int64, device=device).scatter_reduce(
        0, torch.where(candidate & (dist == best[first_of]), first_of, size), index, "amin")
    split = (best[:size] > eps2) & coincide & first
    breaks = breaks | _marks(far[:size], split)
    settled = settled | (coincide & ~split[first_of])
    # 2. every unsettled slice split at once, level by level; the last round only tests
    exhausted = torch.zeros(size, dtype=torch.bool, device=device)
    xd, yd = pts[:, 0].double(), pts[:, 1].double()
    for level in range(levels + 1):
        active = ~breaks & ~settled
        start, end = _previous_index(breaks), _next_index(breaks)
        measure, thresholds = _measure(xd, yd, start.clamp(min=0), end.clamp(max=size - 1), eps2)
        slot = torch.where(active, start, size)
        best = torch.zeros(size + 1, dtype=torch.float64, device=device).scatter_reduce(0, slot, measure, "amax")
        far = torch.full((size + 1,), size, dtype=torch.int64, device=device).scatter_reduce(
            0, torch.where(active & (measure == best[start.clamp(min=0)]), start, size), index, "amin")
        limit = torch.zeros(size + 1, dtype=torch.float64, device=device).scatter_reduce(0, slot, thresholds, "amax")
        split = ((best > limit) & (far < size))[:size]
        if level == levels:
            exhausted = split
        else:
            breaks = breaks | _marks(far[:size], split)
    keep = (breaks & ~(coincide & is_last) | first) & real
    return keep & ~_cleanup_fixed(pts, keep, first_of, last_of, eps2), exhausted


def _measure(x: Tensor, y: Tensor, a: Tensor, c: Tensor, eps2: float) -> tuple[Tensor, Tensor]:
    """``polyline._distance_times_length`` of every point ``p`` for the slice ``(a[p], c[p])``, on float64
    coordinates: the same float64 operations in the same order; the integers it converts (coordinate
    differences, squared lengths) are exact in float64, so the values are bit for bit the same."""
    ax, ay, cx, cy = x[a], y[a], x[c], y[c]
    dx, dy = cx - ax, cy - ay
    px, py = x - ax, y - ay
    length2 = dx * dx + dy * dy
    projection = px * dx + py * dy
    before = (px * px + py * py) * length2
    qx, qy = x - cx, y - cy
    after = (qx * qx + qy * qy) * length2
    cross = py * dx - px * dy
    measure = torch.where(projection < 0, before, torch.where(projection > length2, after, cross * cross))
    return measure, eps2 * length2


def _marks(where: Tensor, flags: Tensor) -> Tensor:
    """(S,) bool: True at ``where[i]`` for every flagged ``i`` (a scatter into a sink slot for the rest)."""
    size = where.numel()
    marks = torch.zeros(size + 1, dtype=torch.bool, device=where.device)
    return marks.index_fill(0, torch.where(flags, where, size), True)[:size]


def _cleanup_fixed(pts: Tensor, keep: Tensor, first_of: Tensor, last_of: Tensor, eps2: float) -> Tensor:
    """OpenCV's last stage (``polyline._cleanup_removed``) on the written points of a padded list."""
    cumulative = torch.cumsum(keep, 0)
    position = cumulative - 1  # among the written points
    index_in_run = cumulative - cumulative[first_of]  # first points are written
    written_count = cumulative[last_of] - cumulative[first_of] + 1
    inner = keep & (index_in_run >= 1) & (index_in_run <= written_count - 2) & (written_count > 2)
    size = keep.numel()
    a = pts[_previous_index(keep, strict=True).clamp(min=0)]
    c = pts[_next_index(keep, strict=True).clamp(max=size - 1)]
    b = pts
    dx, dy = (c[:, 0] - a[:, 0]).double(), (c[:, 1] - a[:, 1]).double()
    dist = ((b[:, 0] - a[:, 0]).double() * dy - (b[:, 1] - a[:, 1]).double() * dx).abs()
    successive = (b[:, 0] - a[:, 0]) * (c[:, 0] - b[:, 0]) + (b[:, 1] - a[:, 1]) * (c[:, 1] - b[:, 1])
    removable = inner & (dist * dist <= (0.5 * eps2) * (dx * dx + dy * dy)) & (dx != 0) & (dy != 0) & (successive >= 0)
    # the 1st, 3rd, ... of each maximal stretch of removable written points
    stretch_start = torch.cummax(torch.where(keep & ~removable, position, -1), 0).values + 1
    return removable & ((position - stretch_start) % 2 == 0)
