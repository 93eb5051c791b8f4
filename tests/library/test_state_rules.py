"""State rules every metric obeys: fixed-size summed states whose dtype survives casts, not persistent unless
``persistent(True)`` (which every copy keeps), loads that count as updates only when they bring data, and the
empty-gt policies; plus property tests (values in range, perfect scores best, symmetry)."""

from __future__ import annotations

import pickle
import warnings

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import nobg_metrics as nm
from nobg_metrics import functional as F

CHEAP = [nm.MAE, nm.IoU, nm.Dice, nm.Accuracy, nm.BER, nm.SAD, nm.MSE]


def test_states_are_fixed_size_sums_with_protected_dtypes():
    for cls in CHEAP:
        metric = cls()
        shapes = {name: getattr(metric, name).shape for name in metric.metric_state}
        for _ in range(3):
            metric.update(torch.rand(2, 5, 7), torch.rand(2, 5, 7))
        assert {name: getattr(metric, name).shape for name in metric.metric_state} == shapes
        assert not set(metric.metric_state) & set(metric.state_dict())  # no state persistent by default
        value = metric.compute()
        dtypes = {name: getattr(metric, name).dtype for name in metric.metric_state}
        assert set(dtypes.values()) <= {torch.float64, torch.int64}
        for cast in (lambda m: m.half(), lambda m: m.to(torch.float16), lambda m: m.set_dtype(torch.bfloat16),
                     lambda m: m.float()):
            metric = cast(metric)
            assert {name: getattr(metric, name).dtype for name in metric.metric_state} == dtypes, cls.__name__
        metric.compute_with_cache = False
        assert torch.equal(metric.compute(), value)
        assert metric.full_state_update is False and metric.higher_is_better is not None


def _every_metric() -> list[nm.metrics.base.NobgMetric]:
    """One instance of every metric class the package exports (the panoptic ones with a things / stuffs split)."""
    from nobg_metrics.metrics.base import NobgMetric

    built = []
    for name in nm.metrics.__all__:
        cls = getattr(nm.metrics, name)
        if not (isinstance(cls, type) and issubclass(cls, NobgMetric)):
            continue
        for arguments in ({}, {"things": {0, 1}, "stuffs": {2}}):
            try:
                built.append(cls(**arguments))
                break
            except (TypeError, AttributeError, ValueError):  # a base class, or required arguments
                continue
    return built


def test_no_state_is_persistent_by_default_and_persistent_true_saves_every_state():
    metrics = _every_metric()
    assert len(metrics) > 30
    for metric in metrics:
        name = type(metric).__name__
        assert metric.state_dict() == {}, name  # as torchmetrics: a model checkpoint carries no metric state
        metric.persistent(True)
        for copy in (metric, metric.clone(), pickle.loads(pickle.dumps(metric)), metric.to("cpu")):
            saved = set(copy.state_dict())
            assert set(copy.metric_state) <= saved, name  # the fingerprint included
            assert saved - set(copy.metric_state) <= {"_extra_state"}, name
        metric.persistent(False)
        assert metric.state_dict() == {}, name


def test_a_persistent_state_dict_restores_the_value_and_counts_as_an_update_only_with_data():
    pred, gt = torch.rand(2, 5, 7), torch.rand(2, 5, 7) > 0.5
    for cls in CHEAP:
        source = cls()
        source.update(pred, gt)
        source.persistent(True)
        loaded = cls()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "compute called before update" would raise
            loaded.load_state_dict(source.state_dict())
            assert torch.equal(loaded.compute(), source.compute()), cls.__name__
        fresh = cls()
        fresh.persistent(True)
        emptied = cls()
        emptied.update(pred, gt)
        emptied.compute()  # a cached value the load must drop
        emptied.load_state_dict(fresh.state_dict())  # states of a fresh metric: nothing to compute from
        assert not emptied.update_called
        with pytest.warns(UserWarning, match="before the ``update``"):
            emptied.compute()


def test_a_checkpoint_without_states_loads_and_a_persistent_metric_reports_them_missing():
    source = nm.MAE()
    source.update(torch.rand(1, 4, 4), torch.rand(1, 4, 4) > 0.5)
    kept = nm.MAE()
    kept.update(torch.rand(1, 4, 4), torch.rand(1, 4, 4) > 0.5)
    value = kept.compute()
    kept.load_state_dict(source.state_dict())  # no states in it: nothing changes
    assert torch.equal(kept.compute(), value)
    kept.persistent(True)
    with pytest.raises(RuntimeError, match="Missing key"):
        kept.load_state_dict(source.state_dict())
    kept.load_state_dict(source.state_dict(), strict=False)
    assert torch.equal(kept.compute(), value)


def test_half_precision_predictions_are_accepted():
    pred, gt = torch.rand(2, 8, 8), torch.rand(2, 8, 8) > 0.5
    for dtype in (torch.float16, torch.bfloat16):
        assert abs(F.mae(pred.to(dtype), gt) - F.mae(pred.to(dtype).float(), gt)) < 1e-12


def test_default_policy_scores_a_perfect_empty_prediction_as_perfect():
    empty = torch.zeros(1, 6, 9)
    for function in (F.iou_metric, F.dice, F.accuracy):
        assert function(empty, empty).item() == 1.0
    assert F.ber(empty, empty).item() == 0.0 and F.mae(empty, empty).item() == 0.0
    # the reference protocol keeps the reference's guarded 0/0 stand-ins
    assert F.iou_metric(empty, empty, empty_gt="reference").item() == 0.0
    assert F.ber(empty, empty, empty_gt="reference").item() == 0.5


maps = st.integers(1, 6).flatmap(lambda h: st.integers(1, 6).flatmap(lambda w: st.tuples(
    st.lists(st.floats(0, 1), min_size=h * w, max_size=h * w), st.lists(st.booleans(), min_size=h * w, max_size=h * w),
    st.just((h, w)))))


@settings(max_examples=60, deadline=None)
@given(maps)
def test_values_in_range_and_perfect_is_best(data):
    values, mask, shape = data
    pred = torch.tensor(values, dtype=torch.float64).reshape(shape)
    gt = torch.tensor(mask).reshape(shape)
    for function in (F.iou_metric, F.dice, F.accuracy, F.ber, F.mae):
        value = function(pred, gt).item()
        assert 0.0 <= value <= 1.0
    perfect = gt.double()
    for function in (F.iou_metric, F.dice, F.accuracy):
        assert function(perfect, gt).item() == 1.0 >= function(pred, gt).item()
    for function in (F.ber, F.mae):
        assert function(perfect, gt).item() == 0.0 <= function(pred, gt).item()
    assert F.sad(perfect, perfect).item() == 0.0 and F.mse_metric(perfect, perfect).item() == 0.0


@settings(max_examples=60, deadline=None)
@given(maps)
def test_symmetric_metrics_are_symmetric(data):
    values, mask, shape = data
    a = (torch.tensor(values).reshape(shape) > 0.5).double()
    b = torch.tensor(mask).reshape(shape).double()
    # the agreement policy scores a degenerate gt differently from a degenerate prediction by design
    assume(all(0 < float(m.sum()) < m.numel() for m in (a, b)))
    for function in (F.iou_metric, F.dice, F.accuracy, F.mae, F.sad, F.mse_metric):
        assert abs(function(a, b).item() - function(b, a).item()) < 1e-12
