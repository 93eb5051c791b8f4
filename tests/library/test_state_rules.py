"""State rules every metric obeys: fixed-size summed states whose dtype survives casts, and the
empty-gt policies; plus property tests (values in range, perfect scores best, symmetry)."""

from __future__ import annotations

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
        assert set(metric.metric_state) <= set(metric.state_dict())  # every state persistent
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
