"""Box AP off CPU: the update makes no host sync and gives the CPU values.

On CPU the sync recorder (tests/helpers/syncs.py) lists what a CUDA device would wait for, with
``engine="fixed"`` (the path a GPU takes); on a GPU (``cuda`` mark, run by benchmarks/gpu_check.sh)
``torch.cuda.set_sync_debug_mode("error")`` checks the real thing.
"""

from __future__ import annotations

import pytest
import torch

from nobg_metrics.functional.instance.inputs import prepare_instances
from nobg_metrics.functional.instance.mean_average_precision import _mean_average_precision_compute
from nobg_metrics.functional.instance.options import make_options
from nobg_metrics.functional.instance.statistics import instance_update
from tests.helpers.syncs import HostSyncRecorder
from tests.instance.test_bbox_data import make_box_images, run_bbox, to_torch


def _update(preds: list, target: list, protocol: str, engine: str) -> dict[str, torch.Tensor]:
    options = make_options("bbox", protocol=protocol, class_metrics=True, extended_summary=True)
    images = prepare_instances(preds, target, False, iou_types=("bbox",))
    first = torch.zeros((), dtype=torch.int64, device=preds[0]["boxes"].device)
    return instance_update(images, options, first, 0, engine)  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", ["coco", "lvis"])
def test_bbox_update_records_no_host_sync(protocol):
    data = make_box_images(12, seed=20, categories=5, federated=protocol == "lvis")
    preds, target = to_torch(data)
    _update(preds[:2], target[:2], protocol, "fixed")  # per-device constants are made once
    with HostSyncRecorder() as recorder:
        states = _update(preds[2:], target[2:], protocol, "fixed")
    assert not recorder.hits, dict(recorder.hits)
    options = make_options("bbox", protocol=protocol, class_metrics=True, extended_summary=True)
    result = _mean_average_precision_compute(states, options, len(preds) - 2)
    expected = run_bbox(data[2:], protocol=protocol, class_metrics=True, extended_summary=True)
    for key, value in expected.items():
        assert torch.equal(result[key], value), key


@pytest.mark.cuda
@pytest.mark.parametrize("protocol", ["coco", "lvis"])
def test_bbox_cuda_update_has_no_host_sync_and_equals_cpu(protocol):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    data = make_box_images(40, seed=21, categories=6, detections=30, federated=protocol == "lvis")
    preds, target = to_torch(data, device="cuda")
    _update(preds[:2], target[:2], protocol, "auto")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        states = _update(preds[2:], target[2:], protocol, "auto")
    finally:
        torch.cuda.set_sync_debug_mode("default")
    options = make_options("bbox", protocol=protocol, class_metrics=True, extended_summary=True)
    result = _mean_average_precision_compute(states, options, len(preds) - 2)
    expected = run_bbox(data[2:], protocol=protocol, class_metrics=True, extended_summary=True)
    for key, value in expected.items():
        assert torch.equal(result[key].cpu(), value), key
