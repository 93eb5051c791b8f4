"""HCE's sync-free path (``engine="fixed"``, or ``host_reads.free_on`` forced to False as on CUDA where host syncs
are counted) gives the CPU path's values image for image, makes no host sync in ``update``, and never returns a
wrong number when its budgets are short; ``engine="data_sized"`` off CPU runs the data-sized path (its host reads
are those of the data-sized ops, listed in docs/hce.md)."""

from __future__ import annotations

import functools
import importlib

import numpy as np
import pytest
import torch

from nobg_metrics.functional.sod.hce import hce, hce_per_image
from nobg_metrics.metrics.sod.hce import HCE
from nobg_metrics.ops import host_reads, polyline, thinning
from nobg_metrics.ops.thinning import skeletonize
from tests.helpers.syncs import HostSyncRecorder
from tests.sod.test_hce import CASES

hce_module = importlib.import_module("nobg_metrics.functional.sod.hce")  # the package exports a function `hce`
SMALL = [case for case in CASES if case[0].size <= 70 * 70]  # 31 pairs: every shape kind, stress gts
PREDS = [torch.from_numpy(pred) for pred, _ in SMALL]
GTS = [torch.from_numpy(gt) for _, gt in SMALL]
STRESS = SMALL[-10:]  # wires, fences, text, dots, holes with degraded predictions


@pytest.fixture
def device_paths(monkeypatch):
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)


@functools.cache
def _cpu_values(protocol: str) -> torch.Tensor:
    """The CPU path's values (the test_hce.py references' values: that file checks them image for image)."""
    return hce_per_image(PREDS, GTS, protocol=protocol, normalize=protocol == "pysodmetrics")


@pytest.mark.parametrize("protocol", ["pysodmetrics", "dis"])
def test_sync_free_path_equals_the_cpu_path(protocol):
    expected = _cpu_values(protocol)
    chosen = slice(None) if protocol == "pysodmetrics" else slice(-10, None)  # "dis": the stress pairs
    got = hce_per_image(PREDS[chosen], GTS[chosen], protocol=protocol, normalize=protocol == "pysodmetrics",
                        engine="fixed")
    assert torch.equal(got, expected[chosen])
    assert expected.max() > 100  # not vacuous: the stress pairs have many control points


def test_data_sized_path_off_cpu_equals_the_cpu_path(device_paths):
    preds, gts = [p for p, _ in STRESS], [g for _, g in STRESS]
    got = hce_per_image([torch.from_numpy(p) for p in preds], [torch.from_numpy(g) for g in gts],
                        normalize=True, engine="data_sized")
    assert torch.equal(got, _cpu_values("pysodmetrics")[-10:])


def test_cached_skeletons_on_the_sync_free_path():
    gts = [g > 128 for g in GTS[-10:]]
    skeletons = [torch.from_numpy(np.where(skeletonize(g).skeleton.numpy(), 255, 0).astype(np.uint8)) for g in gts]
    got = hce_per_image(PREDS[-10:], GTS[-10:], protocol="dis", gt_skeleton=skeletons, engine="fixed")
    assert torch.equal(got, _cpu_values("dis")[-10:])


@pytest.mark.parametrize("as_list", [False, True], ids=["tensor", "list"])
def test_cached_skeletons_make_no_host_sync_and_compute_reads_once(as_list, device_paths):
    """Beyond tests/test_sync_free.py's update without a skeleton: with cached skeletons, and compute's one read."""
    pred, gt = torch.from_numpy(np.stack([p for p, _ in STRESS[:4:2]])), torch.from_numpy(
        np.stack([g for _, g in STRESS[:4:2]]))
    if as_list:
        pred, gt = list(pred), list(gt)
    metric = HCE(normalize=True, validate_args=False)
    skeletons = [skeletonize(g > 128).skeleton for g in gt] if as_list else skeletonize(gt > 128).skeleton
    metric.update(pred, gt)  # warm-up: cached constants (tables, offsets) are made once; the first update
    with HostSyncRecorder() as recorder:
        metric.update(pred, gt, gt_skeleton=skeletons)
    assert not recorder.hits, recorder.hits
    with HostSyncRecorder() as recorder:
        value = metric.compute()
    assert {op for op, _ in recorder.hits} <= {"_local_scalar_dense", "is_nonzero"}  # the budget check: one read
    assert sum(recorder.hits.values()) == 1
    assert value.item() == pytest.approx(_cpu_values("pysodmetrics")[[-10, -8]].mean().item(), abs=1e-12)


def test_data_sized_engine_reads_the_host_off_cpu(device_paths):
    pred, gt = PREDS[-10], GTS[-10]
    metric = HCE(normalize=True, engine="data_sized", validate_args=False)
    with HostSyncRecorder() as recorder:
        metric.update(pred, gt)
    where = {place.split(":")[0] for _, place in recorder.hits}
    assert {op for op, _ in recorder.hits} >= {"nonzero", "_local_scalar_dense"}
    assert where <= {"ops/thinning.py", "ops/contours.py", "ops/components.py", "ops/union_find.py",
                     "ops/polyline.py", "functional/sod/hce_regions.py"}, where
    assert metric.compute().item() == _cpu_values("pysodmetrics")[-10].item()


def test_short_thinning_budget_raises_never_a_wrong_number(monkeypatch):
    monkeypatch.setattr(thinning, "thinning_budget", lambda height, width: 0)
    values = hce_per_image(PREDS[-10:-7], GTS[-10:-7], normalize=True, engine="fixed")
    # the wires are their own skeleton (nothing to remove: exact); fences and text are not
    assert torch.isnan(values).tolist() == [False, True, True]
    assert values[0] == _cpu_values("pysodmetrics")[-10]
    with pytest.raises(RuntimeError, match='engine="data_sized"'):
        hce(PREDS[-10:-7], GTS[-10:-7], normalize=True, engine="fixed")
    metric = HCE(normalize=True, engine="fixed")
    metric.update(PREDS[-9], GTS[-9])
    with pytest.raises(RuntimeError, match="budget"):
        metric.compute()
    assert hce(PREDS[-10:-7], GTS[-10:-7], normalize=True, engine="data_sized").item() == pytest.approx(
        _cpu_values("pysodmetrics")[-10:-7].mean().item(), abs=1e-12)


def test_short_douglas_peucker_budget_raises(monkeypatch):
    monkeypatch.setattr(polyline, "DP_LEVELS", 0)
    values = hce_per_image(PREDS[-10:], GTS[-10:], normalize=True, engine="fixed")
    expected = _cpu_values("pysodmetrics")[-10:]
    assert torch.isnan(values).any()
    assert torch.equal(values[~torch.isnan(values)], expected[~torch.isnan(values)])  # the others are exact


def test_an_empty_batch_of_frames():
    gt = torch.zeros(2, 9, 13, dtype=torch.bool)
    assert hce_per_image(gt.float(), gt, engine="fixed").tolist() == [0.0, 0.0]
    pred = torch.ones(2, 9, 13)
    assert torch.equal(hce_per_image(pred, gt, protocol="pysodmetrics", engine="fixed"),
                       torch.tensor([1.0, 1.0], dtype=torch.float64))  # the whole frame is one FP region


def test_the_deprecated_allow_host_sync_must_be_a_bool():
    with pytest.raises(TypeError, match="allow_host_sync"):
        HCE(allow_host_sync=1)
    with pytest.raises(TypeError, match="allow_host_sync"):
        hce(torch.zeros(3, 3), torch.zeros(3, 3), allow_host_sync="yes")


def test_blocks_of_images_give_the_same_values(monkeypatch):
    """Large groups go through the sync-free path in blocks of images (memory); the values do not change."""
    pred = torch.stack([p for p in PREDS[-10:] if p.shape == (41, 67)])
    gt = torch.stack([g for g in GTS[-10:] if g.shape == (41, 67)])
    whole = hce_per_image(pred, gt, normalize=True, engine="fixed")
    monkeypatch.setattr(hce_module, "FIXED_PIXELS_PER_CALL", 2 * 41 * 67)
    assert torch.equal(hce_per_image(pred, gt, normalize=True, engine="fixed"), whole)
    assert pred.shape[0] == 5
