"""Reuse of gt-only work across predictions of the same gt: several methods scored on one dataset.

A benchmark scores every method against the same gts. Some metrics spend most of their time on the gt alone
(the weighted F-measure's distance transform: over half of its time on a 1024² real-shape mask), and the
reference tools redo that work for every method. Inside :func:`reuse_gt_work` such a gt-only result is kept
for the last few distinct gt batches and handed back when an *equal* gt batch comes again (same shape,
dtype, device and values: checked with ``torch.equal``, so a reuse is exact by construction). Outside the
block nothing is kept and nothing is checked: the metrics behave as without this module.

Only where host reads are free (CPU): the lookup reads the gt's bytes. On a GPU every call computes afresh
(no device sync inside ``update``).

Examples:
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


MAX_BYTES = 1 << 30
"""Default bound of the tensors a :func:`reuse_gt_work` block keeps (gts and results): 1 GiB."""


def _nbytes(value: Any) -> int:
    """Bytes of the tensors in a result (a tensor, or tuples / named tuples of them)."""
    if isinstance(value, Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, tuple):
        return sum(_nbytes(item) for item in value)
    return 0


class _Memo:
    """Results of gt-only functions for the last ``capacity`` (name, gt) pairs within ``max_bytes``, least
    recently used out."""

    def __init__(self, capacity: int, max_bytes: int) -> None:
        self.capacity, self.max_bytes = capacity, max_bytes
        self.entries: OrderedDict[tuple, tuple[Tensor, Any, int]] = OrderedDict()
        self.bytes = 0
        self.hits = self.misses = 0

    def get(self, name: str, gt: Tensor, compute: Callable[[], T]) -> T:
        gt = gt.contiguous()
        digest = zlib.crc32(gt.reshape(-1).view(torch.uint8).numpy().data)  # the bytes, whatever the dtype
        key = (name, tuple(gt.shape), gt.dtype, gt.device, digest)
        entry = self.entries.get(key)
        if entry is not None and torch.equal(entry[0], gt):
            self.entries.move_to_end(key)
            self.hits += 1
            return entry[1]
        self.misses += 1
        value = compute()
        size = _nbytes(value) + _nbytes(gt)
        if entry is not None:  # same digest, other values: replaced
            self.bytes -= self.entries.pop(key)[2]
        if size <= self.max_bytes:
            self.entries[key] = (gt.clone(), value, size)
            self.bytes += size
        while len(self.entries) > self.capacity or self.bytes > self.max_bytes:
            self.bytes -= self.entries.popitem(last=False)[1][2]
        return value


@contextlib.contextmanager
def reuse_gt_work(capacity: int = 8, max_bytes: int = MAX_BYTES) -> Iterator[_Memo]:
    """Within the block, gt-only results are reused for equal gt batches (exact; CPU only).

    Args:
        capacity: distinct (function, gt batch) results kept. A command that scores the methods of a
            dataset gt by gt needs one per metric that uses this; 8 leaves room.
        max_bytes: bound of the kept tensors (the weighted F-measure keeps its float64 weights, the gt and two
            int64 indices per band pixel: ~9-10 bytes per pixel, ~10 MiB per 1024² gt); the least recently used go
            first, and a result larger than this is not kept.

    Yields:
        the memo (its ``hits`` and ``misses`` count the lookups).
    """
    memo = _Memo(capacity, max_bytes)
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
