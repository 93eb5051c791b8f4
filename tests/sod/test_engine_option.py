"""HCE's and CCm's ``engine=`` switch, functional and class: ``"fixed"`` (the sync-free path) gives the values of
``"data_sized"`` on CPU; the deprecated ``allow_host_sync=True`` still runs the data-sized path and warns; a value
outside ``"auto" | "data_sized" | "fixed"`` is a ``ValueError`` naming ``engine``."""

from __future__ import annotations

import functools
import warnings

import pytest
import torch

from nobg_metrics.functional.sod.context_measure import camouflage_context_measure
from nobg_metrics.functional.sod.hce import hce, hce_per_image
from nobg_metrics.metrics.sod.context_measure import CamouflageContextMeasure
from nobg_metrics.metrics.sod.hce import HCE


@functools.cache
def _hce_pair() -> tuple[torch.Tensor, torch.Tensor]:
    """Two 30 x 41 images: a square object with a hole and a stray blob in the prediction, and a ring."""
    gt = torch.zeros(2, 30, 41, dtype=torch.bool)
    gt[0, 4:26, 5:30] = True
    gt[1, 3:27, 6:36] = True
    gt[1, 9:21, 14:28] = False
    pred = gt.double()
    pred[0, 12:15, 12:15] = 0.0
    pred[0, 27:29, 33:38] = 0.9
    pred[1, 2:5, 6:20] = 0.7
    return pred, gt


@functools.cache
def _ccm_triple() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two 40 x 40 scenes: a grey object on a darker grey, and a textured one."""
    gt = torch.zeros(2, 40, 40, dtype=torch.bool)
    gt[:, 10:30, 12:28] = True
    image = torch.full((2, 3, 40, 40), 90, dtype=torch.uint8)
    image[0][:, gt[0]] = 100
    image[1] = torch.randint(0, 256, (3, 40, 40), generator=torch.Generator().manual_seed(3), dtype=torch.uint8)
    pred = gt.double() * 0.8
    pred[:, 5:9, 5:15] = 0.4
    return pred, gt, image


@pytest.mark.parametrize("engine", ["fixed", "auto"])
def test_hce_engines_give_the_data_sized_values(engine):
    pred, gt = _hce_pair()
    expected = hce_per_image(pred, gt, engine="data_sized")
    assert expected.sum() > 0  # not vacuous: error regions and control points
    assert torch.equal(hce_per_image(pred, gt, engine=engine), expected)
    assert hce(pred, gt, engine=engine) == hce(pred, gt, engine="data_sized")
    metric = HCE(engine=engine)
    metric.update(pred, gt)
    assert metric.compute() == expected.mean()


@pytest.mark.parametrize("engine", ["fixed", "auto"])
def test_ccm_engines_give_the_data_sized_values(engine):
    pred, gt, image = _ccm_triple()
    expected = camouflage_context_measure(pred, gt, image, engine="data_sized")
    assert 0 < expected < 1
    got = camouflage_context_measure(pred, gt, image, engine=engine)
    assert abs(got.item() - expected.item()) <= 1e-12
    metric = CamouflageContextMeasure(engine=engine)
    metric.update(pred, gt, image)
    assert abs(metric.compute().item() - expected.item()) <= 1e-12


def test_allow_host_sync_is_the_deprecated_spelling_of_the_data_sized_engine():
    pred, gt = _hce_pair()
    with pytest.warns(DeprecationWarning, match='engine=\'data_sized\''):
        value = hce(pred, gt, allow_host_sync=True)
    assert value == hce(pred, gt, engine="data_sized")
    with pytest.warns(DeprecationWarning, match="allow_host_sync"):
        metric = HCE(allow_host_sync=True)
    assert metric.engine == "data_sized"
    with pytest.warns(DeprecationWarning, match="allow_host_sync"):
        assert HCE(allow_host_sync=False).engine == "auto"
    pred, gt, image = _ccm_triple()
    with pytest.warns(DeprecationWarning, match="allow_host_sync"):
        value = camouflage_context_measure(pred, gt, image, allow_host_sync=True)
    assert value == camouflage_context_measure(pred, gt, image, engine="data_sized")
    with pytest.warns(DeprecationWarning, match="allow_host_sync"):
        assert CamouflageContextMeasure(allow_host_sync=True).engine == "data_sized"


def test_no_warning_without_the_old_keyword():
    pred, gt = _hce_pair()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        hce(pred, gt, engine="fixed")
        HCE(engine="data_sized")
        CamouflageContextMeasure()


def test_a_contradiction_is_refused():
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="contradicts"):
        HCE(allow_host_sync=True, engine="fixed")
    pred, gt, image = _ccm_triple()
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="contradicts"):
        camouflage_context_measure(pred, gt, image, allow_host_sync=True, engine="fixed")


def test_a_bad_engine_is_a_value_error_naming_engine():
    pred, gt = _hce_pair()
    ccm_pred, ccm_gt, image = _ccm_triple()
    calls = [lambda: hce(pred, gt, engine="gpu"), lambda: hce_per_image(pred, gt, engine="sync"),
             lambda: HCE(engine="data-sized"), lambda: CamouflageContextMeasure(engine="fast"),
             lambda: camouflage_context_measure(ccm_pred, ccm_gt, image, engine=None)]
    for call in calls:
        with pytest.raises(ValueError, match="`engine`"):
            call()
