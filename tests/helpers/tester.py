"""The shared tester every metric goes through (after torchmetrics' ``MetricTester``).

``check_metric`` proves, for one metric factory and one list of samples, that the value does not
depend on how the data arrives: all at once or batch by batch, lists or stacked tensors, after
``reset``, pickling, ``clone``, a ``state_dict`` round trip taken mid-way (``persistent(True)``; by default a
``state_dict`` holds no state), ``merge_state``, and through ``forward``; that a rejected batch (update or
forward) changes no state; and that the functional form on a batch equals the class after one update.
``check_ddp`` (tests/helpers/ddp.py) adds the multi-process case.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

Sample = tuple[Tensor, ...]
"""One image's arguments to ``update``: ``(pred, gt)`` or ``(pred, gt, trimap)``, each (H, W)."""


def stack_runs(samples: Sequence[Sample]) -> list[tuple[Tensor, ...]]:
    """Stack consecutive equal-size samples into (B, 1, H, W) batches."""
    batches: list[list[Sample]] = []
    for sample in samples:
        if batches and batches[-1][0][0].shape == sample[0].shape:
            batches[-1].append(sample)
        else:
            batches.append([sample])
    return [tuple(torch.stack([s[i] for s in run])[:, None] for i in range(len(run[0]))) for run in batches]


def as_lists(samples: Sequence[Sample]) -> tuple[list[Tensor], ...]:
    """The samples as one list per argument (mixed sizes allowed)."""
    return tuple(list(column) for column in zip(*samples))


def saved(metric: Metric) -> dict[str, Any]:
    """``metric``'s ``state_dict`` with every state in it, as a mid-epoch checkpoint takes it: states are not
    persistent by default (torchmetrics' rule), ``persistent(True)`` puts them in (and stays set on ``metric``)."""
    metric.persistent(True)
    return metric.state_dict()


def _close(actual: Tensor, expected: Tensor | float, atol: float, what: str) -> None:
    expected = torch.as_tensor(expected, dtype=torch.float64)
    actual = torch.as_tensor(actual).double().cpu()
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    diff = (actual - expected).abs().max().item() if actual.numel() else 0.0
    assert diff <= atol, f"{what}: {actual} != {expected} (|diff| = {diff:.3g} > {atol})"


def _updated(make_metric: Callable[[], Metric], chunks: Sequence[Sequence[Sample]]) -> Metric:
    metric = make_metric()
    for chunk in chunks:
        if chunk:
            metric.update(*as_lists(chunk))
    return metric


def _check_rejected_batch_changes_nothing(metric: Metric, samples: Sequence[Sample]) -> None:
    """A batch the metric rejects (``pred`` one column wider than the rest) through ``update`` and ``forward``
    leaves every state and the update counter as they were."""
    before = {name: value.clone() for name, value in metric.metric_state.items()}
    count = metric.update_count
    first = samples[0]
    bad = (torch.cat([first[0], first[0][..., :1]], dim=-1)[None], *(t[None] for t in first[1:]))
    for call in (metric.update, metric.forward):
        try:
            call(*bad)
        except ValueError:
            pass
        else:  # pragma: no cover - the contract
            raise AssertionError(f"{call.__name__} accepted mismatched shapes")
        assert metric.update_count == count, f"a rejected {call.__name__} counted an update"
        for name, value in metric.metric_state.items():
            assert torch.equal(value, before[name]), f"a rejected {call.__name__} changed state {name}"


def check_metric(
    make_metric: Callable[[], Metric],
    samples: Sequence[Sample],
    expected: Tensor | float | None = None,
    *,
    functional: Callable[..., Tensor] | None = None,
    atol: float = 1e-6,
    invariance_atol: float = 1e-9,
) -> Tensor:
    """Run every state and batching check on one metric and return its value on all ``samples``.

    Args:
        make_metric: builds a fresh metric (with its options).
        samples: per-image arguments, each (H, W); mixed sizes allowed.
        expected: the reference value on all samples (skipped when ``None``).
        functional: the functional form with the same options; ``functional(*batch)`` must equal the
            class after one update with that batch.
        atol: tolerance against ``expected``.
        invariance_atol: tolerance between the different ways of feeding the same data.
    """
    half = len(samples) // 2
    value = _updated(make_metric, [samples]).compute()
    if expected is not None:
        _close(value, expected, atol, "all at once vs reference")

    def same(metric: Metric, what: str) -> None:
        _close(metric.compute(), value, invariance_atol, what)

    same(_updated(make_metric, [[s] for s in samples]), "image by image")
    same(_updated(make_metric, [samples[i:i + 3] for i in range(0, len(samples), 3)]), "batches of 3")

    stacked = make_metric()
    for batch in stack_runs(samples):
        stacked.update(*batch)
    same(stacked, "stacked tensors")

    metric = _updated(make_metric, [samples])
    metric.reset()
    metric.update(*as_lists(samples))
    same(metric, "after reset")

    first = _updated(make_metric, [samples[:half]])
    _check_rejected_batch_changes_nothing(first, samples)
    for name, restore in [
        ("pickle", lambda m: pickle.loads(pickle.dumps(m))),
        ("clone", lambda m: m.clone()),
    ]:
        resumed = restore(first)
        _check_rejected_batch_changes_nothing(resumed, samples)  # still transactional after a round trip
        if samples[half:]:
            resumed.update(*as_lists(samples[half:]))
        same(resumed, f"{name} mid-way")

    assert not set(first.metric_state) & set(first.state_dict()), "states are not persistent by default"
    loaded = make_metric()
    loaded.load_state_dict(saved(first))  # a mid-epoch checkpoint, into a default (not persistent) metric
    assert loaded.update_called == first.update_called, "a load that brings data counts as an update"
    if samples[half:]:
        loaded.update(*as_lists(samples[half:]))
    same(loaded, "state_dict mid-way")

    merged = _updated(make_metric, [samples[:half]])
    merged.merge_state(_updated(make_metric, [samples[half:]]))
    same(merged, "merge_state")

    forwarded = make_metric()
    for batch in stack_runs(samples):
        batch_value = forwarded(*batch)
        _close(batch_value, _updated(make_metric, [list(zip(*[b[:, 0] for b in batch]))]).compute(),
               invariance_atol, "forward's batch value")
        if functional is not None:
            _close(functional(*batch), batch_value, invariance_atol, "functional vs class on one batch")
    same(forwarded, "forward accumulation")
    return value
