"""FMeasure, EMeasure and SMeasure: the shared tester, shared compute-group state, DDP, curves and plot."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from torchmetrics import MetricCollection

import nobg_metrics as nm
from nobg_metrics import functional as F
from tests.helpers.data import as_tensors, sod_pairs
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric
from tests.sod.test_smeasure import FixedSmeasure, per_image
from tests.sod.test_sod_curves import reference

MODES = ("max", "mean", "adaptive")
FUNCTIONS = {("f", "max"): F.f_measure_max, ("f", "mean"): F.f_measure_mean, ("f", "adaptive"): F.f_measure_adaptive,
             ("e", "max"): F.e_measure_max, ("e", "mean"): F.e_measure_mean, ("e", "adaptive"): F.e_measure_adaptive}


def _samples(seed=0, count=20):
    preds, gts = as_tensors(sod_pairs(seed)[:count])
    return list(zip(preds, gts))


def _expected(samples, measure, mode):
    values = reference([(p.numpy(), g.numpy()) for p, g in samples], True)
    if mode == "adaptive":
        return float(values[f"{measure}_adaptive"])
    curve = values["f_measure" if measure == "f" else "e_measure"]
    return float(curve.max() if mode == "max" else curve.mean())


@pytest.mark.parametrize(("measure", "mode"), [("f", "max"), ("f", "adaptive"), ("e", "mean"), ("e", "max")])
def test_curve_classes_pass_the_shared_tester(measure, mode):
    samples = _samples(1)
    cls = nm.FMeasure if measure == "f" else nm.EMeasure
    make = functools.partial(cls, mode, normalize=True, empty_gt="reference")
    function = functools.partial(FUNCTIONS[(measure, mode)], normalize=True, empty_gt="reference")
    check_metric(make, samples, _expected(samples, measure, mode), functional=function)


def test_smeasure_passes_the_shared_tester():
    samples = [s for s in _samples(3, 30) if s[0].min() != s[0].max()]
    expected = per_image(FixedSmeasure, [(p.numpy(), g.numpy()) for p, g in samples], True).mean()
    check_metric(functools.partial(nm.SMeasure, normalize=True), samples, expected,
                 functional=functools.partial(F.s_measure, normalize=True))


def test_compute_group_of_all_six_equals_separate_metrics():
    samples = _samples(2)
    metrics = {f"{m}_{mode}": cls(mode, normalize=True) for m, cls in (("F", nm.FMeasure), ("E", nm.EMeasure))
               for mode in MODES}
    collection = MetricCollection(metrics, compute_groups=[list(metrics)])
    separate = {name: metric.clone() for name, metric in metrics.items()}
    for start in range(0, len(samples), 4):
        batch = [list(c) for c in zip(*samples[start:start + 4])]
        collection.update(*batch)
        for metric in separate.values():
            metric.update(*batch)
    values = collection.compute()
    for name, metric in separate.items():
        assert torch.equal(values[name], metric.compute()), name
    states = {name: dict(m.metric_state) for name, m in metrics.items()}
    assert len({tuple((k, tuple(v.shape)) for k, v in s.items()) for s in states.values()}) == 1


def test_curves_and_plot():
    samples = _samples(4, 10)
    metric = nm.FMeasure(normalize=True, num_thresholds=64)
    metric.update(*[list(c) for c in zip(*samples)])
    curves = metric.curves()
    assert all(t.shape == (64,) for t in curves)
    assert curves.f_measure.max() == metric.compute()
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    figure, axes = metric.plot()
    assert len(axes) == 2
    matplotlib.pyplot.close(figure)


def test_state_is_fixed_size_float64_and_survives_half():
    metric = nm.EMeasure("mean", num_thresholds=32).half()
    states = metric.statistics()
    assert sorted(states) == ["count", "e_measure_adaptive", "e_measure_curve", "f_measure_adaptive",
                              "f_measure_curve", "precision_curve", "recall_curve"]
    assert all(states[f"{name}_curve"].dtype == torch.float64 and states[f"{name}_curve"].shape == (32,)
               for name in ("precision", "recall", "f_measure", "e_measure"))
    assert states["count"].dtype == torch.int64
    with pytest.raises(ValueError, match="mode"):
        nm.FMeasure("median")
    with pytest.raises(ValueError, match="alpha"):
        nm.SMeasure(alpha=-0.1)


def test_empty_gt_agreement_default():
    gt = torch.zeros(1, 6, 6, dtype=torch.bool)
    metric = nm.FMeasure("max")
    metric.update(torch.zeros(1, 6, 6), gt)
    assert metric.compute().item() == 1.0
    assert np.isclose(nm.SMeasure()(torch.zeros(1, 6, 6), gt).item(), 1.0)


@pytest.mark.slow
def test_two_process_ddp():
    samples = _samples(5, 9)
    check_ddp(functools.partial(nm.FMeasure, "max", normalize=True), samples)
