"""Open Douglas–Peucker simplification of many polylines at once, point for point
``cv2.approxPolyDP(curve, epsilon, closed=False)``.

Reference (OpenCV 4.14 ``modules/imgproc/src/approx.cpp``, ``approxPolyDP_``), for integer points, with
``eps2 = epsilon²``:

1. An open curve whose first and last points differ starts as the slice ``(0, n-1)``; one whose first and
   last points coincide is handled as closed: ``j*`` = the first point (strict ``>``) farthest from point
   0 in squared distance; if that distance is ``<= eps2`` only point 0 is written, else the slices
   ``(0, j*)`` and ``(j*, n-1)`` follow and the last point is not written.
2. A slice ``(a, c)`` with interior points is split at its *first* interior point (strict ``>``) of largest
   ``D`` — the squared distance to the *segment* ``ac`` times ``|ac|²``: ``|p-a|²·|ac|²`` where the
   projection is before ``a``, ``|p-c|²·|ac|²`` where it is past ``c``, else ``cross(p-a, ac)²`` — unless
   ``max D <= eps2 · |ac|²``. A slice is written as its start point; the curve's last point closes it.
   (The stack order only orders the output; the set of slices is the recursion's.)
3. Clean-up of the written points ``q``: ``q[m]`` (``1 <= m <= len-2``) is *removable* when, with
   ``(a, b, c) = (q[m-1], q[m], q[m+1])``, ``cross(b-a, c-a)² <= (0.5·eps2)·|c-a|²``, ``c-a`` has both
   coordinates non-zero, and ``(b-a)·(c-b) >= 0``. OpenCV scans left to right and, after removing
   ``q[m]``, keeps ``q[m+1]`` without testing it, so the next triple is again three *consecutive written*
   points: ``removed[m] = removable[m] and not removed[m-1]`` — in each maximal stretch of removable
   points the 1st, 3rd, 5th, ... go.

Two forms, one switch (``engine`` of :func:`approx_poly_dp_open`, :data:`~nobg_metrics.ops.host_reads.Engine`):

- ``"data_sized"`` (this module): vectorised by levels — every unsettled slice of every polyline is split at once
  (segment maxima by ``scatter_reduce``), until no slice splits; float64 evaluated in OpenCV's order of operations.
  Host reads: one per level (the loop's stop test) and data-sized index lists.
- ``"fixed"`` (:mod:`nobg_metrics.ops.polyline_fixed`): the same levels on the padded list as it is, a fixed number
  of them (``levels``, default :data:`DP_LEVELS`) and one more as a test that flags the polylines they were too few
  for (``exhausted``). No host read.

``"auto"`` picks ``"data_sized"`` where host reads are free (CPU), else ``"fixed"``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.polyline_fixed import keep_fixed

__all__ = ["DP_LEVELS", "approx_poly_dp_open"]

DP_LEVELS = 32
"""Douglas–Peucker levels of the ``"fixed"`` form (each splits every unfinished slice of every polyline). Every level
splits every unfinished slice, so a polyline of n points needs at most n − 2 levels — no small bound holds in general
(the recursion depth is data-dependent). Measured need: at most 7 on the 1024² benchmark pairs (model-like and
degraded predictions), 17 on a 1024² wave-edged half plane; a 1024² spiral of 2-px wire traced as one run needs
~800 (docs/hce.md)."""


def approx_poly_dp_open(points: Tensor, first: Tensor, epsilon: float, *, real: Tensor | None = None,
                        engine: host_reads.Engine = "auto", levels: int | None = None) -> tuple[Tensor, Tensor]:
    """Which points ``cv2.approxPolyDP(curve, epsilon, False)`` keeps, for polylines laid end to end.

    Args:
        points: :math:`(S, 2)` integer ``(x, y)`` points of all polylines, one after the other.
        first: :math:`(S,)` bool, True at the first point of each polyline (a polyline runs to the next True).
            Consecutive points of a polyline must differ (a slice whose ends coincide makes OpenCV assert),
            except that the first and last may coincide.
        epsilon: the tolerance, ``>= 0``.
        real: :math:`(S,)` bool, False on padding entries (default: none). Padding belongs to no polyline and keeps
            nothing; a real entry right after a padding entry must start a polyline.
        engine: ``"data_sized"`` (host reads), ``"fixed"`` (no host read) or ``"auto"`` (``"data_sized"`` where host
            reads are free, else ``"fixed"``); see the module notes.
        levels: the ``"fixed"`` form's Douglas–Peucker levels before its test (default :data:`DP_LEVELS`).

    Returns:
        ``(keep, exhausted)``, :math:`(S,)` bool each. ``keep``: the kept points; in order they are OpenCV's output
        (``keep`` summed per polyline is ``len(cv2.approxPolyDP(...))``). ``exhausted``: ``"fixed"`` only, True at
        the start of every slice that would still split after ``levels`` levels (then ``keep`` is not OpenCV's for
        that polyline); all False from ``"data_sized"``, which runs to the end.

    Raises:
        ValueError: ``epsilon`` out of range, ``points`` not :math:`(S, 2)`; on ``"data_sized"`` also a first real
            point that does not start a polyline.

    Examples:
        >>> curve = torch.tensor([[0, 0], [1, 0], [2, 0], [3, 1], [4, 5], [5, 5]])
        >>> first = torch.tensor([True, False, False, False, False, False])
        >>> keep, exhausted = approx_poly_dp_open(curve, first, 1.0)
        >>> keep.int().tolist(), bool(exhausted.any())
        ([1, 0, 1, 0, 0, 1], False)
        >>> torch.equal(approx_poly_dp_open(curve, first, 1.0, engine="fixed")[0], keep)
        True
    """
    if epsilon < 0 or not epsilon < 1e30:
        raise ValueError(f"`epsilon` must be in [0, 1e30), got {epsilon}")
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"`points` must have shape (N, 2), got {tuple(points.shape)}")
    if first.shape != points.shape[:1] or (real is not None and real.shape != first.shape):
        raise ValueError(f"`first` and `real` must have shape ({points.shape[0]},), got {tuple(first.shape)} and "
                         f"{None if real is None else tuple(real.shape)}")
    pts = points.to(torch.int64)
    if points.shape[0] == 0:
        return torch.zeros_like(first), torch.zeros_like(first)
    if host_reads.resolve_engine(engine, points) == "fixed":
        real = torch.ones_like(first) if real is None else real
        return keep_fixed(pts, first | ~real, real, epsilon, DP_LEVELS if levels is None else levels)
    if real is None:
        return _keep_data_sized(pts, first, epsilon), torch.zeros_like(first)
    index = torch.nonzero(real).squeeze(1)  # data-sized: the real entries
    kept = _keep_data_sized(pts.index_select(0, index), first.index_select(0, index), epsilon)
    return torch.zeros_like(first).index_put((index,), kept), torch.zeros_like(first)


def _keep_data_sized(pts: Tensor, starts: Tensor, epsilon: float) -> Tensor:
    """The ``"data_sized"`` form on unpadded polylines (``starts``: :math:`(N,)` bool, True at each first point)."""
    device = pts.device
    count = pts.shape[0]
    if count == 0:
        return torch.zeros(0, dtype=torch.bool, device=device)
    if not bool(starts[0]):
        raise ValueError("`first` must be True at the first real point (every point must belong to a polyline)")
    eps2 = float(epsilon) * float(epsilon)
    first = torch.nonzero(starts).squeeze(1)
    lengths = torch.diff(first, append=first.new_full((1,), count))
    last = first + lengths - 1
    coincide = (pts[first] == pts[last]).all(dim=1)  # includes single points

    breaks = torch.zeros(count, dtype=torch.bool, device=device)
    breaks[first] = True
    breaks[last] = True
    written_last = torch.ones(lengths.numel(), dtype=torch.bool, device=device)
    settled = breaks.clone()  # points no slice split can reach

    # 1. first == last (n >= 2): the closed start, one pass of "farthest from point 0"
    closed = torch.nonzero(coincide & (lengths > 1)).flatten()
    if closed.numel():
        written_last[closed] = False
        run_of = torch.repeat_interleave(torch.arange(closed.numel(), device=device), lengths[closed] - 1)
        idx = torch.repeat_interleave(first[closed] + 1, lengths[closed] - 1)
        idx = idx + torch.arange(idx.numel(), device=device) - torch.repeat_interleave(
            torch.cumsum(lengths[closed] - 1, 0) - (lengths[closed] - 1), lengths[closed] - 1)
        delta = pts[idx] - pts[first[closed]][run_of]
        dist = (delta[:, 0] * delta[:, 0] + delta[:, 1] * delta[:, 1]).double()
        best = torch.zeros(closed.numel(), dtype=torch.float64, device=device)
        best = best.scatter_reduce(0, run_of, dist, "amax")
        far = torch.full((closed.numel(),), count, dtype=torch.int64, device=device)
        far = far.scatter_reduce(0, run_of, torch.where(dist == best[run_of], idx, count), "amin")
        split = best > eps2
        breaks[far[split]] = True
        # not split: only point 0 is written, nothing inside is ever split
        settled[idx[(~split)[run_of]]] = True

    # 2. split every slice with interior points, level by level
    active = torch.nonzero(~breaks & ~settled).flatten()  # interior points of unsettled slices
    while active.numel():
        break_index = torch.nonzero(breaks).flatten()
        slice_of = torch.searchsorted(break_index, active, right=True) - 1  # slice (break_index[s], [s+1])
        start, end = break_index[slice_of], break_index[slice_of + 1]
        measure, thresholds = _distance_times_length(pts, active, start, end, eps2)
        slices = break_index.numel()
        best = torch.zeros(slices, dtype=torch.float64, device=device).scatter_reduce(0, slice_of, measure, "amax")
        far = torch.full((slices,), count, dtype=torch.int64, device=device).scatter_reduce(
            0, slice_of, torch.where(measure == best[slice_of], active, count), "amin")
        limit = torch.zeros(slices, dtype=torch.float64, device=device).scatter_reduce(
            0, slice_of, thresholds, "amax")
        split = (best > limit) & (far < count)
        if not bool(split.any()):
            break
        breaks[far[split]] = True
        active = active[split[slice_of] & ~breaks[active]]

    keep = breaks.clone()
    keep[last[~written_last]] = False
    keep[first] = True
    return keep & ~_cleanup_removed(pts, keep, first, last, eps2)


def _distance_times_length(pts: Tensor, p: Tensor, a: Tensor, c: Tensor, eps2: float) -> tuple[Tensor, Tensor]:
    """OpenCV's ``dist_2_mul_segment_len_2`` of points ``p`` for slices ``(a, c)`` and ``eps2 · |ac|²``."""
    ax, ay, cx, cy, x, y = pts[a, 0], pts[a, 1], pts[c, 0], pts[c, 1], pts[p, 0], pts[p, 1]
    dx, dy = (cx - ax).double(), (cy - ay).double()
    length2 = dx * dx + dy * dy
    projection = (x - ax).double() * dx + (y - ay).double() * dy
    before = ((x - ax) * (x - ax) + (y - ay) * (y - ay)).double() * length2
    after = ((x - cx) * (x - cx) + (y - cy) * (y - cy)).double() * length2
    cross = (y - ay).double() * dx - (x - ax).double() * dy
    measure = torch.where(projection < 0, before, torch.where(projection > length2, after, cross * cross))
    return measure, eps2 * length2


def _cleanup_removed(pts: Tensor, keep: Tensor, first: Tensor, last: Tensor, eps2: float) -> Tensor:
    """OpenCV's last stage on the written points: which of them it drops (see the module docstring, 3.)."""
    count = pts.shape[0]
    written = torch.nonzero(keep).flatten()
    run = torch.searchsorted(first, written, right=True) - 1
    index_in_run = torch.arange(written.numel(), device=pts.device) - torch.searchsorted(run, run)
    written_count = torch.bincount(run, minlength=first.numel())
    removed = torch.zeros(count, dtype=torch.bool, device=pts.device)
    inner = (index_in_run >= 1) & (index_in_run <= written_count[run] - 2) & (written_count[run] > 2)
    m = torch.nonzero(inner).flatten()
    if m.numel() == 0:
        return removed
    a, b, c = pts[written[m - 1]], pts[written[m]], pts[written[m + 1]]
    dx, dy = (c[:, 0] - a[:, 0]).double(), (c[:, 1] - a[:, 1]).double()
    dist = ((b[:, 0] - a[:, 0]).double() * dy - (b[:, 1] - a[:, 1]).double() * dx).abs()
    successive = ((b[:, 0] - a[:, 0]) * (c[:, 0] - b[:, 0]) + (b[:, 1] - a[:, 1]) * (c[:, 1] - b[:, 1]))
    removable_m = (dist * dist <= (0.5 * eps2) * (dx * dx + dy * dy)) & (dx != 0) & (dy != 0) & (successive >= 0)
    removable = torch.zeros(written.numel(), dtype=torch.bool, device=pts.device)
    removable[m] = removable_m
    # 1st, 3rd, ... of each maximal stretch of removable points
    positions = torch.arange(written.numel(), device=pts.device)
    stretch_start = torch.cummax(torch.where(removable, -1, positions), 0).values + 1
    drop = removable & ((positions - stretch_start) % 2 == 0)
    removed[written[drop]] = True
    return removed
