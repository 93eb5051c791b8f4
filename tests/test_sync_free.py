"""Updates never make the host wait for the device: checked on CPU with a dispatch mode that records every
op which would synchronise on CUDA (tests/helpers/syncs.py), on the device paths (``host_reads.free_on``
forced to False, as on CUDA); tests/test_cuda.py repeats it on a GPU."""

from __future__ import annotations

import inspect
import numpy as np
import pytest
import torch

from nobg_metrics.collection import (
    METRIC_NAMES,
    TIERS,
    accepted_options,
    make_collection,
    metric_class,
)
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.distance import nearest_feature
from tests.helpers.data import gt_uint8, pred_uint8
from tests.helpers.syncs import HostSyncRecorder


def _batch(height=40, width=56):
    rng = np.random.default_rng(2)
    gts = [gt_uint8(rng, height, width) for _ in range(3)]
    preds = [pred_uint8(rng, g) for g in gts]
    gt = torch.from_numpy(np.stack(gts))[:, None]
    return torch.from_numpy(np.stack(preds))[:, None], gt, torch.where(gt > 128, 255, 128).to(torch.uint8)


@pytest.fixture
def device_paths(monkeypatch):
    """What CUDA runs: every op that sizes work by the data takes its fixed-size path."""
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)


@pytest.mark.parametrize("name", METRIC_NAMES)
@pytest.mark.parametrize("as_list", [False, True], ids=["tensor", "list"])
def test_update_makes_no_host_sync(name, as_list, device_paths):
    pred, gt, trimap = _batch()
    metric = metric_class(name)(normalize=True, validate_args=False) if "normalize" in accepted_options(
        name) else metric_class(name)(validate_args=False)
    image = torch.randint(0, 256, (pred.shape[0], 3, *pred.shape[-2:]), dtype=torch.uint8,
                          generator=torch.Generator().manual_seed(3))  # CCm's RGB images
    if as_list:
        pred, gt, trimap, image = list(pred[:, 0]), list(gt[:, 0]), list(trimap[:, 0]), list(image)
    arguments = {"trimap": trimap} if "trimap" in inspect.signature(metric.update).parameters else {}
    if "image" in inspect.signature(metric.update).parameters:
        arguments["image"] = image
    metric.update(pred, gt, **arguments)  # warm-up: lazily built constants may be made once
    with HostSyncRecorder() as recorder:
        metric.update(pred, gt, **arguments)
    assert not recorder.hits, recorder.hits


def test_distance_transform_makes_no_host_sync(device_paths):
    features = torch.rand(2, 33, 70, generator=torch.Generator().manual_seed(0)) > 0.9
    with HostSyncRecorder() as recorder:
        nearest_feature(features)
    assert not recorder.hits, recorder.hits


def test_the_recorder_sees_the_host_reads_of_the_cpu_paths():
    """The check is not vacuous: on CPU the connectivity error lists runs with ``nonzero`` and solves its
    union-find to convergence (free there); the recorder reports those reads."""
    pred, gt, trimap = _batch()
    metric = metric_class("connectivity_error")(validate_args=False)
    with HostSyncRecorder() as recorder:
        metric.update(pred, gt, trimap=trimap)
    assert {op for op, _ in recorder.hits} >= {"nonzero", "_local_scalar_dense"}


@pytest.mark.parametrize("normalize", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_the_device_paths_give_the_cpu_values(normalize, monkeypatch):
    """Off CPU, ops that size work by the data (EDT sites, the weighted F box, bincount) take fixed-size
    paths. Forced here on CPU: every metric of the expensive tier gives the same value on the sweep (HCE's
    fixed-size path, ~100x the CPU path's time here, is checked on its own stress set in test_hce_device.py)."""
    from nobg_metrics.ops import host_reads
    from tests.helpers.data import SHAPES, as_tensors, sod_pairs

    preds, gts = as_tensors(sod_pairs(seed=21, shapes=[*SHAPES, (257, 383)]))
    trimaps = [torch.where(g > 128, 255, 128).to(torch.uint8) for g in gts]

    names = [n for n in TIERS["expensive"] if n != "hce"]  # HCE's forced path: tests/functional/test_hce_device.py

    def values():
        collection = make_collection(metrics=names, normalize=normalize)
        collection.update(preds, gts, trimap=trimaps)
        return collection.compute()

    host = values()
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    device = values()
    for name, value in host.items():
        assert abs(device[name].item() - value.item()) <= 1e-12, name
