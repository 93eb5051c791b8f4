"""On a GPU: the update makes no host sync (``torch.cuda.set_sync_debug_mode("error")``) and every value equals
the CPU path's (skipped without CUDA; run by benchmarks/gpu_check.sh)."""

from __future__ import annotations

import pytest
import torch

from benchmarks.instance_data import to_torch
from nobg_metrics import MeanAveragePrecision
from tests.instance.helpers import images

pytestmark = pytest.mark.cuda


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_cuda_update_has_no_host_sync_and_equals_cpu(iou_type):
    data = images(8, [(45, 60), (105, 140), (64, 48)], seed=60)
    cpu_preds, cpu_target = to_torch(data, image_ids=True)
    preds, target = to_torch(data, "cuda", image_ids=True)
    options = {"iou_type": iou_type, "class_metrics": True, "extended_summary": True, "validate_args": False}
    expected = MeanAveragePrecision(**options)
    expected.update(cpu_preds, cpu_target)
    metric = MeanAveragePrecision(**options).to("cuda")
    metric.update(preds[:2], target[:2])  # warm-up: per-device constants are made once
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        metric.update(preds[2:], target[2:])
    finally:
        torch.cuda.set_sync_debug_mode("default")
    result, reference = metric.compute(), expected.compute()
    for key, value in reference.items():
        assert torch.equal(result[key].cpu(), value), key
