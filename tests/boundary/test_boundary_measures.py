"""Trimap IoU and the boundary F-measure: hand-computed cases, the paper's properties (which measure is symmetric,
which ignores what), the numpy/OpenCV implementation of the formulas (tests/reference/paper_boundary_measures.py)
image by image at <= 1e-12, the empty-gt policies, the shared tester and one real DDP run."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from tests.helpers.data import SHAPES, as_tensors, blob_mask, sod_pairs
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric
from tests.reference import paper_boundary_measures as ref

EXTRA_SHAPES = [(3, 300), (130, 67), (48, 85)]


def _mask(height: int, width: int, rows: slice, cols: slice) -> torch.Tensor:
    mask = torch.zeros(height, width, dtype=torch.bool)
    mask[rows, cols] = True
    return mask


def _reference_values(pairs, radius_of, policy):
    """Per-image reference values on uint8 (pred, gt) pairs with our named policies applied."""
    trimap, boundary = [], []
    for pred, gt in pairs:
        g, p = gt > 128, pred > 128
        radius = radius_of(*g.shape)
        t = ref.trimap_iou(g, p, radius)
        if math.isnan(t):  # empty band: exact match
            assert not g.any()
            t = float(not p.any())
        b = ref.boundary_f(g, p, radius)
        if policy == "agreement" and (not g.any() or g.all()):
            t = b = float((g == p).mean())
        trimap.append(t)
        boundary.append(b)
    return np.array(trimap), np.array(boundary)


def test_hand_computed_trimap_iou():
    gt = _mask(9, 12, slice(2, 7), slice(3, 9))  # 5 x 6
    wide = _mask(9, 12, slice(2, 7), slice(3, 10))  # one column more
    # d = 1: G_d = dilate (7 x 8 = 56) minus erode (3 x 4 = 12); G_d ∩ G = 18, G_d ∩ (G ∪ P) = 35 - 12 = 23
    assert F.trimap_iou(wide, gt, dilation_pixels=1).item() == 18 / 23
    # swapped, the band is the wide mask's (dilate 7 x 9 = 63, erode 3 x 5 = 15): |G_d ∩ G ∩ P| = 30 - 15,
    # |G_d ∩ (G ∪ P)| = 35 - 15: asymmetric
    assert F.trimap_iou(gt, wide, dilation_pixels=1).item() == 15 / 20
    assert F.trimap_iou(gt, gt, dilation_pixels=1).item() == 1.0
    # a hole farther than d from the contour is ignored: 20 x 20 square with a 4 x 4 hole in its middle, d = 2
    square = _mask(30, 30, slice(5, 25), slice(5, 25))
    holed = square.clone()
    holed[13:17, 13:17] = False
    assert F.trimap_iou(holed, square, dilation_pixels=2).item() == 1.0
    assert F.iou_metric(holed, square).item() < 1.0


def test_hand_computed_boundary_f():
    gt = _mask(20, 20, slice(5, 15), slice(5, 15))  # contour: 36 pixels
    shifted = _mask(20, 20, slice(5, 15), slice(9, 19))
    # d = 2, shift 4: of each contour, the top and bottom rows keep 8 pixels within 2 of the other contour and
    # the vertical edge inside the other square 4 (its pixels within 2 of the other's top and bottom rows)
    assert F.boundary_f_measure(shifted, gt, dilation_pixels=2).item() == 20 / 36
    assert F.boundary_f_measure(gt, shifted, dilation_pixels=2).item() == 20 / 36
    # a shift within d, either way, matches every contour pixel: F = 1 (the tolerance to small misalignments)
    for cols in (slice(7, 17), slice(3, 13)):
        assert F.boundary_f_measure(_mask(20, 20, slice(5, 15), cols), gt, dilation_pixels=2).item() == 1.0
    # shift 3 with d = 2: the top and bottom rows keep 9 pixels each (columns within 2 of the other contour), the
    # inner vertical edge 4 (within 2 of the other's top and bottom rows): (9 + 9 + 4) / 36
    three = _mask(20, 20, slice(5, 15), slice(8, 18))
    p, r = ref.precision_recall(gt.numpy(), three.numpy(), 2)
    assert p == r == 22 / 36
    assert F.boundary_f_measure(three, gt, dilation_pixels=2).item() == 2 * p * r / (p + r)


def test_symmetry_as_the_paper_states():
    rng = np.random.default_rng(11)
    for _ in range(4):
        g, p = blob_mask(rng, 41, 57), blob_mask(rng, 41, 57)
        gt, pred = torch.from_numpy(g), torch.from_numpy(p)
        assert F.boundary_f_measure(pred, gt).item() == F.boundary_f_measure(gt, pred).item()
        assert F.boundary_iou(pred, gt).item() == F.boundary_iou(gt, pred).item()
    # Trimap IoU favours predictions larger than the gt: a dilated prediction keeps a positive score, an eroded
    # one of the same error drops to 0
    gt = _mask(60, 60, slice(20, 40), slice(20, 40))
    larger, smaller = _mask(60, 60, slice(12, 48), slice(12, 48)), _mask(60, 60, slice(28, 32), slice(28, 32))
    assert F.trimap_iou(larger, gt, dilation_pixels=2).item() > 0.3
    assert F.trimap_iou(smaller, gt, dilation_pixels=2).item() == 0.0


def test_empty_and_full_policies():
    empty, full = torch.zeros(6, 9, dtype=torch.bool), torch.ones(6, 9, dtype=torch.bool)
    some = _mask(6, 9, slice(1, 3), slice(2, 6))
    for measure in (F.trimap_iou, F.boundary_f_measure):
        for policy in ("agreement", "reference"):
            assert measure(empty, empty, empty_gt=policy).item() == 1.0
            assert measure(full, full, empty_gt=policy).item() == 1.0
        assert measure(some, empty, empty_gt="reference").item() == 0.0  # empty band / no gt contour
        assert measure(empty, some, empty_gt="reference").item() == 0.0
        assert measure(some, empty).item() == 1 - 8 / 54  # pixel agreement
        assert measure(some, full).item() == 8 / 54
    # a full gt under the formula: its band and contour are the image-border ring
    expected_t = ref.trimap_iou(full.numpy(), some.numpy(), 1)
    assert F.trimap_iou(some, full, empty_gt="reference").item() == expected_t
    assert F.boundary_f_measure(some, full, empty_gt="reference").item() == ref.boundary_f(full.numpy(),
                                                                                          some.numpy(), 1)
    assert F.trimap_iou(some, empty, reduction="pooled").item() == 0.0  # every band empty: exact match
    assert F.trimap_iou(empty, empty, reduction="pooled").item() == 1.0
    assert F.trimap_iou([some, some], [empty, some], reduction="pooled").item() == 1.0  # outside every band


@pytest.mark.parametrize("ratio, policy", [(0.02, "agreement"), (0.005, "reference")])
def test_per_image_values_equal_the_numpy_formulas(ratio, policy):
    pairs = sod_pairs(1 if ratio == 0.02 else 2, SHAPES + EXTRA_SHAPES)
    trimap, boundary = _reference_values(pairs, lambda h, w: ref.width_of(h, w, ratio), policy)
    preds, gts = as_tensors(pairs)
    threshold = 128 / 255  # uint8 pred > 128, as the reference binarises here
    ours_t = [F.trimap_iou(p, g, threshold, ratio, empty_gt=policy).item() for p, g in zip(preds, gts)]
    ours_b = [F.boundary_f_measure(p, g, threshold, ratio, empty_gt=policy).item() for p, g in zip(preds, gts)]
    assert np.abs(np.array(ours_t) - trimap).max() <= 1e-12
    assert np.abs(np.array(ours_b) - boundary).max() <= 1e-12
    assert abs(F.trimap_iou(preds, gts, threshold, ratio, empty_gt=policy).item() - trimap.mean()) <= 1e-12
    assert abs(F.boundary_f_measure(preds, gts, threshold, ratio, empty_gt=policy).item() - boundary.mean()) <= 1e-12


@pytest.mark.parametrize("radius", [1, 3, 9, 40])
def test_fixed_widths_on_thin_and_border_touching_masks(radius):
    rng = np.random.default_rng(radius)
    cases = [(blob_mask(rng, 35, 80), blob_mask(rng, 35, 80))]
    line = np.zeros((1, 50), bool)
    line[0, 10:30] = True
    cases.append((line, np.roll(line, 3)))
    thin = np.zeros((30, 31), bool)
    thin[:, 7] = thin[12, :] = True
    cases.append((thin, np.roll(thin, 2, axis=1)))
    for g, p in cases:
        gt, pred = torch.from_numpy(g), torch.from_numpy(p)
        assert F.trimap_iou(pred, gt, dilation_pixels=radius).item() == ref.trimap_iou(g, p, radius)
        assert F.boundary_f_measure(pred, gt, dilation_pixels=radius).item() == ref.boundary_f(g, p, radius)


def test_pooled_trimap_iou():
    pairs = sod_pairs(4, SHAPES)
    preds, gts = as_tensors(pairs)
    inter = union = 0
    for pred, gt in pairs:
        g, p = gt > 128, pred > 128
        band = ref.band(g, ref.width_of(*g.shape, 0.02))
        inter, union = inter + int((band & g & p).sum()), union + int((band & (g | p)).sum())
    assert F.trimap_iou(preds, gts, 128 / 255, reduction="pooled").item() == inter / union


def test_float_bool_and_uint8_inputs_agree():
    pairs = sod_pairs(5, SHAPES[:4])
    preds, gts = as_tensors(pairs)
    floats = [p.double() / 255 for p in preds]
    for measure in (F.trimap_iou, F.boundary_f_measure):
        for threshold in (0.0, 0.3, 0.5, 1.0):
            assert measure(preds, gts, threshold).item() == measure(floats, gts, threshold).item()
        assert measure([p > 127 for p in preds], gts).item() == measure(preds, gts).item()  # bool: > 0.5
        assert measure(preds, [g > 128 for g in gts]).item() == measure(preds, gts).item()


def test_bad_arguments():
    x = torch.zeros(4, 4)
    with pytest.raises(ValueError, match="reduction"):
        F.trimap_iou(x, x, reduction="sum")
    with pytest.raises(ValueError, match="dilation_pixels"):
        F.boundary_f_measure(x, x, dilation_pixels=0)
    with pytest.raises(TypeError, match="dilation_pixels"):
        nm.TrimapIoU(dilation_pixels=2.5)
    with pytest.raises(ValueError, match="empty_gt"):
        nm.BoundaryFMeasure(empty_gt="nan")
    with pytest.raises(ValueError, match="threshold"):
        nm.BoundaryFMeasure(threshold=1.5)


def _samples(seed):
    preds, gts = as_tensors(sod_pairs(seed, [(37, 53), (1, 17), (33, 70), (5, 5)]))
    return list(zip(preds, gts))


@pytest.mark.parametrize("factory, functional", [
    (nm.TrimapIoU, F.trimap_iou),
    (functools.partial(nm.TrimapIoU, reduction="pooled", empty_gt="reference"),
     functools.partial(F.trimap_iou, reduction="pooled", empty_gt="reference")),
    (functools.partial(nm.BoundaryFMeasure, dilation_ratio=0.005, normalize=True),
     functools.partial(F.boundary_f_measure, dilation_ratio=0.005, normalize=True)),
])
def test_classes_pass_the_shared_tester(factory, functional):
    check_metric(factory, _samples(6), functional=functional)


@pytest.mark.slow
def test_under_two_process_ddp():
    samples = _samples(7)[:9]
    check_ddp(functools.partial(nm.make_collection, metrics=["trimap_iou", "boundary_f_measure"]), samples)


@pytest.mark.slow
def test_davis_sized_frames_equal_the_numpy_formulas():
    pairs = sod_pairs(8, [(480, 854), (481, 853)])[:6]
    trimap, boundary = _reference_values(pairs, lambda h, w: ref.width_of(h, w, 0.02), "reference")
    preds, gts = as_tensors(pairs)
    ours_t = [F.trimap_iou(p, g, 128 / 255, empty_gt="reference").item() for p, g in zip(preds, gts)]
    ours_b = [F.boundary_f_measure(p, g, 128 / 255, empty_gt="reference").item() for p, g in zip(preds, gts)]
    assert np.abs(np.array(ours_t) - trimap).max() <= 1e-12
    assert np.abs(np.array(ours_b) - boundary).max() <= 1e-12


@pytest.mark.cuda
def test_cuda_equals_cpu():
    preds, gts = as_tensors(sod_pairs(9, SHAPES))
    for measure in (F.trimap_iou, F.boundary_f_measure):
        cuda = measure([p.cuda() for p in preds], [g.cuda() for g in gts])
        assert cuda.item() == measure(preds, gts).item()
