"""In a collection each input tensor's value checks run once per call; they still reject what they must."""

from __future__ import annotations

import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import _inputs


@pytest.fixture
def scans(monkeypatch):
    calls: list[str] = []
    scan_values, scan_trimap = _inputs._scan_values, _inputs._scan_trimap

    def counted_values(name, tensor):
        calls.append(name)
        scan_values(name, tensor)

    def counted_trimap(trimap, name):
        calls.append(name)
        scan_trimap(trimap, name)

    monkeypatch.setattr(_inputs, "_scan_values", counted_values)
    monkeypatch.setattr(_inputs, "_scan_trimap", counted_trimap)
    return calls


def _batch():
    pred = torch.rand(2, 1, 24, 20, dtype=torch.float64)
    gt = torch.rand(2, 1, 24, 20) > 0.5
    trimap = torch.full((2, 1, 24, 20), 128, dtype=torch.uint8)
    return pred, gt, trimap


def test_the_expensive_tier_checks_each_input_once_per_update(scans):
    pred, gt, trimap = _batch()
    collection = nm.make_collection("expensive")
    collection.update(pred, gt, trimap=trimap)  # first update: every member runs (compute groups are formed)
    scans.clear()
    collection.update(pred, gt, trimap=trimap)
    assert sorted(scans) == ["pred", "trimap"]  # float gt is checked too; a bool gt has no values to check
    scans.clear()
    collection(pred, gt, trimap=trimap)  # forward: the same
    assert sorted(scans) == ["pred", "trimap"]


def test_a_metric_alone_checks_every_call(scans):
    pred, gt, _ = _batch()
    metric = nm.MAE()
    metric.update(pred, gt)
    metric.update(pred, gt)
    assert scans == ["pred", "pred"]


def test_a_list_is_checked_element_by_element_and_named(scans):
    pred, gt, _ = _batch()
    collection = nm.make_collection("medium")
    collection.update(list(pred), list(gt))
    scans.clear()
    collection.update(list(pred), list(gt))
    assert sorted(scans) == ["pred[0]", "pred[1]"]


def test_a_tensor_written_in_place_is_checked_again():
    pred, gt, trimap = _batch()
    first = pred.clone()
    collection = nm.make_collection("expensive")
    collection.update(pred, gt, trimap=trimap)
    pred[0, 0, 3, 4] = 1.5  # in place: the version counter moves, the earlier pass does not count
    with pytest.raises(ValueError, match=r"`pred` float values must lie in \[0, 1\]"):
        collection.update(pred, gt, trimap=trimap)
    assert collection["mae"].update_count == 1  # the rejected batch counted nowhere
    assert collection["mae"].compute() == nm.functional.mae(first, gt)


def test_bad_values_are_rejected_in_every_member_position():
    pred, gt, trimap = _batch()
    bad_trimap = trimap.clone()
    bad_trimap[1, 0, 2, 2] = 100
    collection = nm.make_collection("expensive")
    collection.update(pred, gt, trimap=trimap)
    with pytest.raises(ValueError, match="trimap"):
        collection.update(pred, gt, trimap=bad_trimap)
    nan = pred.clone()
    nan[1, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="finite"):
        collection.update(nan, gt, trimap=trimap)
