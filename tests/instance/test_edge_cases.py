"""Edge cases of instance AP, each against the reference (the boundary-iou-api port; pycocotools for segm)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks.instance_data import InstanceImage, to_torch
from nobg_metrics.functional import mean_average_precision
from tests.instance.helpers import assert_coco_equal, coco_case, images


def _image(gts: list[np.ndarray], gt_labels: list[int], dts: list[np.ndarray], scores: list[float],
           dt_labels: list[int], crowd: list[bool] | None = None, size: tuple[int, int] = (24, 30)) -> InstanceImage:
    empty = np.zeros((0, *size), bool)
    return InstanceImage(size[0], size[1], np.stack(gts) if gts else empty, np.array(gt_labels, np.int64),
                         np.array(crowd or [False] * len(gts), bool), np.stack(dts) if dts else empty,
                         np.array(scores, np.float64), np.array(dt_labels, np.int64))


def _box(y0: int, y1: int, x0: int, x1: int, size: tuple[int, int] = (24, 30)) -> np.ndarray:
    mask = np.zeros(size, bool)
    mask[y0:y1, x0:x1] = True
    return mask


BASE = images(4, [(45, 60), (37, 53)], seed=20)


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
@pytest.mark.parametrize("case", ["no_gts", "empty_preds", "empty_both", "all_crowd", "pred_only_category",
                                  "empty_masks"])
def test_edge_case_matches_reference(case, iou_type):
    size = (24, 30)
    extra = {
        "no_gts": _image([], [], [_box(2, 9, 3, 12), _box(10, 20, 5, 9)], [0.9, 0.4], [1, 2]),  # both FPs
        "empty_preds": _image([_box(2, 9, 3, 12)], [1], [], [], []),
        "empty_both": _image([], [], [], [], []),
        "all_crowd": _image([_box(0, 24, 0, 15), _box(5, 20, 15, 30)], [1, 2], [_box(2, 9, 3, 12), _box(6, 12, 16, 29)],
                            [0.7, 0.6], [1, 2], crowd=[True, True]),
        "pred_only_category": _image([_box(2, 9, 3, 12)], [1], [_box(2, 9, 3, 12)], [0.5], [4]),
        "empty_masks": _image([np.zeros(size, bool), _box(3, 9, 3, 9)], [1, 1],
                              [np.zeros(size, bool), _box(3, 9, 3, 8)], [0.8, 0.3], [1, 1]),
    }[case]
    ours, ev = coco_case([*BASE, extra], iou_type)
    assert assert_coco_equal(ours, ev) == 0.0


def test_images_without_gts_count_their_false_positives():
    """torchmetrics' segm mode drops an image without gt masks and so its false positives; the reference does not."""
    with_fp = [*BASE, _image([], [], [_box(2, 9, 3, 12)], [0.99], [int(BASE[0].gt_labels[0])])]
    ours_fp, ev = coco_case(with_fp, "segm")
    assert_coco_equal(ours_fp, ev)
    ours_plain, _ = coco_case(BASE, "segm")
    assert float(ours_fp["map"]) < float(ours_plain["map"])


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_ties_duplicates_and_the_last_gt_rule(iou_type):
    """Equal scores within and across images, duplicate detections, and two identical gts: the matching loop
    (``if ious[d, g] < iou: continue``) gives a detection the *last* of equally good gts."""
    square = _box(4, 14, 4, 14)
    twin = _image([square, square, _box(15, 22, 18, 28)], [1, 1, 1], [square, square, square, _box(15, 22, 18, 27)],
                  [0.5, 0.5, 0.5, 0.5], [1, 1, 1, 1], crowd=[False, False, True])
    other = _image([_box(4, 14, 4, 14)], [1], [_box(4, 14, 4, 13), _box(4, 14, 4, 14)], [0.5, 0.5], [1, 1])
    ours, ev = coco_case([twin, other, twin], iou_type)
    assert assert_coco_equal(ours, ev) == 0.0


def test_iou_exactly_at_thresholds():
    """IoU = 0.5, 0.75 and 1.0 exactly (``iou >= min(t, 1 - 1e-10)`` matches)."""
    gt = _box(0, 10, 0, 20)
    data = [_image([gt], [1], [_box(0, 10, 0, 10)], [0.9], [1]),  # 100 / 200
            _image([gt], [1], [_box(0, 10, 0, 15)], [0.8], [1]),  # 150 / 200
            _image([gt], [1], [gt], [0.7], [1])]
    ours, ev = coco_case(data, "segm")
    assert assert_coco_equal(ours, ev) == 0.0


def test_more_detections_than_the_cap():
    """130 detections of one category in an image: the per-(image, category) cap of 100 (COCO)."""
    rng = np.random.default_rng(0)
    dts = [_box(int(y), int(y) + 6, int(x), int(x) + 7) for y, x in rng.integers(0, 18, (130, 2))]
    data = [_image([_box(2, 9, 3, 12), _box(10, 18, 10, 20)], [1, 1], dts, list(rng.uniform(0, 1, 130).round(2)),
                   [1] * 130)]
    ours, ev = coco_case(data, "boundary")
    assert assert_coco_equal(ours, ev) == 0.0


def test_scores_signed_zero_tie():
    data = [_image([_box(2, 9, 3, 12)], [1], [_box(2, 9, 3, 11), _box(2, 9, 3, 12)], [0.0, -0.0], [1, 1])]
    ours, ev = coco_case(data, "segm")
    assert assert_coco_equal(ours, ev) == 0.0


def test_no_images_gives_minus_one():
    result = mean_average_precision([], [])
    assert float(result["map"]) == -1.0 and float(result["mar_100"]) == -1.0 and result["classes"].numel() == 0


def test_images_of_different_sizes_in_one_call_equal_separate_calls():
    from nobg_metrics import MeanAveragePrecision

    data = images(6, [(45, 60), (1, 17), (105, 140)], seed=21)
    preds, target = to_torch(data)
    ours, ev = coco_case(data, "boundary")  # all sizes in one call
    assert assert_coco_equal(ours, ev) == 0.0
    metric = MeanAveragePrecision(iou_type="boundary", extended_summary=True)
    for pred, gt in zip(preds, target):  # one image (one size) per call
        metric.update([pred], [gt])
    for key, value in metric.compute().items():
        if isinstance(value, dict):  # extended_summary's ious: (image, category) -> matrix
            assert value.keys() == ours[key].keys()
            continue
        assert torch.equal(value, ours[key]), key
