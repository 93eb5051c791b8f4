"""CityscapesInstanceAP as a Metric: the value does not depend on how the images arrive (one by one, in chunks, in
another order, mixed sizes), bit for bit; reset, pickle, clone, a state_dict round trip mid-way, merge_state and
forward; a rejected batch changes nothing; the state grows with detections only and keeps its dtypes; 1 and 2 gloo
ranks (one of them empty) give bit-identical values (slow)."""

from __future__ import annotations

import functools
import pickle

import pytest
import torch

from nobg_metrics import CityscapesInstanceAP
from nobg_metrics.functional import cityscapes_instance_ap
from tests.helpers.cityscapes_data import as_torch, cityscapes_dataset
from tests.helpers.ddp import run_ddp

SIZES = [(40, 64), (40, 64), (37, 29), (40, 64), (52, 70), (37, 29)]


@functools.lru_cache(maxsize=1)
def _data():
    data = cityscapes_dataset(7, SIZES)
    data[2] = (data[2][0], [])
    return as_torch(data)


def _same(first: dict, second: dict) -> None:
    assert first.keys() == second.keys()
    for key, value in first.items():
        assert torch.equal(value.nan_to_num(-7.0), second[key].nan_to_num(-7.0)), (key, value, second[key])


def _fed(metric, preds, target, chunk: int):
    for start in range(0, len(preds), chunk):
        metric.update(preds[start:start + chunk], target[start:start + chunk])
    return metric


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_batching_order_and_restores_give_bit_identical_values(iou_type):
    preds, target = _data()
    make = functools.partial(CityscapesInstanceAP, iou_type=iou_type, dilation_ratio=0.03)
    value = _fed(make(), preds, target, len(preds)).compute()
    _same(value, cityscapes_instance_ap(preds, target, iou_type, 0.03))
    _same(value, _fed(make(), preds, target, 1).compute())
    _same(value, _fed(make(), preds[::-1], target[::-1], 4).compute())
    metric = _fed(make(), preds, target, 2)
    metric.reset()
    _same(value, _fed(metric, preds, target, 3).compute())

    half = len(preds) // 2
    first = _fed(make(), preds[:half], target[:half], 2)
    for restored in (pickle.loads(pickle.dumps(first)), first.clone()):
        _same(value, _fed(restored, preds[half:], target[half:], 2).compute())
    loaded = make()
    first.persistent(True)  # states are saved only when persistent (a mid-epoch checkpoint)
    loaded.load_state_dict(first.state_dict())
    _same(value, _fed(loaded, preds[half:], target[half:], 2).compute())
    merged = _fed(make(), preds[:half], target[:half], 5)
    merged.merge_state(_fed(make(), preds[half:], target[half:], 5))
    _same(value, merged.compute())

    forwarded = make()
    for start in range(0, len(preds), 2):
        batch = forwarded(preds[start:start + 2], target[start:start + 2])
        _same(batch, cityscapes_instance_ap(preds[start:start + 2], target[start:start + 2], iou_type, 0.03))
    _same(value, forwarded.compute())


def test_a_rejected_batch_changes_nothing():
    preds, target = _data()
    metric = _fed(CityscapesInstanceAP(), preds[:3], target[:3], 3)
    before = {name: getattr(metric, name) for name in metric._defaults}
    lengths = {name: len(value) for name, value in before.items() if isinstance(value, list)}
    value, count = metric.compute(), metric._update_count
    bad = [preds[3], {**preds[4], "labels": torch.full_like(preds[4]["labels"], 99)}]
    for call in (metric.update, metric.forward):
        with pytest.raises(ValueError, match=r'preds\[1\]\["labels"\]'):
            call(bad, target[3:5])
        assert metric._update_count == count
        for name, state in before.items():
            now = getattr(metric, name)
            if isinstance(state, list):  # the same rows (the snapshot copies the list: reset empties it in place)
                assert len(now) == lengths[name] and all(a is b for a, b in zip(now, state)), name
            else:
                assert now is state, name
    _same(value, metric.compute())


def test_state_holds_detections_only_and_keeps_its_dtypes():
    preds, target = _data()
    metric = _fed(CityscapesInstanceAP(iou_type="boundary"), preds, target, 2)
    detections = sum(p["masks"].shape[0] for p in preds)
    assert sum(t.shape[0] for t in metric.detection_scores) == detections
    assert all(t.shape[1:] == (10,) for t in metric.detection_true + metric.detection_false)
    assert metric.gt_instance_count.shape == (8,) and metric.prediction_count.shape == (8,)
    value = metric.compute()
    metric = metric.half()
    assert metric.gt_instance_count.dtype == torch.int64 and metric.detection_scores[0].dtype == torch.float64
    metric._computed = None
    _same(value, metric.compute())


def test_a_state_dict_of_other_options_or_dtypes_is_refused():
    preds, target = _data()
    fed = _fed(CityscapesInstanceAP(), preds[:2], target[:2], 2)
    fed.persistent(True)
    saved = fed.state_dict()
    with pytest.raises(ValueError, match="other options"):
        CityscapesInstanceAP(iou_type="boundary").load_state_dict(saved)
    saved["detection_true"] = [row.float() for row in saved["detection_true"]]
    with pytest.raises(ValueError, match="detection_true"):
        CityscapesInstanceAP().load_state_dict(saved)


def test_compute_without_detections_and_options_are_checked():
    metric = CityscapesInstanceAP()
    target = torch.full((1, 20, 30), 7)
    target[0, 2:15, 2:15] = 26001
    metric.update([{"masks": torch.zeros(0, 20, 30, dtype=torch.bool), "scores": torch.zeros(0),
                    "labels": torch.zeros(0, dtype=torch.int64)}], target)
    result = metric.compute()
    assert result["ap_per_class"][2].item() == 0.0 and result["ap"].item() == 0.0
    for options, error in (({"iou_type": "mask"}, ValueError), ({"dilation_ratio": -1.0}, ValueError),
                           ({"min_region_size": 1.5}, TypeError)):
        with pytest.raises(error):
            CityscapesInstanceAP(**options)


def _ddp_worker(rank: int, world_size: int, iou_type: str, shares) -> dict[str, torch.Tensor]:
    metric = CityscapesInstanceAP(iou_type=iou_type, dilation_ratio=0.03)
    preds, target = shares[rank]
    for start in range(0, len(preds), 2):
        metric.update(preds[start:start + 2], target[start:start + 2])
    return {key: value.clone() for key, value in metric.compute().items()}


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_one_and_two_ranks_are_bit_identical(iou_type):
    preds, target = _data()
    single = _fed(CityscapesInstanceAP(iou_type=iou_type, dilation_ratio=0.03), preds, target, 2).compute()
    for cut in (2, 0):
        shares = [(preds[:cut], target[:cut]), (preds[cut:], target[cut:])]
        for result in run_ddp(_ddp_worker, 2, iou_type, shares):
            _same(single, result)
