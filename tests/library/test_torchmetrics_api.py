"""The torchmetrics behaviours nobg_metrics.metrics.torchmetrics_api relies on: each test fails loudly when a
torchmetrics release changes one (CI runs them against the oldest and the newest supported torchmetrics)."""

from __future__ import annotations

import pytest
import torch
from torchmetrics import Metric
from torchmetrics.aggregation import SumMetric

import nobg_metrics as nm
from nobg_metrics.metrics import torchmetrics_api as api


class _Failing(Metric):
    full_state_update = False

    def __init__(self) -> None:
        super().__init__()
        self.add_state("total", torch.zeros(()), dist_reduce_fx="sum")

    def update(self, value: torch.Tensor) -> None:
        if value < 0:
            raise ValueError("negative")
        self.total = self.total + value

    def compute(self) -> torch.Tensor:
        return self.total


def test_the_update_wrapper_counts_before_calling_update_and_transactional_update_takes_it_back():
    metric = _Failing()
    with pytest.raises(ValueError):
        metric.update(torch.tensor(-1.0))
    assert metric.update_count == 1  # torchmetrics counts a rejected update: the reason for transactional_update
    guarded = _Failing()
    api.transactional_update(guarded)
    guarded.update(torch.tensor(2.0))
    with pytest.raises(ValueError):
        guarded.update(torch.tensor(-1.0))
    assert guarded.update_count == 1 and guarded.compute() == 2.0


def test_count_update_clears_the_cached_value_and_counts():
    metric = SumMetric()
    metric.update(torch.tensor(1.0))
    assert metric.compute() == 1.0
    metric.sum_value = metric.sum_value + 1  # a state changed without update: the cache would hide it
    api.count_update(metric)
    assert metric.update_count == 2 and metric.compute() == 2.0
    api.set_update_count(metric, 0)
    assert not metric.update_called


def test_defaults_are_the_reset_values_and_the_forward_cache_is_what_forward_returned():
    metric = SumMetric()
    metric.update(torch.tensor(3.0))
    assert torch.equal(api.default_state(metric, "sum_value"), torch.tensor(0.0))
    value = metric(torch.tensor(2.0))
    assert metric._forward_cache is value  # what set_forward_cache writes, and Lightning reads for on_step
    api.set_forward_cache(metric, torch.tensor(7.0))
    assert metric._forward_cache == 7.0


def test_synced_flag_and_plot_helper():
    metric = nm.MAE()
    assert api.is_synced(metric) is False
    metric.update(torch.rand(1, 4, 4), torch.rand(1, 4, 4) > 0.5)
    pytest.importorskip("matplotlib")
    figure, axis = api.plot_value(metric, None, None)
    assert figure is not None and axis is not None


def test_states_are_summed_not_persistent_and_registered_in_defaults():
    metric = nm.IoU()
    assert set(metric._defaults) == set(metric.metric_state)
    assert all(metric._reductions[name] is not None for name in metric.metric_state)
    assert api.persistent_states(metric) == dict.fromkeys(metric.metric_state, False) == metric._persistent
    metric.persistent(True)  # torchmetrics' switch, read through persistent_states
    assert api.persistent_states(metric) == dict.fromkeys(metric.metric_state, True)


def test_persistent_decides_what_state_dict_saves_and_forget_computed_drops_the_cache():
    metric = SumMetric()
    assert "sum_value" not in metric.state_dict()  # torchmetrics' default: not persistent
    metric.persistent(True)
    assert "sum_value" in metric.state_dict()
    metric.update(torch.tensor(1.0))
    assert metric.compute() == 1.0
    metric.sum_value = metric.sum_value + 1
    api.forget_computed(metric)
    assert metric.compute() == 2.0 and metric.update_count == 1
