"""Pixel counts of every (gt segment, predicted segment) pair of a batch of slot maps.

A batch of equal-size images is held as two *slot maps* (:class:`~nobg_metrics.functional.panoptic_segments.SegmentBatch`):
each pixel holds the index of its gt segment and of its predicted segment in the image's tables (slot 0:
void / no segment). A pair of image ``b`` is the packed key ``(b * gt_width + g) * pred_width + p``; each
pixel may carry a small flag (``0 .. flags - 1``: for Boundary PQ whether it lies on its gt segment's band
and on its predicted segment's band), counted apart.

Two exact ways to count (the same numbers):

- **dense** (where host reads are free and the table is small): one ``bincount`` over every possible key;
  every (b, g, p) is listed, most with count 0;
- **sorted** (on a device, and for tables too large): sort the keys, mark where they change, and add the
  flags of each run with ``scatter_add``; fixed-size outputs (one entry per pixel, ``valid`` marks the runs),
  so nothing is read back to the host.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads

DENSE_TABLE_LIMIT = 1 << 22
"""The dense path counts into at most this many bins (else, and off CPU, the sorted path)."""


class PairCounts(NamedTuple):
    """Pairs of a batch and their pixel counts.

    Attributes:
        keys: :math:`(L,)` int64 packed ``(b * gt_width + g) * pred_width + p`` (arbitrary where not ``valid``).
        counts: :math:`(L, F)` int64 pixels of each pair per flag value (0 where not ``valid``).
        valid: :math:`(L,)` bool, or ``None`` when every entry is a pair (the dense path).
    """

    keys: Tensor
    counts: Tensor
    valid: Tensor | None


def pair_keys(gt: Tensor, pred: Tensor, gt_width: int, pred_width: int) -> Tensor:
    """:math:`(B, H, W)` slot maps -> :math:`(B H W,)` int64 packed pair keys."""
    size = gt.shape[0]
    image = torch.arange(size, device=gt.device, dtype=torch.int64).view(size, 1, 1) * gt_width
    return ((gt.to(torch.int64) + image) * pred_width + pred).reshape(-1)


def count_pairs(keys: Tensor, flags: Tensor | None, num_flags: int, num_keys: int) -> PairCounts:
    """Count each key's pixels per flag value, densely on CPU when ``num_keys * num_flags`` is small.

    Args:
        keys: :math:`(N,)` int64 in ``[0, num_keys)``.
        flags: :math:`(N,)` integer in ``[0, num_flags)``, or ``None`` (one flag).
        num_flags: ``F``.
        num_keys: the key space (``B * gt_width * pred_width``).

    Returns:
        :class:`PairCounts`.
    """
    if host_reads.free_on(keys) and num_keys * num_flags <= max(DENSE_TABLE_LIMIT, keys.numel()):
        bins = keys if flags is None else keys * num_flags + flags
        counts = torch.bincount(bins, minlength=num_keys * num_flags).view(num_keys, num_flags)
        return PairCounts(torch.arange(num_keys, device=keys.device), counts, None)
    return _sorted_counts(keys, flags, num_flags)


def _sorted_counts(keys: Tensor, flags: Tensor | None, num_flags: int) -> PairCounts:
    """The sorted path: run-length counts of the sorted keys, one output row per pixel (module notes)."""
    count = keys.numel()
    ordered, order = torch.sort(keys)
    starts = torch.ones(count, dtype=torch.bool, device=keys.device)
    torch.ne(ordered[1:], ordered[:-1], out=starts[1:])
    run = torch.cumsum(starts, 0) - 1  # each pixel's run (its pair's row)
    bins = run if flags is None else run * num_flags + flags.to(torch.int64)[order]
    counts = torch.zeros(count * num_flags, dtype=torch.int64, device=keys.device)
    counts.scatter_add_(0, bins, torch.ones_like(bins)).view(count, num_flags)
    unique = torch.zeros(count, dtype=torch.int64, device=keys.device).scatter_(0, run, ordered)
    valid = torch.arange(count, device=keys.device) <= run[-1]
    return PairCounts(unique, counts.view(count, num_flags), valid)


def lookup_counts(table: PairCounts, keys: Tensor) -> Tensor:
    """Each key's counts in ``table`` (all flags summed), 0 for a key that is not there.

    Args:
        table: :class:`PairCounts` (sorted path: keys ascending over the valid rows; dense: every key).
        keys: :math:`(L,)` int64.

    Returns:
        :math:`(L,)` int64.
    """
    totals = table.counts.sum(dim=1)
    if table.valid is None:  # dense: row == key
        return totals[keys]
    # invalid rows hold key 0 and count 0 past the last run: push them past every key before searching
    sortable = torch.where(table.valid, table.keys, torch.iinfo(torch.int64).max)
    position = torch.searchsorted(sortable, keys).clamp_(max=sortable.numel() - 1)
    found = sortable[position] == keys
    return torch.where(found, totals[position], 0)
