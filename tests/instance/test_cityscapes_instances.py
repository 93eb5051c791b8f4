"""Cityscapes instance AP / Boundary AP against the port of boundary-iou-api's cityscapes_instance_api
(tests/reference/cityscapes_instances_port.py, itself checked against the real scripts: docs/cityscapes_instances.md):
generated Cityscapes-like datasets (several classes, groups, small regions, void, tied scores, images without
predictions, predictions of absent classes, mixed sizes) for both iou types, then one rule per test."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nobg_metrics.functional import cityscapes_instance_ap
from nobg_metrics.functional.instance.cityscapes_labels import EVAL_LABEL_IDS
from nobg_metrics.functional.instance.cityscapes_matching import OVERLAPS
from nobg_metrics.ops.band_width import dilation_radius
from tests.helpers.cityscapes_data import as_torch, cityscapes_dataset
from tests.reference import cityscapes_instances_port as port

KEYS = ("ap", "ap_50", "ap_per_class", "ap_50_per_class", "ap_matrix")


def _assert_matches(data, iou_type="segm", ratio=0.005, min_region_size=100, atol=0.0):
    preds, target = as_torch(data)
    ours = cityscapes_instance_ap(preds, target, iou_type, ratio, min_region_size=min_region_size)
    expected = port.evaluate(data, iou_type, ratio, min_region_size, no_entries="zero")
    for key in KEYS:
        mine, theirs = ours[key].numpy(), np.asarray(expected[key])
        assert np.array_equal(np.isnan(mine), np.isnan(theirs)), (key, mine, theirs)
        assert np.nan_to_num(np.abs(mine - theirs)).max() <= atol, (key, mine, theirs)
    assert ours["classes"].tolist() == list(EVAL_LABEL_IDS)
    return ours


@pytest.mark.parametrize("seed", range(4))
def test_generated_datasets_match_the_port(seed):
    rng = np.random.default_rng(seed)
    sizes = [tuple(int(v) for v in rng.integers(30, 130, 2)) for _ in range(3)] + [(64, 96)] * 2
    data = cityscapes_dataset(seed, sizes)
    data[1] = (data[1][0], [])  # an image without predictions
    for iou_type, ratio in [("segm", 0.005), ("boundary", 0.005), ("boundary", 0.03)]:
        ours = _assert_matches(data, iou_type, ratio)
        assert np.isfinite(ours["ap"].item())


def _canvas(height=60, width=80, fill=7):
    return np.full((height, width), fill, np.int64)


def _box(height, width, top, left, bottom, right):
    mask = np.zeros((height, width), bool)
    mask[top:bottom, left:right] = True
    return mask


def test_thresholds_are_numpy_arange_values():
    assert np.array_equal(np.array(OVERLAPS), np.arange(0.5, 1.0, 0.05))


def test_band_width_is_python_round_of_the_full_resolution_diagonal():
    assert dilation_radius(1024, 2048, 0.005) == 11  # 0.005 * 2289.7 = 11.45
    assert dilation_radius(60, 80, 0.025) == 2 and dilation_radius(60, 80, 0.015) == 2  # 2.5 -> 2, 1.5 -> 2
    assert dilation_radius(60, 80, 0.005) == 1  # max(1, round(0.5)) = max(1, 0)


def test_group_regions_small_instances_and_void_are_ignore_regions():
    gt = _canvas()
    gt[0:30, 0:30] = 26  # a car group
    gt[40:50, 0:9] = 26007  # a car of 90 pixels < 100: not a gt
    gt[40:60, 40:70] = 4  # void (static)
    gt[5:25, 45:75] = 26001  # a car gt
    h, w = gt.shape
    preds = [(_box(h, w, 0, 0, 30, 30), 26, 0.9),  # the group: matched to a segment -> no entry
             (_box(h, w, 40, 0, 50, 9), 26, 0.8),  # the small car: no entry
             (_box(h, w, 40, 40, 60, 70), 26, 0.7),  # on void: ignored
             (_box(h, w, 40, 40, 60, 50), 26, 0.95),  # inside the void too
             (_box(h, w, 5, 45, 25, 75), 26, 0.6)]  # the gt
    for iou_type in ("segm", "boundary"):
        ours = _assert_matches([(gt, preds)], iou_type)
        assert ours["ap_per_class"][2].item() == 1.0  # the car: nothing counts against it
        assert math.isnan(ours["ap_per_class"][0].item())


def test_a_small_group_counts_twice_in_the_ignored_pixels():
    gt = _canvas()
    gt[0:8, 0:8] = 26  # a car group of 64 < 100 pixels
    gt[20:40, 20:40] = 26001
    h, w = gt.shape
    # 40 px, 16 on the group: ignored = 2 * 16 = 32, 32 / 40 = 0.8 > thresholds up to 0.75, a false entry beyond
    blob = _box(h, w, 4, 4, 8, 8) | _box(h, w, 10, 0, 16, 4)
    data = [(gt, [(blob, 26, 0.99), (_box(h, w, 20, 20, 40, 40), 26, 0.5)])]
    ours = _assert_matches(data)
    matrix = ours["ap_matrix"][2]
    assert torch.all(matrix[:6] == 1.0) and torch.all(matrix[6:] < 1.0)


def test_the_boundary_pair_condition_decides_which_group_pixels_are_ignored():
    gt = _canvas(80, 80)
    gt[0:60, 0:60] = 24  # a person group
    gt[65:80, 60:80] = 24003
    h, w = gt.shape
    inside = _box(h, w, 20, 20, 30, 30)  # in the group's interior: mask overlap, no band overlap
    data = [(gt, [(inside, 24, 0.9), (_box(h, w, 65, 60, 80, 80), 24, 0.5)])]
    segm = _assert_matches(data, "segm")
    boundary = _assert_matches(data, "boundary", 0.02)
    assert segm["ap_per_class"][0].item() == 1.0  # the blob lies on a recorded group pair: ignored
    assert boundary["ap_50_per_class"][0].item() < 1.0  # no recorded pair: a false entry above the true one


def test_overlaps_are_strict_and_ignore_proportions_are_not():
    gt = _canvas(40, 40)
    gt[0:10, 0:20] = 26001  # 200 px
    h, w = gt.shape
    half = _box(h, w, 0, 0, 10, 10) | _box(h, w, 10, 0, 20, 10)  # 200 px, 100 shared: IoU = 100 / 300
    exact = _box(h, w, 0, 0, 10, 20) | _box(h, w, 10, 0, 20, 20)  # IoU = 200 / 400 = 0.5: not > 0.5
    data = [(gt, [(exact, 26, 0.9), (half, 26, 0.4)])]
    ours = _assert_matches(data)
    assert ours["ap_50_per_class"][2].item() == 0.0
    gt2 = _canvas(40, 40)
    gt2[0:10, 0:10] = 3  # void: out of roi
    gt2[30:40, 30:40] = 26002
    on_void = _box(h, w, 0, 0, 10, 20)  # 200 px, 100 on void: proportion 0.5 <= 0.5 -> a false entry at 0.5
    ours = _assert_matches([(gt2, [(on_void, 26, 0.9), (_box(h, w, 30, 30, 40, 40), 26, 0.5)])])
    assert ours["ap_50_per_class"][2].item() < 1.0


def test_tied_scores_and_duplicates():
    gt = _canvas()
    gt[10:30, 10:30] = 24000
    gt[35:55, 40:60] = 24001
    h, w = gt.shape
    preds = [(_box(h, w, 10, 10, 30, 30), 24, 0.5), (_box(h, w, 10, 10, 30, 29), 24, 0.5),  # duplicate, tied
             (_box(h, w, 35, 40, 55, 60), 24, 0.5), (_box(h, w, 0, 60, 5, 80), 24, 0.5)]  # tied false entry
    for iou_type in ("segm", "boundary"):
        _assert_matches([(gt, preds)], iou_type, 0.02)


def test_classes_without_gts_are_nan_and_left_out_and_without_predictions_zero():
    gt = _canvas()
    gt[10:30, 10:30] = 24000  # a person, never predicted
    gt[35:55, 40:60] = 26001
    h, w = gt.shape
    preds = [(_box(h, w, 35, 40, 55, 60), 26, 0.5), (_box(h, w, 0, 0, 9, 9), 33, 0.7)]  # a bicycle: no gt
    ours = _assert_matches([(gt, preds)])
    per_class = dict(zip(EVAL_LABEL_IDS, ours["ap_per_class"].tolist()))
    assert per_class[24] == 0.0 and per_class[26] == 1.0 and math.isnan(per_class[33])
    assert ours["ap"].item() == 0.5
    empty = _assert_matches([(_canvas(), preds)])  # no gt of any class
    assert math.isnan(empty["ap"].item()) and math.isnan(empty["ap_50"].item())
    assert _assert_matches([(gt, [])])["ap"].item() == 0.0  # no prediction at all


def test_every_prediction_ignored_is_zero_where_the_reference_fails():
    gt = _canvas()
    gt[0:30, 0:30] = 26  # group
    gt[40:60, 50:80] = 26001
    h, w = gt.shape
    data = [(gt, [(_box(h, w, 0, 0, 30, 30), 26, 0.9)])]  # only a prediction of the group
    with pytest.raises(IndexError):
        port.evaluate(data)  # the reference's np.cumsum([])[-1]
    assert _assert_matches(data)["ap_per_class"][2].item() == 0.0


def test_predictions_of_other_labels_and_empty_masks_are_dropped():
    gt = _canvas()
    gt[10:30, 10:30] = 29001  # a caravan instance: not evaluated, not void
    gt[35:55, 40:60] = 26001
    h, w = gt.shape
    preds = [(_box(h, w, 35, 40, 55, 60), 26, 0.5), (_box(h, w, 10, 10, 30, 30), 29, 0.9),
             (_box(h, w, 0, 0, 60, 80), 7, 0.9), (_box(h, w, 0, 0, 5, 5), -1, 0.9),
             (np.zeros((h, w), bool), 26, 0.99), (_box(h, w, 10, 10, 30, 30), 26, 0.1)]
    ours = _assert_matches([(gt, preds)])
    assert ours["ap_50_per_class"][2].item() == 1.0  # the car over the caravan is a false entry below the true one


def test_mixed_sizes_in_one_batch_equal_separate_images():
    data = cityscapes_dataset(11, [(40, 70), (55, 33), (40, 70)])
    preds, target = as_torch(data)
    together = cityscapes_instance_ap(preds, target, "boundary", 0.03)
    reordered = cityscapes_instance_ap(preds[::-1], target[::-1], "boundary", 0.03)
    for key in KEYS:
        assert torch.equal(together[key].nan_to_num(-1), reordered[key].nan_to_num(-1)), key


def test_input_errors_name_the_argument():
    gt = torch.from_numpy(_canvas(8, 9))
    good = {"masks": torch.zeros(1, 8, 9, dtype=torch.bool), "scores": torch.tensor([0.5]),
            "labels": torch.tensor([26])}
    cases = [
        ([{**good, "masks": torch.zeros(1, 8, 8, dtype=torch.bool)}], [gt], ValueError, r'preds\[0\]\["masks"\]'),
        ([{**good, "masks": torch.zeros(1, 8, 9)}], [gt], TypeError, r'preds\[0\]\["masks"\]'),
        ([{**good, "labels": torch.tensor([50])}], [gt], ValueError, r'preds\[0\]\["labels"\].*50'),
        ([{**good, "scores": torch.tensor([math.nan])}], [gt], ValueError, r'preds\[0\]\["scores"\]'),
        ([{**good, "scores": torch.tensor([1, 2])}], [gt], ValueError, r'preds\[0\]\["scores"\]'),
        ([{"masks": good["masks"]}], [gt], ValueError, "'scores'"),
        ([good, good], [gt], ValueError, "`preds` and `target` must have the same length"),
        ([good], [gt.float()], TypeError, r"target\[0\]"),
        ([good], [torch.full((8, 9), 500)], ValueError, r"target\[0\].*500"),
        ([good], [torch.full((8, 9), 34000)], ValueError, r"target\[0\].*34000"),
        (good, [gt], TypeError, "preds"),
    ]
    for preds, target, error, pattern in cases:
        with pytest.raises(error, match=pattern):
            cityscapes_instance_ap(preds, target)
    with pytest.raises(ValueError, match="iou_type"):
        cityscapes_instance_ap([good], [gt], iou_type="bbox")
    # value checks are skipped without validate_args (unknown ids simply match nothing)
    cityscapes_instance_ap([{**good, "labels": torch.tensor([50])}], [gt], validate_args=False)


def test_stacked_target_and_uint8_masks_are_accepted():
    data = cityscapes_dataset(3, [(40, 50), (40, 50)])
    preds, target = as_torch(data)
    stacked = cityscapes_instance_ap([{**p, "masks": p["masks"].to(torch.uint8) * 255} for p in preds],
                                     torch.stack(target).to(torch.int32))
    listed = cityscapes_instance_ap(preds, target)
    assert torch.equal(stacked["ap_matrix"].nan_to_num(-1), listed["ap_matrix"].nan_to_num(-1))


@pytest.mark.cuda
@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_cuda_equals_cpu(iou_type):
    data = cityscapes_dataset(2, [(64, 96), (64, 96), (50, 70)])
    preds, target = as_torch(data)
    cpu = cityscapes_instance_ap(preds, target, iou_type, 0.03)
    cuda = cityscapes_instance_ap([{k: v.cuda() for k, v in p.items()} for p in preds], [t.cuda() for t in target],
                                  iou_type, 0.03)
    for key in KEYS:  # the same entries; the running sums may add in another order on the device
        mine, theirs = cuda[key].cpu(), cpu[key]
        assert torch.equal(mine.isnan(), theirs.isnan()) and (mine - theirs).nan_to_num().abs().max() <= 1e-12, key


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_full_resolution_cityscapes_images(iou_type):
    data = cityscapes_dataset(5, [(1024, 2048)] * 2, instances=20, groups=3, small=3)
    _assert_matches(data, iou_type)
