"""Pixel counts of every (gt segment, predicted segment) pair of a batch of slot maps.

A batch of equal-size images is held as two *slot maps*
(:class:`~nobg_metrics.functional.panoptic.segments.SegmentBatch`): each pixel holds the index of its gt segment
and of its predicted segment in the image's tables (slot 0: void / no segment). A pair of image ``b`` is the packed
key ``(b * gt_width + g) * pred_width + p``; each pixel may carry a small flag (``0 .. flags - 1``: for Boundary PQ
whether it lies on its gt segment's band and on its predicted segment's band), counted apart.

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


def count_pairs(gt: Tensor, pred: Tensor, flags: Tensor | None, gt_width: int, pred_width: int,
                engine: host_reads.Engine = "auto") -> PairCounts:
    """Count the pixels of each (image, gt slot, pred slot) pair, per flag value.

    Args:
        gt: :math:`(B, H, W)` integer gt slots in ``[0, gt_width)``.
        pred: :math:`(B, H, W)` integer predicted slots in ``[0, pred_width)``.
        flags: :math:`(B, H, W)` uint8 flag values in ``[0, 4)``, or ``None`` (one flag value).
        gt_width: slots per image on the gt side.
        pred_width: slots per image on the prediction side.
        engine: ``"data_sized"`` allows the dense table of every pair (``bincount``: a host read), ``"fixed"``
            sorts the keys (no host read), ``"auto"`` is data-sized on CPU.

    Returns:
        :class:`PairCounts` with ``F = 4`` flag values (``F = 1`` without flags).
    """
    size = gt.shape[0]
    num_flags = 1 if flags is None else 4
    num_keys = size * gt_width * pred_width
    dense = num_keys * num_flags <= max(DENSE_TABLE_LIMIT, gt.numel()) and num_keys * num_flags < 2**31
    if dense and host_reads.resolve_engine(engine, gt) == "data_sized":
        # one bin per pixel: ((b * gt_width + g) * pred_width + p) * F + flag, in int16 when the bins fit (half
        # the memory traffic of int32)
        dtype = torch.int16 if num_keys * num_flags <= 2**15 else torch.int32
        bins = gt.to(dtype, copy=True).mul_(pred_width * num_flags)
        if size > 1:
            image = torch.arange(size, dtype=dtype).view(size, 1, 1) * (gt_width * pred_width * num_flags)
            bins += image
        if flags is not None:
            bins.add_(flags)
        bins.add_(pred, alpha=num_flags)
        counts = torch.bincount(bins.view(-1), minlength=num_keys * num_flags).view(num_keys, num_flags)
        return PairCounts(torch.arange(num_keys, device=gt.device), counts, None)
    keys = pair_keys(gt, pred, gt_width, pred_width)
    return _sorted_counts(keys, None if flags is None else flags.reshape(-1), num_flags)


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
