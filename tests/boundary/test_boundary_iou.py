"""Boundary IoU equals the boundary-iou-api definition (tests/reference/boundary_iou_ref.py) image by
image and over datasets; defined values for the cases where the reference divides 0/0; the shared
tester and one real DDP run."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.ops.band_width import dilation_radius
from tests.helpers.data import SHAPES, as_tensors, blob_mask, sod_pairs
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric
from tests.reference.boundary_iou_ref import band_counts, boundary_iou, dilation_of, mask_iou

HQ_SAM = 128 / 255  # uint8 pred > 128, the reference's binarisation on 0..255
EXTRA_SHAPES = [(3, 300), (130, 67)]


def _reference(pairs, ratio, combine=None):
    """Per-image reference values on uint8 (pred, gt) pairs, NaN kept."""
    values = []
    for pred, gt in pairs:
        value = boundary_iou(gt > 128, pred > 128, ratio)
        if combine == "min":
            value = min(value, mask_iou(gt > 128, pred > 128))
        values.append(value)
    return np.array(values)


def _defined(pairs, values):
    """The reference with its 0/0 (empty vs empty) replaced by our defined 1.0."""
    empty = np.array([not (g > 128).any() and not (p > 128).any() for p, g in pairs])
    assert np.isnan(values).sum() == empty.sum()  # the only NaNs are empty vs empty
    return np.where(empty, 1.0, values)


@pytest.mark.parametrize("ratio", [0.02, 0.005])
@pytest.mark.parametrize("seed", [0, 1])
def test_per_image_and_dataset_values_equal_the_reference(seed, ratio):
    pairs = sod_pairs(seed, SHAPES + EXTRA_SHAPES)
    expected = _defined(pairs, _reference(pairs, ratio))
    preds, gts = as_tensors(pairs)
    ours = [F.boundary_iou(p, g, HQ_SAM, ratio, empty_gt="reference").item() for p, g in zip(preds, gts)]
    assert np.abs(np.array(ours) - expected).max() <= 1e-12
    dataset = F.boundary_iou(preds, gts, HQ_SAM, ratio, empty_gt="reference").item()
    assert abs(dataset - expected.mean()) <= 1e-7


def test_float_predictions_and_bool_gt():
    rng = np.random.default_rng(3)
    preds, gts, expected = [], [], []
    for h, w in SHAPES + EXTRA_SHAPES:
        gt = blob_mask(rng, h, w)
        pred = np.clip(gt * 0.8 + rng.normal(0.1, 0.25, gt.shape), 0, 1)
        pred[0, 0] = 0.5  # exactly the threshold: background (strict >)
        preds.append(torch.from_numpy(pred).float())
        gts.append(torch.from_numpy(gt))
        value = boundary_iou(gt, preds[-1].numpy() > 0.5, 0.02)
        expected.append(1.0 if math.isnan(value) else value)
    ours = F.boundary_iou(preds, gts, empty_gt="reference").item()
    assert abs(ours - np.mean(expected)) <= 1e-7


def test_border_touching_and_thin_masks():
    gt = np.zeros((40, 70), bool)
    gt[:, :30] = True  # touches three borders: the image border is contour
    pred = np.zeros_like(gt)
    pred[5:, :33] = True
    for radius in [1, 2, 7, 40]:
        expected = boundary_iou(gt, pred, dilation=radius)
        ours = F.boundary_iou(torch.from_numpy(pred), torch.from_numpy(gt), dilation_pixels=radius)
        assert abs(ours.item() - expected) <= 1e-12
    line = np.zeros((1, 50), bool)
    line[0, 10:30] = True  # 1xN: every pixel is boundary
    assert F.boundary_iou(torch.from_numpy(line), torch.from_numpy(line)).item() == 1.0
    assert abs(F.boundary_iou(torch.from_numpy(np.roll(line, 5)), torch.from_numpy(line)).item()
               - boundary_iou(line, np.roll(line, 5))) <= 1e-12


def test_pooled_reduction_and_min_combination():
    pairs = sod_pairs(4, SHAPES)
    preds, gts = as_tensors(pairs)
    counts = np.array([band_counts(g > 128, p > 128, 0.02) for p, g in pairs])
    pooled = F.boundary_iou(preds, gts, HQ_SAM, reduction="pooled", empty_gt="reference").item()
    assert abs(pooled - counts[:, 0].sum() / counts[:, 1].sum()) <= 1e-12
    expected = _defined(pairs, _reference(pairs, 0.02, combine="min"))
    ours = F.boundary_iou(preds, gts, HQ_SAM, combine="min", empty_gt="reference").item()
    assert abs(ours - expected.mean()) <= 1e-7
    inter = sum(((g > 128) & (p > 128)).sum() for p, g in pairs)
    union = sum(((g > 128) | (p > 128)).sum() for p, g in pairs)
    pooled_min = F.boundary_iou(preds, gts, HQ_SAM, reduction="pooled", combine="min").item()
    assert abs(pooled_min - min(inter / union, counts[:, 0].sum() / counts[:, 1].sum())) <= 1e-12


def test_empty_and_full_gt_policies():
    empty, full = torch.zeros(6, 9, dtype=torch.bool), torch.ones(6, 9, dtype=torch.bool)
    some = torch.zeros(6, 9, dtype=torch.bool)
    some[1:3, 2:6] = True
    for policy in ["agreement", "reference"]:  # empty vs empty: the reference's 0/0, defined as 1
        assert F.boundary_iou(empty, empty, empty_gt=policy).item() == 1.0
        assert F.boundary_iou(empty, empty, empty_gt=policy, combine="min").item() == 1.0
        assert F.boundary_iou(empty, empty, empty_gt=policy, reduction="pooled").item() == 1.0
        assert F.boundary_iou(full, full, empty_gt=policy).item() == 1.0
    assert F.boundary_iou(some, empty, empty_gt="reference").item() == 0.0
    assert F.boundary_iou(some, empty).item() == pytest.approx(1 - 8 / 54, abs=1e-15)  # pixel agreement
    ref_full = boundary_iou(full.numpy(), some.numpy(), 0.02)  # the border ring vs the blob's band
    assert F.boundary_iou(some, full, empty_gt="reference").item() == pytest.approx(ref_full, abs=1e-15)
    assert F.boundary_iou(some, full).item() == pytest.approx(8 / 54, abs=1e-15)
    # pooled ignores the policy: sum |I| / sum |U|
    assert F.boundary_iou(some, empty, reduction="pooled").item() == 0.0


def test_dilation_rule_equals_the_reference():
    for h, w in SHAPES + EXTRA_SHAPES + [(1024, 1024), (2048, 1365), (480, 640), (1080, 1920), (35, 12)]:
        for ratio in [0.0, 0.001, 0.005, 0.02, 0.1]:
            assert dilation_radius(h, w, ratio) == dilation_of(h, w, ratio), (h, w, ratio)
    assert dilation_radius(3, 4, 0.5) == 2  # 2.5 rounds half to even
    assert dilation_radius(3, 4, 0.7) == 4  # 3.5 rounds half to even
    assert dilation_radius(10, 10, 0.02, dilation_pixels=7) == 7


def test_uint8_threshold_path_equals_float_and_normalize():
    pairs = sod_pairs(5, SHAPES[:4])
    preds, gts = as_tensors(pairs)
    floats = [p.double() / 255 for p in preds]
    for threshold in [0.0, 0.3, 0.5, HQ_SAM, 254.5 / 255, 1.0]:
        assert F.boundary_iou(preds, gts, threshold).item() == F.boundary_iou(floats, gts, threshold).item()
    stretched = []
    for pred in floats:
        low, high = pred.min(), pred.max()
        stretched.append(pred if high == low else (pred - low) / (high - low))
    assert F.boundary_iou(preds, gts, normalize=True).item() == F.boundary_iou(stretched, gts).item()


def test_bad_arguments():
    x = torch.zeros(4, 4)
    with pytest.raises(ValueError, match="reduction"):
        F.boundary_iou(x, x, reduction="sum")
    with pytest.raises(ValueError, match="combine"):
        F.boundary_iou(x, x, combine="max")
    with pytest.raises(ValueError, match="dilation_pixels"):
        F.boundary_iou(x, x, dilation_pixels=0)
    with pytest.raises(TypeError, match="dilation_pixels"):
        nm.BoundaryIoU(dilation_pixels=2.5)
    with pytest.raises(ValueError, match="dilation_ratio"):
        nm.BoundaryIoU(dilation_ratio=-0.1)
    with pytest.raises(ValueError, match="empty_gt"):
        nm.BoundaryIoU(empty_gt="nan")


def _samples(seed):
    preds, gts = as_tensors(sod_pairs(seed, [(37, 53), (1, 17), (33, 70), (5, 5)]))
    return list(zip(preds, gts))


@pytest.mark.parametrize("options", [{}, {"reduction": "pooled"}, {"combine": "min", "empty_gt": "reference"},
                                     {"dilation_ratio": 0.005, "normalize": True}])
def test_boundary_iou_passes_the_shared_tester(options):
    samples = _samples(6)
    expected = None
    if options == {"combine": "min", "empty_gt": "reference"}:
        pairs = [(p.numpy(), g.numpy()) for p, g in samples]
        expected = _defined(pairs, _reference(pairs, 0.02, combine="min")).mean()
        options = {**options, "threshold": HQ_SAM}
    check_metric(functools.partial(nm.BoundaryIoU, **options), samples, expected,
                 functional=functools.partial(F.boundary_iou, **options))


@pytest.mark.slow
def test_boundary_iou_under_two_process_ddp():
    check_ddp(functools.partial(nm.BoundaryIoU, combine="min"), _samples(7)[:9])


@pytest.mark.slow
def test_1024_images_equal_the_reference():
    pairs = sod_pairs(8, [(1024, 1024), (1000, 1024)])[:4]
    preds, gts = as_tensors(pairs)
    expected = _defined(pairs, _reference(pairs, 0.02))
    assert abs(F.boundary_iou(preds, gts, HQ_SAM, empty_gt="reference").item() - expected.mean()) <= 1e-7


@pytest.mark.cuda
def test_cuda_equals_cpu():
    preds, gts = as_tensors(sod_pairs(9, SHAPES))
    cuda = F.boundary_iou([p.cuda() for p in preds], [g.cuda() for g in gts], combine="min")
    assert cuda.item() == F.boundary_iou(preds, gts, combine="min").item()
