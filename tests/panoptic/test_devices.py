"""PanopticQuality's update reads nothing back to the host on the device paths (``engine="fixed"``, what CUDA runs
by default: the dispatch recorder of tests/helpers/syncs.py), and on a GPU gives the CPU values."""

from __future__ import annotations

import pytest
import torch

from nobg_metrics import PanopticQuality
from tests.helpers.syncs import HostSyncRecorder
from tests.panoptic.helpers import COCO, scenes
from tests.panoptic.scenes import STUFFS, THINGS

SIZES = ((40, 52), (40, 52), (23, 31))


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
@pytest.mark.parametrize("as_list", [False, True], ids=["tensor", "list"])
def test_update_makes_no_host_sync(iou_type, as_list):
    forms = [item[1:] for item in scenes(2, SIZES, 5)][:2]
    preds, target, crowd = (torch.stack([f[i] for f in forms]) for i in range(3))
    if as_list:
        preds, target, crowd = list(preds), list(target), list(crowd)
    metric = PanopticQuality(THINGS, STUFFS, iou_type=iou_type, allow_unknown_preds_category=True,
                             validate_args=False, engine="fixed", **COCO)
    metric.update(preds, target, crowd)  # warm-up
    with HostSyncRecorder() as recorder:
        metric.update(preds, target, crowd)
    assert not recorder.hits, recorder.hits


@pytest.mark.cuda
@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_cuda_equals_cpu(iou_type):
    forms = [item[1:] for item in scenes(2, SIZES, 5)]
    values = []
    for device in ("cpu", "cuda"):
        metric = PanopticQuality(THINGS, STUFFS, iou_type=iou_type, allow_unknown_preds_category=True,
                                 **COCO).to(device)
        metric.update(*([f[i].to(device) for f in forms] for i in range(3)))
        values.append(metric.compute())
    for name, value in values[0].items():
        assert torch.equal(values[1][name].cpu(), value), name
    torch.cuda.set_sync_debug_mode("error")
    try:
        metric = PanopticQuality(THINGS, STUFFS, iou_type=iou_type, allow_unknown_preds_category=True,
                                 validate_args=False, **COCO).to("cuda")
        batch = [torch.stack([f[i] for f in forms[:2]]).cuda() for i in range(3)]
        metric.update(*batch)
    finally:
        torch.cuda.set_sync_debug_mode("default")
