"""``ops.gt_reuse``: gt-only work is reused for an equal gt batch inside the block, and only there."""

from __future__ import annotations

import torch

from nobg_metrics.functional import weighted_f_measure
from nobg_metrics.ops.gt_reuse import gt_only, reuse_gt_work


def _gts(seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(2, 23, 31, generator=generator) > 0.6


def test_equal_gt_batch_is_computed_once_inside_the_block() -> None:
    calls = []
    gt = _gts()
    with reuse_gt_work() as memo:
        first = gt_only("f", gt, lambda: calls.append(1) or gt.sum())
        second = gt_only("f", gt.clone(), lambda: calls.append(1) or gt.sum())  # equal values, another tensor
    assert len(calls) == 1 and memo.hits == 1 and memo.misses == 1
    assert first is second


def test_a_changed_pixel_another_name_or_no_block_computes_afresh() -> None:
    calls = []
    gt = _gts()
    changed = gt.clone()
    changed[1, 22, 30] = ~changed[1, 22, 30]
    with reuse_gt_work() as memo:
        for tensor, name in ((gt, "f"), (changed, "f"), (gt, "g")):
            gt_only(name, tensor, lambda: calls.append(1))
    assert len(calls) == 3 and memo.hits == 0
    gt_only("f", gt, lambda: calls.append(1))
    gt_only("f", gt, lambda: calls.append(1))
    assert len(calls) == 5  # outside the block nothing is kept


def test_least_recently_used_result_is_dropped_beyond_capacity() -> None:
    calls = []
    gts = [_gts(seed) for seed in range(3)]
    with reuse_gt_work(capacity=2):
        for gt in (*gts, gts[0]):  # gts[0] was evicted by gts[2]
            gt_only("f", gt, lambda: calls.append(1))
    assert len(calls) == 4


def test_weighted_f_of_several_predictions_is_the_same_with_reuse() -> None:
    gt = _gts()
    generator = torch.Generator().manual_seed(1)
    preds = [torch.rand(2, 23, 31, generator=generator, dtype=torch.float64) for _ in range(3)]
    alone = [weighted_f_measure(pred, gt) for pred in preds]
    with reuse_gt_work() as memo:
        shared = [weighted_f_measure(pred, gt) for pred in preds]
    assert memo.hits == 2
    assert all(torch.equal(a, b) for a, b in zip(alone, shared))


def test_results_beyond_the_byte_bound_are_not_kept() -> None:
    calls = []
    gts = [_gts(seed) for seed in range(3)]
    size = torch.zeros(100, dtype=torch.float64)  # 800 bytes of result, plus the kept gt (2 x 23 x 31 bytes)
    with reuse_gt_work(max_bytes=2 * (800 + gts[0].numel())) as memo:
        for gt in (*gts, gts[2], gts[0]):  # room for two: gts[0] was evicted by gts[2]
            gt_only("f", gt, lambda: calls.append(1) or size)
        assert memo.bytes <= memo.max_bytes
    assert len(calls) == 4 and memo.hits == 1
    with reuse_gt_work(max_bytes=10) as memo:  # a result larger than the bound is never kept
        gt_only("f", gts[0], lambda: size)
        gt_only("f", gts[0], lambda: size)
    assert memo.hits == 0 and not memo.entries
