"""The MeanAveragePrecision class: batching, per-class and micro values, image order, forward / merge / pickle /
state_dict, rejected batches, input and option errors, the device paths (no host sync) and the exact products."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from benchmarks.instance_data import to_coco, to_torch
from nobg_metrics import MeanAveragePrecision
from nobg_metrics.functional import mean_average_precision
from nobg_metrics.functional.instance import iou as instance_iou
from nobg_metrics.functional.instance.options import numpy_linspace
from nobg_metrics.ops import host_reads
from tests.helpers.syncs import HostSyncRecorder
from tests.instance.helpers import assert_coco_equal, coco_case, images
from tests.reference.coco_boundary_ap import run_coco

DATA = images(8, [(45, 60), (37, 53), (64, 48)], seed=40)


def _updated(metric, preds, target, step):
    for start in range(0, len(preds), step):
        metric.update(preds[start:start + step], target[start:start + step])
    return metric


def _equal(first, second):
    assert first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_batches_equal_one_call(iou_type):
    preds, target = to_torch(DATA)
    whole = mean_average_precision(preds, target, iou_type=iou_type, class_metrics=True)
    for step in (1, 3):
        metric = MeanAveragePrecision(iou_type=iou_type, class_metrics=True)
        _equal(_updated(metric, preds, target, step).compute(), whole)


def test_per_class_values_match_a_per_category_evaluation():
    """torchmetrics' per-class values: COCOeval with ``catIds = [c]``, stats[0] and stats[8]."""
    preds, target = to_torch(DATA)
    ours = mean_average_precision(preds, target, iou_type="boundary", class_metrics=True)
    dataset, results = to_coco(DATA, categories=5)
    for index, category in enumerate(ours["classes"].tolist()):
        ev = run_coco(dataset, results, "boundary", cat_ids=[category])
        precision, recall = ev.eval["precision"][:, :, :, 0, -1], ev.eval["recall"][:, :, 0, -1]
        expected_map = np.mean(precision[precision > -1]) if (precision > -1).any() else -1.0
        expected_mar = np.mean(recall[recall > -1]) if (recall > -1).any() else -1.0
        assert float(ours["map_per_class"][index]) == expected_map
        assert float(ours["mar_100_per_class"][index]) == expected_mar


def test_micro_average_pools_the_categories():
    """torchmetrics' micro average: every label set to one category before the evaluation."""
    merged = images(8, [(45, 60), (37, 53), (64, 48)], seed=40)
    for image in merged:
        image.gt_labels[:] = 0
        image.dt_labels[:] = 0
    preds, target = to_torch(DATA)
    ours = mean_average_precision(preds, target, iou_type="boundary", average="micro", extended_summary=True,
                                  class_metrics=True)
    pooled, ev = coco_case(merged, "boundary")
    assert_coco_equal({**ours, "classes": pooled["classes"]}, ev)
    macro = mean_average_precision(preds, target, iou_type="boundary", class_metrics=True)
    assert torch.equal(ours["map_per_class"], macro["map_per_class"])
    assert torch.equal(ours["classes"], macro["classes"])


def test_image_ids_order_ties_whatever_the_arrival_order():
    preds, target = to_torch(DATA, image_ids=True)
    ordered = mean_average_precision(preds, target, iou_type="boundary")
    order = [5, 2, 7, 0, 3, 1, 6, 4]
    shuffled = mean_average_precision([preds[i] for i in order], [target[i] for i in order], iou_type="boundary")
    _equal(shuffled, ordered)
    plain_preds, plain_target = to_torch(DATA)
    _equal(mean_average_precision(plain_preds, plain_target, iou_type="boundary"), ordered)


def test_forward_merge_state_reset():
    preds, target = to_torch(DATA)
    metric = MeanAveragePrecision(iou_type="boundary")
    first = metric(preds[:4], target[:4])
    _equal(first, mean_average_precision(preds[:4], target[:4], iou_type="boundary"))
    metric(preds[4:], target[4:])
    _equal(metric.compute(), mean_average_precision(preds, target, iou_type="boundary"))
    left = _updated(MeanAveragePrecision(iou_type="boundary"), preds, target, 8)
    right = MeanAveragePrecision(iou_type="boundary")
    right.update(preds[:3], target[:3])
    other = MeanAveragePrecision(iou_type="boundary")
    other.update(preds[3:], target[3:])
    other.merge_state(right)  # the incoming images come first
    _equal(other.compute(), left.compute())
    left.reset()
    assert float(left.image_count) == 0 and left.det_scores == []


def test_pickle_and_state_dict_round_trip():
    preds, target = to_torch(DATA)
    metric = _updated(MeanAveragePrecision(iou_type="boundary", class_metrics=True), preds, target, 3)
    expected = metric.compute()
    _equal(pickle.loads(pickle.dumps(metric)).compute(), expected)
    fresh = MeanAveragePrecision(iou_type="boundary", class_metrics=True)
    metric.persistent(True)  # states are saved only when persistent (a mid-epoch checkpoint)
    fresh.load_state_dict(metric.state_dict())
    _equal(fresh.compute(), expected)
    with pytest.raises(ValueError, match="other options"):
        MeanAveragePrecision(iou_type="segm").load_state_dict(metric.state_dict())


def test_rejected_batch_changes_nothing():
    preds, target = to_torch(DATA)
    metric = _updated(MeanAveragePrecision(iou_type="boundary"), preds[:4], target[:4], 4)
    expected = metric.compute()
    bad = [dict(target[4]), {**target[5], "masks": target[5]["masks"].to(torch.complex64)}]
    with pytest.raises(TypeError, match=r'target\[1\]\["masks"\]'):
        metric.update(preds[4:6], bad)
    _equal(metric.compute(), expected)


def _one(**changes):
    masks = torch.zeros(2, 5, 6, dtype=torch.bool)
    pred = {"masks": masks, "scores": torch.tensor([0.5, 0.4]), "labels": torch.tensor([1, 2])}
    gt = {"masks": masks[:1], "labels": torch.tensor([1])}
    for key, value in changes.items():
        side, name = key.split("__")
        (pred if side == "pred" else gt)[name] = value
    return [pred], [gt]


@pytest.mark.parametrize("changes, error, message", [
    ({"pred__masks": torch.zeros(2, 5, 6, dtype=torch.complex64)}, TypeError,
     r'preds\[0\]\["masks"\]` must be a bool tensor'),
    ({"pred__masks": torch.zeros(2, 30, dtype=torch.bool)}, ValueError, r"shape \(N, H, W\)"),
    ({"pred__masks": torch.zeros(2, 5, 7, dtype=torch.bool)}, ValueError, "the same image size"),
    ({"pred__scores": torch.tensor([0.5])}, ValueError, r'preds\[0\]\["scores"\]` must have shape \(2,\)'),
    ({"pred__scores": torch.tensor([0.5, float("nan")])}, ValueError, "must be finite"),
    ({"pred__labels": torch.tensor([1.0, 2.0])}, TypeError, "integer"),
    ({"gt__iscrowd": torch.tensor([2])}, ValueError, "0 or 1"),
    ({"gt__boxes_typo": torch.tensor([2])}, ValueError, "unknown keys"),
    ({"gt__image_id": torch.tensor([1.5])}, TypeError, "image_id"),
])
def test_input_errors_name_the_argument(changes, error, message):
    preds, target = _one(**changes)
    with pytest.raises(error, match=message):
        mean_average_precision(preds, target, iou_type="segm")


def test_lvis_lists_may_be_python_lists():
    preds, target = _one()
    as_lists = mean_average_precision(preds,
                                      [{**target[0], "neg_category_ids": [2], "not_exhaustive_category_ids": []}],
                                      protocol="lvis", iou_type="segm")
    as_tensors = mean_average_precision(preds, [{**target[0], "neg_category_ids": torch.tensor([2]),
                                                 "not_exhaustive_category_ids": torch.zeros(0, dtype=torch.int64)}],
                                        protocol="lvis", iou_type="segm")
    _equal(as_lists, as_tensors)
    with pytest.raises(TypeError, match="neg_category_ids"):
        mean_average_precision(preds, [{**target[0], "neg_category_ids": [1.5]}], protocol="lvis", iou_type="segm")


def test_structure_errors():
    preds, target = _one()
    with pytest.raises(ValueError, match="same length"):
        mean_average_precision(preds, target + target, iou_type="segm")
    with pytest.raises(ValueError, match="must have the key 'labels'"):
        mean_average_precision(preds, [{"masks": target[0]["masks"]}], iou_type="segm")
    with pytest.raises(TypeError, match="list of dicts"):
        mean_average_precision(preds[0], target[0], iou_type="segm")
    with pytest.raises(ValueError, match="every image or for none"):
        mean_average_precision(preds * 2, [{**target[0], "image_id": 3}, target[0]], iou_type="segm")
    metric = MeanAveragePrecision(iou_type="segm")
    metric.update(preds, [{**target[0], "image_id": 3}])
    metric.update(preds, [{**target[0], "image_id": 3}])
    with pytest.raises(ValueError, match="must be unique"):
        metric.compute()


@pytest.mark.parametrize("options, message", [
    ({"iou_type": "mask"}, "iou_type"), ({"protocol": "voc"}, "protocol"), ({"average": "weighted"}, "average"),
    ({"protocol": "lvis", "average": "micro"}, "micro"), ({"category_frequencies": {1: "r"}}, "LVIS option"),
    ({"protocol": "lvis", "category_frequencies": {1: "x"}}, r"category_frequencies\[1\]"),
    ({"max_detection_thresholds": [10, 10, 100]}, "repeat"), ({"max_detection_thresholds": [0, 10, 100]}, ">= 1"),
    ({"max_detection_thresholds": [1, 10]}, "should have length 3"),
    ({"max_detection_thresholds": [1, 10, 100, 300]}, "should have length 3"),
    ({"protocol": "lvis", "max_detection_thresholds": [100, 300]}, "one cap per image"),
    ({"iou_thresholds": [0.5, 1.5]}, "<= 1"), ({"rec_thresholds": []}, "non-empty"),
    ({"dilation_ratio": -0.1}, "dilation_ratio"), ({"class_metrics": 1}, "bool"), ({"backend": "x"}, "backend"),
    ({"engine": "gpu"}, "`engine` must be one of"),
])
def test_option_errors(options, message):
    with pytest.raises((ValueError, TypeError), match=message):
        MeanAveragePrecision(**options)


@pytest.mark.parametrize("name, value, expected", [
    ("box_format", "xxyy", "('xyxy', 'xywh', 'cxcywh')"),
    ("backend", "coco", "('pycocotools', 'faster_coco_eval')"),
])
def test_box_format_and_backend_outside_their_choices_are_refused(name, value, expected):
    with pytest.raises(ValueError) as error:
        MeanAveragePrecision(**{name: value})
    assert str(error.value) == f"`{name}` must be one of {expected}, got {value!r}"


@pytest.mark.parametrize("box_format, backend", [("xywh", "faster_coco_eval"), ("cxcywh", "pycocotools")])
def test_box_format_and_backend_change_no_mask_value(box_format, backend):
    preds, target = to_torch(DATA)
    default = _updated(MeanAveragePrecision(iou_type="segm"), preds, target, 8).compute()
    metric = MeanAveragePrecision(box_format=box_format, iou_type="segm", backend=backend)
    assert (metric.box_format, metric.backend) == (box_format, backend)
    _equal(_updated(metric, preds, target, 8).compute(), default)


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_device_paths_equal_and_make_no_host_sync(iou_type, monkeypatch):
    preds, target = to_torch(DATA[:5])
    expected = mean_average_precision(preds, target, iou_type=iou_type, average="micro", class_metrics=True)
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)  # the ops' own "auto" engines, as on CUDA
    monkeypatch.setattr(instance_iou, "_int_mm_available", lambda tensor: False)
    metric = MeanAveragePrecision(iou_type=iou_type, average="micro", class_metrics=True, validate_args=False,
                                  engine="fixed")
    metric.update(preds[:2], target[:2])  # warm-up: constants are made once per device
    with HostSyncRecorder() as recorder:
        metric.update(preds[2:], target[2:])
    assert not recorder.hits, recorder.hits
    _equal(metric.compute(), expected)


def test_float_products_equal_integer_products(monkeypatch):
    masks = torch.rand(7, 33, 70, generator=torch.Generator().manual_seed(1)) > 0.4
    first, second = masks[:4].flatten(1), masks[4:].flatten(1)
    exact = (first[:, None] & second[None]).sum(-1)
    assert torch.equal(instance_iou.pairwise_counts(first, second), exact)
    assert torch.equal(instance_iou.mask_counts(first), first.sum(1))
    monkeypatch.setattr(instance_iou, "_int_mm_available", lambda tensor: False)  # the float path, in blocks
    monkeypatch.setattr(instance_iou, "_FLOAT_EXACT_PIXELS", 100)
    assert torch.equal(instance_iou.pairwise_counts(first, second), exact)
    assert torch.equal(instance_iou.mask_counts(first), first.sum(1))


@pytest.mark.parametrize("start, stop, num", [(0.5, 0.95, 10), (0.0, 1.0, 101), (0.1, 0.3, 7), (0.2, 0.2, 3),
                                              (0.0, 1.0, 1)])
def test_numpy_linspace(start, stop, num):
    assert list(numpy_linspace(start, stop, num)) == np.linspace(start, stop, num).tolist()
