"""The "no image scored" value of every registered metric: ``compute()`` on a fresh metric, and after ``reset()``,
warns (torchmetrics' "called before the update method") and returns NaN — never an exception, whatever a metric's
own ``compute`` checks (HCE's budget, CCm's overflow, the size-invariant slots, the pooled counts)."""

from __future__ import annotations

import warnings

import pytest
import torch

from nobg_metrics import HCE, CamouflageContextMeasure, ContextMeasure, make_collection
from nobg_metrics.collection import METRIC_NAMES
from nobg_metrics.ops import host_reads


def _compute_without_images(collection: object) -> tuple[dict[str, torch.Tensor], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = collection.compute()  # type: ignore[attr-defined]
    return values, [str(w.message) for w in caught]


@pytest.mark.parametrize("stage", ["fresh", "reset"])
def test_every_registered_metric_warns_and_is_nan_without_images(stage):
    collection = make_collection(metrics=list(METRIC_NAMES))
    if stage == "reset":
        gt = torch.zeros(1, 12, 12, dtype=torch.uint8)  # PNG bytes: every entry reads them
        gt[0, 3:9, 3:9] = 255
        image = torch.zeros(1, 3, 12, 12, dtype=torch.uint8)
        collection.update(gt, gt, image=image)
        collection.reset()
    values, messages = _compute_without_images(collection)
    assert sorted(values) == sorted(METRIC_NAMES)
    not_nan = [name for name, value in values.items() if not bool(torch.isnan(value).all())]
    assert not_nan == []
    assert any("before the ``update``" in message or "before the `update`" in message for message in messages)


def test_the_expensive_tier_after_an_epoch_without_updates():
    values, messages = _compute_without_images(make_collection("expensive"))
    assert all(bool(torch.isnan(value)) for value in values.values()) and messages


@pytest.mark.parametrize("metric", [HCE, CamouflageContextMeasure])
def test_no_image_on_the_sync_free_path_is_nan_not_a_budget_error(metric, monkeypatch):
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)  # the device path's compute, on CPU
    with pytest.warns(UserWarning, match="update"):
        assert torch.isnan(metric().compute())


def test_a_nan_pixel_without_validation_is_nan_not_an_overflow():
    """With ``validate_args=False`` a NaN pixel is the caller's: CCm is NaN, as ContextMeasure is, never the sync-free
    search's overflow error (that marker is +inf)."""
    gt = torch.zeros(40, 40, dtype=torch.bool)
    gt[10:30, 12:28] = True
    image = torch.full((3, 40, 40), 90, dtype=torch.uint8)
    pred = gt.float()
    pred[0, 0] = float("nan")
    camouflage = CamouflageContextMeasure(validate_args=False)
    camouflage.update(pred, gt, image)
    plain = ContextMeasure(validate_args=False)
    plain.update(pred, gt)
    assert torch.isnan(camouflage.compute()) and torch.isnan(plain.compute())
