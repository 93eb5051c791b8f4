"""The HCE region effort with no host sync: kept points, runs, the first/last-run merge and Douglas–Peucker
on padded lists whose sizes come from the frame (B, H, W) only.

The same procedure as :func:`nobg_metrics.functional.hce_regions.region_effort` and
:func:`nobg_metrics.ops.polyline.approx_poly_dp_open` (OpenCV 4.14 ``approxPolyDP_``; read those first), on
the list of :func:`nobg_metrics.ops.contours_fixed.trace_contours_fixed` (``S = 8 B (H+2) (W+2)`` entries,
the real points first; the polylines then fit in ``B H W`` slots, a pixel being kept at most once). What
changes:

- lists keep their length ``S``: a dropped entry is masked (``real``), never removed; a compaction is a
  scatter to ``cumsum`` positions; per-run and per-contour tables have ``S + 1`` slots (the last a sink);
- "the previous / next break of a polyline" is a running ``cummax`` / reversed ``cummin`` of break indices;
- Douglas–Peucker runs a fixed number of levels, ``dp_levels``. Every level splits every unfinished slice, so
  a polyline of n points needs at most n − 2 levels — no small bound holds in general (the recursion depth
  of Douglas–Peucker is data-dependent). After the budget one more level is evaluated as a test: a slice that
  would still split flags its image (``exhausted``). :data:`DP_LEVELS` is far above what real boundaries
  need (measured: docs/hce.md, "Without host syncs").

Host reads: none.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops.contours_fixed import trace_contours_fixed

DP_LEVELS = 32
"""Douglas–Peucker levels of the sync-free path (each splits every unfinished slice of every polyline).
Measured need: at most 7 on the 1024² benchmark pairs (model-like and degraded predictions), 17 on a 1024²
wave-edged half plane; a 1024² spiral of 2-px wire traced as one run needs ~800 (docs/hce.md)."""


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


def approx_poly_dp_fixed(points: Tensor, first: Tensor, real: Tensor, epsilon: float,
                         levels: int = DP_LEVELS) -> tuple[Tensor, Tensor]:
    """:func:`~nobg_metrics.ops.polyline.approx_poly_dp_open` on a padded list, in ``levels`` fixed levels.

    Args:
        points: :math:`(S, 2)` int64 ``(x, y)``, polylines laid end to end.
        first: :math:`(S,)` bool, True where a polyline starts (True on every padding entry).
        real: :math:`(S,)` bool, False on padding.
        epsilon: the tolerance; levels: Douglas–Peucker levels before the test.

    Returns:
        ``(keep, exhausted)``: :math:`(S,)` bool each; ``exhausted`` marks the start of every slice that would
        still split after ``levels`` levels (then ``keep`` is not OpenCV's for that polyline).

    Example:
        >>> curve = torch.tensor([[0, 0], [1, 0], [2, 0], [3, 1], [4, 5], [5, 5]])
        >>> first = torch.tensor([True, False, False, False, False, False])
        >>> keep, exhausted = approx_poly_dp_fixed(curve, first, torch.ones(6, dtype=torch.bool), 1.0)
        >>> keep.int().tolist(), bool(exhausted.any())
        ([1, 0, 1, 0, 0, 1], False)
    """
    size = points.shape[0]
    device = points.device
    eps2 = float(epsilon) * float(epsilon)
    pts = points.to(torch.int64)
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


def region_effort_fixed(region: Tensor, condition: Tensor, epsilon: float, dis_flags: bool = False,
                        levels: int = DP_LEVELS) -> tuple[Tensor, Tensor]:
    """:func:`~nobg_metrics.functional.hce_regions.region_effort` with no host read.

    Args:
        region: :math:`(B, H, W)` bool; condition: :math:`(B, H, W)` bool (already dilated).
        epsilon: Douglas–Peucker tolerance; dis_flags: the DIS tool's flag sizing; levels: DP levels.

    Returns:
        ``(effort, exhausted)``: :math:`(B,)` int64 and :math:`(B,)` bool (the DP budget was short there).

    Example:
        >>> region = torch.zeros(1, 9, 9, dtype=torch.bool); region[0, 2:7, 2:7] = True
        >>> condition = torch.zeros_like(region); condition[0, :, :5] = True
        >>> region_effort_fixed(region, condition, 2.0)  # == region_effort(region, condition, 2.0)
        (tensor([3]), tensor([False]))
    """
    count, height, width = region.shape
    device = region.device
    found = trace_contours_fixed(region)
    size = found.real.numel()
    index = torch.arange(size, device=device)
    pixel = torch.where(found.real, (found.image * height + found.y) * width + found.x, count * height * width)
    # kept = condition & first occurrence of the pixel over the image's contour list
    first_seen = torch.full((count * height * width + 1,), size, dtype=torch.int64, device=device)
    first_seen = first_seen.scatter_reduce(0, pixel, index, "amin")
    condition_flat = torch.cat([condition.reshape(-1), condition.new_zeros(1)])
    kept = found.real & condition_flat[pixel] & (first_seen[pixel] == index)
    # independent regions: components with no kept point (the first kept point of each component counts it)
    component = torch.where(kept, found.component, 0)
    first_kept = torch.full((int(component.numel()) + 1,), size, dtype=torch.int64, device=device)
    first_kept = first_kept.scatter_reduce(0, component.clamp(max=size), index, "amin")
    touches = kept & (first_kept[component.clamp(max=size)] == index)
    touched = torch.zeros(count + 1, dtype=torch.int64, device=device).index_add(0, found.image, touches.long())
    independent = found.components - touched[:count]
    if dis_flags:
        independent = torch.where(region.flatten(1).all(dim=1), 0, independent)
    # runs of consecutive kept points within a contour; per contour its first and last run
    same_contour = torch.cat([kept.new_zeros(1), found.contour[1:] == found.contour[:-1]])
    previous_kept = torch.cat([kept.new_zeros(1), kept[:-1]])
    run_of = torch.cumsum(kept & (~previous_kept | ~same_contour), 0) - 1
    contour_of = torch.cumsum(found.real & ~same_contour, 0) - 1
    slot = torch.where(kept, contour_of, size)
    first_index = torch.full((size + 1,), size, dtype=torch.int64, device=device).scatter_reduce(0, slot, index, "amin")
    last_index = torch.full((size + 1,), -1, dtype=torch.int64, device=device).scatter_reduce(0, slot, index, "amax")
    first_index, last_index = first_index.clamp(max=size - 1), last_index.clamp(min=0)
    first_run, last_run = run_of[first_index], run_of[last_index]
    gap = torch.maximum((found.x[first_index] - found.x[last_index]).abs(),
                        (found.y[first_index] - found.y[last_index]).abs())
    merge = (last_run > first_run) & (gap == 1)  # >= 2 runs, ends 8-adjacent (contours with no kept point: equal)
    run_length = torch.zeros(size + 1, dtype=torch.int64, device=device).index_add(
        0, torch.where(kept, run_of, size), torch.ones(size, dtype=torch.int64, device=device))
    # compaction, with a merged contour's first run moved, reversed, after its last run
    rank = torch.cumsum(kept, 0) - 1
    c = contour_of.clamp(0, size)
    moved = kept & merge[c] & (run_of == first_run[c])
    block_start, block_end = rank[first_index][c], rank[last_index][c]
    target = torch.where(moved, block_end - (rank - block_start),
                         torch.where(merge[c], rank - run_length[first_run[c]], rank))
    # a pixel is kept at most once (its first occurrence): the polylines fit in B·H·W slots
    slots = count * height * width
    target = torch.where(kept, target, slots)
    polyline = torch.where(moved, last_run[c], run_of)

    def placed(values: Tensor, fill: int) -> Tensor:
        return torch.full((slots + 1,), fill, dtype=values.dtype, device=device).scatter(0, target, values)[:slots]

    real = torch.arange(slots, device=device) < kept.sum()
    points = torch.stack([placed(found.x, 0), placed(found.y, 0)], dim=1)
    line = placed(polyline, -1)
    image = torch.where(real, placed(found.image, count), count)
    first = ~real | torch.cat([real.new_ones(1), line[1:] != line[:-1]])
    keep, exhausted = approx_poly_dp_fixed(points, first, real, epsilon, levels)
    control = torch.zeros(count + 1, dtype=torch.int64, device=device).index_add(0, image, keep.long())[:count]
    short = torch.zeros(count + 1, dtype=torch.int64, device=device).index_add(0, image, exhausted.long())[:count]
    return control + independent, short > 0
