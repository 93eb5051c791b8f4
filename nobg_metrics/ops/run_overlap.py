"""Pixel counts of masks given as runs, without drawing them: areas and the intersections of chosen pairs.

A mask given as runs ``[start, stop)`` of flat positions (sorted, not overlapping) has a cumulative count
``F(p)`` = its pixels before position ``p``, piecewise linear between its run starts. The intersection of two masks
is the sum, over the runs of one, of ``F(stop) - F(start)`` of the other (pycocotools' ``rleIou`` walks the two
run lists together; here every pair of a batch is counted at once). The second masks of all pairs share one
sorted array of run starts, each mask's shifted by ``mask * (pixels + 1)``; a position is looked up in it with one
:func:`torch.searchsorted`, and ``F`` is the running total of the run lengths before that run plus the part of the
run itself that lies before the position. A position before every run of its mask finds the last run of the
mask before it, and the whole of that run lies before the position: the running total at the mask's first run,
which cancels in ``F(stop) - F(start)``. Every count is an exact integer.
"""

from __future__ import annotations

import torch
from torch import Tensor


def run_areas(owner: Tensor, start: Tensor, stop: Tensor, n: int) -> Tensor:
    """Pixels of each of ``n`` masks: the summed lengths of its runs, :math:`(n,)` int64.

    Examples:
        >>> run_areas(torch.tensor([0, 0, 2]), torch.tensor([1, 5, 0]), torch.tensor([3, 6, 4]), 3).tolist()
        [3, 0, 4]
    """
    return torch.zeros(n, dtype=torch.int64).index_add_(0, owner, stop - start)


def run_intersections(first: tuple[Tensor, Tensor, Tensor], second: tuple[Tensor, Tensor, Tensor],
                      pair_first: Tensor, pair_second: Tensor, pixels: int,
                      window: tuple[Tensor, Tensor] | None = None) -> Tensor:
    """Pixels shared by the masks of each pair, from their runs (module notes).

    Of each pair, the mask with fewer runs in the pair's window is the one whose runs are looked up in the other.

    Args:
        first, second: runs ``(owner, start, stop)`` of two sets of masks, :math:`(K,)` int64 each, sorted by
            ``(owner, start)``, non-empty and not overlapping within a mask; ``0 <= start < stop <= pixels``.
        pair_first, pair_second: :math:`(P,)` int64, the masks of each pair (owners in ``first`` / ``second``).
        pixels: the positions per mask (``H * W``).
        window: :math:`(P,)` int64 positions ``[lo, hi)`` outside which the masks of a pair share nothing (e.g.
            the rows both occupy); ``None``: everywhere.

    Returns:
        :math:`(P,)` int64, the intersection of each pair.

    Examples:
        >>> a = (torch.tensor([0, 0]), torch.tensor([0, 6]), torch.tensor([4, 9]))
        >>> b = (torch.tensor([0, 1]), torch.tensor([2, 0]), torch.tensor([7, 10]))
        >>> run_intersections(a, b, torch.tensor([0, 0]), torch.tensor([0, 1]), 10).tolist()
        [3, 7]
        >>> run_intersections(a, b, torch.tensor([0, 0]), torch.tensor([0, 1]), 10,
        ...                   (torch.tensor([2, 0]), torch.tensor([7, 9]))).tolist()
        [3, 7]
    """
    pairs = pair_first.numel()
    out = torch.zeros(pairs, dtype=torch.int64)
    if pairs == 0:
        return out
    stride = pixels + 1
    lo, hi = window if window is not None else (torch.zeros(pairs, dtype=torch.int64),
                                                 torch.full((pairs,), pixels, dtype=torch.int64))
    axes = [_Axis(*runs, stride) for runs in (first, second)]
    ranges = [axis.window(masks, lo, hi) for axis, masks in zip(axes, (pair_first, pair_second))]
    from_first = ranges[0][1] <= ranges[1][1]  # look up the side with fewer runs
    for side, chosen in ((0, from_first), (1, ~from_first)):
        index = torch.nonzero(chosen).flatten()
        if index.numel():
            run_first, count = ranges[side][0][index], ranges[side][1][index]
            own, other = (pair_first[index], pair_second[index]) if side == 0 else (pair_second[index],
                                                                                   pair_first[index])
            out[index] = axes[1 - side].shared(axes[side], run_first, count, own, other)
    return out


class _Axis:
    """The runs of a set of masks on one sorted axis: mask ``o``'s positions shifted by ``o * stride``, led by a run
    of length 0 before everything (module notes). ``F`` at ``p`` is ``min(p + offset[i], after[i])`` with ``i`` the
    count of run starts at or before ``p`` (the lead's included): ``offset = before - key`` and ``after = before +
    length`` of the run found, both stored one place on (two leading zeros: the lead run's ``F`` is 0)."""

    def __init__(self, owner: Tensor, start: Tensor, stop: Tensor, stride: int) -> None:
        runs = owner.numel()
        self.stride = stride
        padded = torch.empty(runs + 3, dtype=torch.int64)  # two past the end, after every position: probes
        padded[0], padded[-2:] = -1, torch.iinfo(torch.int64).max
        torch.mul(owner, stride, out=padded[1:-2]).add_(start)
        self.keys, self.probe, self.probe_next = padded[:-2], padded, padded[1:]
        self.lengths = torch.empty(runs + 1, dtype=torch.int64)  # (empty, not zeros: a pass saved; leads set)
        self.after = torch.empty(runs + 2, dtype=torch.int64)
        self.offset = torch.empty(runs + 2, dtype=torch.int64)
        self.lengths[0], self.after[:2], self.offset[:2] = 0, 0, 0
        torch.sub(stop, start, out=self.lengths[1:])
        torch.cumsum(self.lengths[1:], 0, out=self.after[2:])
        torch.sub(self.after[2:], self.lengths[1:], out=self.offset[2:]).sub_(self.keys[1:])

    def window(self, masks: Tensor, lo: Tensor, hi: Tensor) -> tuple[Tensor, Tensor]:
        """The first run of each mask that ends after ``lo`` and how many of its runs start before ``hi``."""
        base = masks * self.stride
        low = base + lo
        found = torch.searchsorted(self.keys, low, right=True)  # the last run starting at or before lo, + 2
        reach = self.after.index_select(0, found) - self.offset.index_select(0, found)  # that run's end
        first = found - 1 - (reach > low).long()  # + 1 unless it reaches past lo
        last = torch.searchsorted(self.keys, base + hi) - 1
        return first, (last - first).clamp_(min=0)

    def cumulative(self, positions: Tensor, at: Tensor | None = None) -> Tensor:
        """``F`` at each position: the run lengths before the last run starting at or before it, plus the part
        of that run before it (``at``: the count of run starts at or before each position, if known)."""
        if at is None:
            at = torch.searchsorted(self.keys, positions, right=True)
        return torch.minimum(positions + self.offset.index_select(0, at), self.after.index_select(0, at))

    def counted_on(self, at: Tensor, positions: Tensor) -> Tensor:
        """The count of run starts at or before each position, known to be ``at`` or more for each: most runs
        looked up end before the second run start after their start, so two probes, then a search for the
        rest."""
        beyond = self.probe_next.index_select(0, at) <= positions
        found = at + (self.probe.index_select(0, at) <= positions) + beyond
        far = torch.nonzero(beyond).flatten()
        if far.numel():
            found.index_copy_(0, far, torch.searchsorted(self.keys, positions.index_select(0, far), right=True))
        return found

    def shared(self, queries: Tensor | _Axis, run_first: Tensor, count: Tensor, own: Tensor, masks: Tensor
               ) -> Tensor:
        """Per pair: the pixels of mask ``masks[i]`` of this axis inside runs ``run_first[i] ..
        run_first[i] + count[i] - 1`` of the ``queries`` axis (runs of its mask ``own[i]``)."""
        assert isinstance(queries, _Axis)
        pairs = count.numel()
        total = int(count.sum())
        if total == 0:
            return torch.zeros(pairs, dtype=torch.int64)
        pair = torch.repeat_interleave(torch.arange(pairs), count, output_size=total)
        run = torch.arange(1, total + 1).add_((run_first - (torch.cumsum(count, 0) - count)).index_select(0, pair))
        start = queries.keys.index_select(0, run).add_(((masks - own) * self.stride).index_select(0, pair))
        stop = queries.lengths.index_select(0, run).add_(start)
        at = torch.searchsorted(self.keys, start, right=True)
        inside = self.cumulative(stop, self.counted_on(at, stop)).sub_(self.cumulative(start, at))
        return torch.zeros(pairs, dtype=torch.int64).index_add_(0, pair, inside)
