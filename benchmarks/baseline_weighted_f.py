"""The weighted F-measure as it was before the windowed transform (commit 5c76fb5), for side-by-side timing only.

A benchmark-only copy of the then per-image step: the exact transform with nearest indices over the whole image
(one pass, no strips: ``old_envelope``), the weights from a 300²-entry table, the nearest-gt index of every pixel
of the gt's box and the gather of the error through it. ``|pred - gt|``, the Gaussian and the sums are the
package's own functions, and :func:`old_path` runs it inside the package's class, so a timing difference is the
gt-only work and the gather. Values are bit-identical to the package's (``bench_weighted_f.py`` asserts it on every
pair it times).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt
from nobg_metrics._seg_batch import SegBatch
from nobg_metrics.functional.sod import weighted_f as wf
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.distance import _column_pass
from nobg_metrics.ops.envelope import COARSE_QUERIES, feature_columns
from nobg_metrics.ops.uint8_stats import count


def old_envelope(cost: Tensor, positions: Tensor, width: int, far: int) -> Tensor:
    """The row pass of 5c76fb5: leftmost argmin sites, one pass over all rows, int64 site buffers."""
    groups, rows, sites = cost.shape
    bits = max(1, (sites - 1).bit_length())
    mask = (1 << bits) - 1
    stride = 1 << max(0, math.ceil(math.log2(max(width, 1))) - int(math.log2(COARSE_QUERIES)))
    largest = int(cost.max()) if host_reads.free_on(cost) else far * far
    narrow = ((largest + (width - 1) ** 2 + 1) << bits) <= 2**31
    key_dtype = torch.int32 if narrow else torch.int64
    base = torch.bitwise_left_shift(cost.to(key_dtype), bits).bitwise_or_(torch.arange(sites, dtype=key_dtype))
    coarse = range(0, width, stride)
    buffers = [torch.empty((groups, rows, width + 1), dtype=torch.int64) for _ in range(2)]
    best = buffers[0][:, :, : len(coarse) + 1]
    best[:, :, -1].fill_(sites - 1)
    scratch = torch.empty_like(base)
    for slot, column in enumerate(coarse):
        offset = (column - positions).to(key_dtype)
        torch.addcmul(base, offset, offset, value=1 << bits, out=scratch)
        best[:, :, slot] = scratch.amin(dim=2).bitwise_and_(mask)
    site_columns = positions.to(key_dtype)
    starts, owner, offset = (torch.empty((groups, rows, sites), dtype=key_dtype) for _ in range(3))
    owner_index = owner if not narrow else torch.empty((groups, rows, sites), dtype=torch.int64)
    ones = torch.ones((1, 1, 1), dtype=key_dtype)
    expanded_columns = site_columns.expand(groups, rows, sites)
    step = stride // 2
    while step >= 1:  # log2(W) - 4 levels
        count_q = len(range(step, width, 2 * step))
        multiples = best.shape[2] - 1
        low, high = best[:, :, :count_q], best[:, :, 1 : count_q + 1]
        starts.zero_().scatter_add_(2, low[:, :, 1:], ones.expand(groups, rows, count_q - 1))
        torch.cumsum(starts, dim=2, out=owner)
        torch.add(step - site_columns, owner, alpha=2 * step, out=offset)
        torch.addcmul(base, offset, offset, value=1 << bits, out=scratch)
        segment = torch.full((groups, rows, count_q), torch.iinfo(key_dtype).max, dtype=key_dtype)
        if narrow:
            owner_index.copy_(owner)
        segment.scatter_reduce_(2, owner_index, scratch, reduce="amin")
        gap = torch.arange(step, width, 2 * step, dtype=key_dtype) - expanded_columns.gather(2, high)
        right = torch.addcmul(base.gather(2, high), gap, gap, value=1 << bits)
        finer = buffers[1][:, :, : multiples + count_q + 1]
        buffers.reverse()
        finer[:, :, 0 : 2 * multiples : 2] = best[:, :, :multiples]
        finer[:, :, 1 : 2 * count_q : 2] = torch.minimum(segment, right).bitwise_and_(mask)
        finer[:, :, -1].fill_(sites - 1)
        best = finer
        step //= 2
    return best[:, :, :width]


_OLD_TABLE: list[Tensor] = []


def old_gt_terms(gt: Tensor) -> tuple[Tensor, Tensor, host_reads.Window, Tensor]:
    """5c76fb5's ``_gt_terms``: (weights, nearest flat index on the box, box, gt count)."""
    batch, height, width = gt.shape
    far = height + width + 1
    dtype = torch.int32 if far * far + width * width < 2**31 else torch.int64
    positions, sites = feature_columns(gt)
    gap, site_rows = _column_pass(gt, positions)
    cost = gap.mul_(gap)
    site = old_envelope(cost, positions, width, far)
    cols = positions.to(dtype).expand(batch, height, sites).gather(2, site)
    offset = torch.arange(width, dtype=dtype) - cols
    squared = offset.mul_(offset).add_(cost.to(dtype).gather(2, site))
    if not _OLD_TABLE:
        values = torch.arange(300 * 300 + 1, dtype=torch.float64)
        _OLD_TABLE.append(values.sqrt_().mul_(wf._DECAY).exp_().neg_().add_(2))
    table = _OLD_TABLE[0]
    squared = squared.clamp_(max=table.numel() - 1)
    weight = table.index_select(0, squared.view(-1)).view(squared.shape).masked_fill_(gt, 0.0)
    box = host_reads.window(gt, 3)
    rows = site_rows[:, box.rows].gather(2, site[:, box.rows, box.cols])
    flat = rows.to(torch.int64).mul_(width).add_(cols[:, box.rows, box.cols]).clamp_(0, height * width - 1)
    return weight, flat, box, count(gt.view(torch.uint8).flatten(1))


def old_per_image(batch: SegBatch, beta2: float, empty_gt: EmptyGt) -> Tensor:
    """5c76fb5's ``_weighted_f_per_image`` (same signature as the package's)."""
    gt = batch.gt
    weight, nearest, box, fg_count = old_gt_terms(gt)
    error = wf._absolute_error(batch)
    error_nearest = error.flatten(1).gather(1, nearest.flatten(1)).view_as(nearest)
    blurred = wf._gaussian_same(error_nearest)[:, box.inner_rows, box.inner_cols]
    on_gt = torch.minimum(error[box.inner], blurred)
    fg_sum = torch.where(gt[box.inner], on_gt, 0.0).sum(dim=(-2, -1))
    bg_sum = torch.mul(weight, error).sum(dim=(-2, -1))
    tpw = fg_count.double() - fg_sum
    recall = 1 - fg_sum / fg_count.clamp(min=1)
    precision = tpw / (tpw + bg_sum + wf.EPS)
    value = (1 + beta2) * recall * precision / (recall + beta2 * precision + wf.EPS)
    zero = torch.zeros((), dtype=torch.float64, device=gt.device)
    empty = fg_count == 0
    if empty_gt == "reference":
        return torch.where(empty, zero, value)
    mean_pred = batch.pred.double().mean(dim=(-2, -1))
    return torch.where(empty, 1 - mean_pred, torch.where(fg_count == batch.num_pixels, mean_pred, value))


@contextlib.contextmanager
def old_path() -> Iterator[None]:
    """Within the block the package's weighted F runs 5c76fb5's per-image step: the same class, input
    preparation and accumulation around it, so a timing difference is the per-image work alone."""
    current = wf._weighted_f_per_image
    wf._weighted_f_per_image = old_per_image
    try:
        yield
    finally:
        wf._weighted_f_per_image = current


def old_weighted_f(pred: Tensor, gt: Tensor) -> Tensor:
    """Dataset weighted F of a batch under the PySODMetrics protocol (``normalize=True, empty_gt="reference"``)."""
    with old_path():
        return wf.weighted_f_measure(pred, gt, normalize=True, empty_gt="reference")
