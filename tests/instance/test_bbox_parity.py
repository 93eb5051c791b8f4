"""Box AP (``iou_type="bbox"``) against pycocotools' ``COCOeval(iouType="bbox")`` and lvis 0.5.3's ``LVISEval``.

Generated COCO-like box sets: several categories, crowd gts, empty images, images without detections or without
gts, tied scores, zero-width boxes, boxes reaching past the image, all three area ranges, more detections than
the smallest max-detections cap. pycocotools gets the ``xywh`` torchmetrics hands it from our ``xyxy`` float64
boxes (``w = x2 - x1``).
"""

from __future__ import annotations

import contextlib
import copy
import io
from typing import Any

import numpy as np
import pytest
import torch
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from tests.instance.helpers import COCO_KEYS, assert_coco_equal, assert_lvis_equal
from tests.instance.test_bbox_data import Image, make_box_images, run_bbox, to_coco
from tests.reference.coco_boundary_ap import summary


def _coco_eval(dataset: dict[str, Any], results: list[dict[str, Any]], ignore_flags: bool = False,
               max_dets: list[int] | None = None) -> COCOeval:
    gt = COCO()
    gt.dataset = copy.deepcopy(dataset)
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        if results:
            dt = gt.loadRes(copy.deepcopy(results))
        else:
            dt = COCO()
            dt.dataset = {**copy.deepcopy(dataset), "annotations": []}
            dt.createIndex()
        ev = _IgnoreOrCrowd(gt, dt, "bbox") if ignore_flags else COCOeval(gt, dt, "bbox")
        if max_dets is not None:
            ev.params.maxDets = list(max_dets)
        ev.evaluate()
        ev.accumulate()
    return ev


class _IgnoreOrCrowd(COCOeval):
    """pycocotools with the gt ignore flag ``ignore OR iscrowd`` (boundary-iou-api's rule, which ours follows)."""

    def _prepare(self) -> None:
        super()._prepare()
        for gts in self._gts.values():
            for gt in gts:
                gt["ignore"] = int(bool(gt["ignore"]) or bool(gt.get("ignore_flag", 0)))


def _check(data: list[Image], *, ignore_flags: bool = False, max_dets: list[int] | None = None,
           **options: Any) -> float:
    ours = run_bbox(data, extended_summary=True, max_detection_thresholds=max_dets, **options)
    dataset, results = to_coco(data)
    ev = _coco_eval(dataset, results, ignore_flags, max_dets)
    return assert_coco_equal(ours, ev, max_dets, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bbox_matches_pycocotools(seed):
    data = make_box_images(60, seed=seed, categories=6)
    assert _check(data) <= 1e-12


def test_bbox_cocos_rounded_boxes_and_ties():
    """Boxes in hundredths of a pixel (COCO's json) and scores in hundredths: ties everywhere."""
    data = make_box_images(40, seed=5, categories=4, decimals=2)
    assert _check(data) <= 1e-12


def test_bbox_small_caps_and_given_areas():
    """``maxDets`` below the detections of a group; gt ``area`` given (0 falls back to ``w * h``)."""
    data = make_box_images(30, seed=6, categories=3, detections=25, with_area=True)
    assert _check(data, max_dets=[1, 5, 20]) <= 1e-12


def test_bbox_ignore_flags():
    data = make_box_images(30, seed=7, categories=4, ignore_rate=0.15)
    assert _check(data, ignore_flags=True) <= 1e-12


def test_bbox_degenerate_sets():
    """Only empty images, images without detections and images without gts."""
    data = make_box_images(12, seed=8, categories=3, empty_rate=0.5)
    assert _check(data) <= 1e-12


def test_bbox_crowd_iou_and_zero_width():
    """The crowd IoU divides by the detection's area; a zero-width box overlaps nothing."""
    from nobg_metrics.functional.instance.boxes import box_ious

    det = torch.tensor([[[0, 0, 4, 4], [2, 2, 2, 9], [1, 1, 3, 3]]], dtype=torch.float64)
    gt = torch.tensor([[[2, 0, 6, 4], [0, 0, 10, 10]]], dtype=torch.float64)
    ious = box_ious(det, gt, torch.tensor([[False, True]]))
    assert ious.tolist() == [[[8 / 24, 1.0], [0.0, 0.0], [2 / 18, 1.0]]]


def test_bbox_lvis_matches_installed_lvis():
    """lvis 0.5.3: federated lists, no crowd gts (it has none), no area on a range bound (it keeps them inclusive)."""
    pytest.importorskip("lvis")
    from lvis import LVISEval, LVISResults

    from tests.reference.lvis_boundary_ap import lvis_from_dict, numpy_float

    data = make_box_images(40, seed=9, categories=6, crowd_rate=0.0, federated=True)
    ours = run_bbox(data, extended_summary=True, protocol="lvis",
                    category_frequencies={c: "rcf"[c % 3] for c in range(6)})
    dataset, results = to_coco(data, lvis=True)
    for entry in dataset["categories"]:
        entry["frequency"] = "rcf"[entry["id"] % 3]
    gt = lvis_from_dict(dataset)
    with numpy_float(), contextlib.redirect_stdout(io.StringIO()):
        ev = LVISEval(gt, LVISResults(gt, copy.deepcopy(results), max_dets=300), "bbox")
        ev.run()
    assert_lvis_equal(ours, ev)


@pytest.mark.parametrize("engine", ["data_sized", "fixed"])
def test_bbox_engines_agree(engine):
    data = make_box_images(20, seed=10, categories=5)
    ours = run_bbox(data, engine=engine, extended_summary=True)
    reference = run_bbox(data, extended_summary=True)
    for key, value in reference.items():
        assert torch.equal(ours[key], value), key


def test_bbox_float32_boxes_within_tolerance():
    """float32 boxes (torchmetrics converts them to xywh in float32; ours in float64): same AP here."""
    data = make_box_images(30, seed=11, categories=4)
    ours = run_bbox(data, dtype=torch.float32)
    reference = run_bbox(data)
    for key in ("map", "map_50", "map_75", "mar_100"):
        assert abs(float(ours[key]) - float(reference[key])) <= 1e-12, key


def test_numpy_boxes_are_generated_as_described():
    data = make_box_images(60, seed=0, categories=6)
    gts = np.concatenate([image.gt_boxes for image in data])
    widths = gts[:, 2] - gts[:, 0]
    areas = widths * (gts[:, 3] - gts[:, 1])
    assert (widths == 0).any() and (gts[:, 0] < 0).any()
    assert (areas < 32**2).any() and ((areas > 32**2) & (areas < 96**2)).any() and (areas > 96**2).any()


@pytest.mark.parametrize("seed", [3, 4])
def test_bbox_summary_without_extended_arrays_is_the_same(seed):
    """Without the extended summary, precision is read at true positives only and at the last cap only: the
    summary values are those of the full arrays (checked above against pycocotools), bit for bit."""
    data = make_box_images(50, seed=seed, categories=5, detections=20, with_area=seed == 4)
    for options in ({}, {"max_detection_thresholds": [1, 3, 7]}, {"class_metrics": True},
                    {"average": "micro"}, {"protocol": "lvis"}):
        lean = run_bbox(data, **options)
        full = run_bbox(data, extended_summary=True, **options)
        for key, value in lean.items():
            assert torch.equal(value, full[key]), (options, key)
    ours = run_bbox(data)
    ev = _coco_eval(*to_coco(data))
    for key, (kind, iou, area, _) in COCO_KEYS.items():
        assert abs(float(ours[key]) - summary(ev, area, iou, 100, kind)) <= 1e-12, key
    for cap in (1, 10, 100):
        assert abs(float(ours[f"mar_{cap}"]) - summary(ev, "all", None, cap, "ar")) <= 1e-12, cap
