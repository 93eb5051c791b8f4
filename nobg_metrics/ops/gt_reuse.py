"""Reuse of gt-only work across predictions of the same gt: several methods scored on one dataset.

A benchmark scores every method against the same gts. Some metrics spend most of their time on the gt alone
(the weighted F-measure's exact distance transform: ~70 % of its time on a 1024² real-shape mask), and the
reference tools redo that work for every method. Inside :func:`reuse_gt_work` such a gt-only result is kept
for the last few distinct gt batches and handed back when an *equal* gt batch comes again (same shape,
dtype, device and values: checked with ``torch.equal``, so a reuse is exact by construction). Outside the
block nothing is kept and nothing is checked: the metrics behave as without this module.

Only where host reads are free (CPU): the lookup reads the gt's bytes. On a GPU every call computes afresh
(no device sync inside ``update``).

Example:
    >>> import torch
    >>> from nobg_metrics.functional import weighted_f_measure
    >>> gt = torch.zeros(2, 16, 16, dtype=torch.bool); gt[:, 4:12, 3:9] = True
    >>> preds = [gt.double() * 0.9, gt.double() * 0.5]       # two methods, one gt batch
    >>> with reuse_gt_work() as memo:
    ...     values = [weighted_f_measure(p, gt) for p in preds]   # the gt's EDT is computed once
    >>> [round(float(v), 4) for v in values], memo.misses, memo.hits
    ([0.9474, 0.6667], 1, 1)
"""

from __future__ import annotations

import contextlib
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads

T = TypeVar("T")

_ACTIVE: list[_Memo] = []


class _Memo:
    """Results of gt-only functions for the last ``capacity`` (name, gt) pairs, least recently used out."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.entries: OrderedDict[tuple, tuple[Tensor, Any]] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, name: str, gt: Tensor, compute: Callable[[], T]) -> T:
        gt = gt.contiguous()
        digest = zlib.crc32(gt.view(torch.uint8).numpy()) if gt.dtype == torch.bool else zlib.crc32(gt.numpy())
        key = (name, tuple(gt.shape), gt.dtype, gt.device, digest)
        entry = self.entries.get(key)
        if entry is not None and torch.equal(entry[0], gt):
            self.entries.move_to_end(key)
            self.hits += 1
            return entry[1]
        self.misses += 1
        value = compute()
        self.entries[key] = (gt.clone(), value)
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)
        return value


@contextlib.contextmanager
def reuse_gt_work(capacity: int = 8) -> Iterator[_Memo]:
    """Within the block, gt-only results are reused for equal gt batches (exact; CPU only).

    Args:
        capacity: distinct (function, gt batch) results kept. A command that scores the methods of a
            dataset gt by gt needs one per metric that uses this; 8 leaves room.

    Yields:
        the memo (its ``hits`` and ``misses`` count the lookups).
    """
    memo = _Memo(capacity)
    _ACTIVE.append(memo)
    try:
        yield memo
    finally:
        _ACTIVE.remove(memo)


def gt_only(name: str, gt: Tensor, compute: Callable[[], T]) -> T:
    """``compute()`` — or, inside :func:`reuse_gt_work` on CPU, its kept result for an equal ``gt``.

    ``compute`` must depend on ``gt`` alone (and on constants named by ``name``); callers must not modify
    the result in place.
    """
    if not _ACTIVE or not host_reads.free_on(gt):
        return compute()
    return _ACTIVE[-1].get(name, gt, compute)
