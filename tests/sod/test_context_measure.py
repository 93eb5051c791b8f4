"""Context measure Cm equals PySODMetrics 1.6.2 ``ContextMeasure`` (β² = 1, α = 6) image by image and over datasets
to 1e-6 (the reference's forward filter runs in float32, ours in float64), with its kernels and both filters checked
on their own; the degenerate and collinear gts; the device path without a host sync; the shared tester and DDP."""

from __future__ import annotations

import functools
import warnings

import cv2
import numpy as np
import pytest
import torch
from py_sod_metrics import ContextMeasure as ReferenceCm
from py_sod_metrics.utils import validate_and_normalize_input
from torchmetrics import Metric

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.collection import METRIC_NAMES
from nobg_metrics.functional.sod.ccm_filters import context_filters
from nobg_metrics.functional.sod.context_measure import (
    _context_measure_update,
    context_kernels,
    correlate_reflect_101,
    kernel_grid_radius,
)
from tests.helpers.data import SHAPES, as_tensors, float_pairs, sod_pairs
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric
from tests.sod.test_msiou import stress_pairs

TOLERANCE = 1e-6
BATCH_LAYOUT_ATOL = 1e-8
"""The filters run as the reference's do, in float32 (its ``filter2D`` on CV_32F maps), by batched float32 FFTs
whose SIMD grouping of the 1-D transforms follows the batch: an image's value moves by float32 rounding (measured
up to 1.5e-9) with the other images of its batch (docs/context_measure.md). Float64 FFTs would make it bit-invariant
at ~1.9x the time."""
"""The reference filters the gt in float32 (``cv2.filter2D(..., CV_32F, K)``, a DFT for kernels of >= 130 taps);
measured worst |diff| of Cm 5.3e-8 over these sets (5.2e-14 against the reference with that filter in float64)."""

EXTRA_SHAPES = [(3, 300), (130, 67), (1, 1), (2, 2), (256, 300)]
REFERENCE = {"normalize": True, "empty_gt": "reference"}


def _reference(pred: np.ndarray, gt: np.ndarray, normalize: bool = True) -> float:
    metric = ReferenceCm()
    metric.step(pred, gt, normalize=normalize)
    return float(metric.scores[0])


def _accepted(pairs: list) -> tuple[list, list]:
    """The pairs the reference scores and its values (it raises ``LinAlgError`` on collinear gt pixels, e.g. two)."""
    kept, values = [], []
    for pred, gt in pairs:
        try:
            values.append(_reference(pred, gt, normalize=pred.dtype == np.uint8))
        except np.linalg.LinAlgError:
            assert np.isfinite(_ours(pred, gt))
            continue
        kept.append((pred, gt))
    return kept, values


@functools.cache
def _dataset(name: str) -> tuple[list, list]:
    if name == "uint8":
        pairs = sod_pairs(0, SHAPES + EXTRA_SHAPES) + stress_pairs(1, [(300, 301), (129, 257), (1, 40), (40, 1)])
    else:
        pairs = float_pairs(2, SHAPES)
    kept, values = _accepted(pairs)
    assert len(kept) >= len(pairs) - 2
    return kept, values


def _ours(pred: np.ndarray, gt: np.ndarray, empty_gt: str = "reference") -> float:
    total, _ = _context_measure_update(torch.from_numpy(pred), torch.from_numpy(gt), 1.0, 6.0, pred.dtype == np.uint8,
                                       empty_gt, True)
    return total.item()


@pytest.mark.parametrize("dataset", ["uint8", "float64"])
def test_per_image_and_dataset_values_equal_the_reference(dataset):
    pairs, expected = _dataset(dataset)
    ours = np.array([_ours(p, g) for p, g in pairs])
    assert np.abs(ours - expected).max() <= TOLERANCE
    preds, gts = as_tensors(pairs)
    dataset_value = F.context_measure(preds, gts, normalize=dataset == "uint8", empty_gt="reference").item()
    assert abs(dataset_value - np.mean(expected)) <= TOLERANCE


def test_kernels_and_filters_equal_the_references():
    """The kernels to rounding (1e-15); the float64 reverse filter to 1e-14 (OpenCV's own float64 DFT); the forward
    filter to the reference's float32 (2e-7 absolute on values <= 1)."""
    reference, radius = ReferenceCm(), kernel_grid_radius(6.0)
    pairs, _ = _accepted(sod_pairs(3, [*SHAPES, (130, 67), (64, 200)]))
    for pred, gt in pairs:
        pred, gt = validate_and_normalize_input(pred, gt, True)
        cov, x_dis, y_dis = reference._compute_y_params(gt.astype(np.float64))
        kernel = reference._gaussian_kernel(x_dis, y_dis, cov)
        ours = context_kernels(torch.from_numpy(gt)[None], 6.0, radius)[0].numpy()
        placed = np.zeros_like(ours)
        placed[radius - x_dis:radius + x_dis + 1, radius - y_dis:radius + y_dis + 1] = kernel
        assert np.abs(ours - placed).max() <= 1e-15
        relevance, smoothed = (t[0].numpy() for t in correlate_reflect_101(
            torch.from_numpy(gt.astype(np.float64))[None], torch.from_numpy(pred)[None], torch.from_numpy(ours)[None]))
        assert np.abs(smoothed - cv2.filter2D(pred, -1, kernel)).max() <= 1e-14
        assert np.abs(relevance - cv2.filter2D(gt.astype(np.float32), cv2.CV_32F, kernel)).max() <= 3e-7


def test_one_fft_filters_equal_opencv_float64():
    """The forward sum (the adjoint against the reflect-101 gt) and the reverse map (the zero-padded convolution
    plus the four reflect-101 border bands) against ``cv2.filter2D`` in float64, on images just above the bands'
    limit (a side > 2ρ) and larger, non-square, with centrally symmetric random kernels: to rounding with float64
    FFTs, to float32 rounding (measured 2.7e-7 of the kernel sum) with the default float32 ones."""
    rng = np.random.default_rng(12)
    for height, width in [(39, 40), (40, 39), (77, 100), (257, 300)]:
        pred, gt = rng.uniform(size=(2, height, width)), rng.uniform(size=(2, height, width)) > 0.7
        kernels = rng.uniform(size=(2, 39, 39))
        kernels = torch.from_numpy(kernels + kernels[:, ::-1, ::-1])
        inputs = torch.from_numpy(pred), torch.from_numpy(gt).double(), kernels
        exact, fast = context_filters(*inputs, fft_dtype=torch.float64), context_filters(*inputs)
        for b in range(2):
            kernel = kernels[b].numpy()
            expected = cv2.filter2D(pred[b], -1, kernel)
            assert np.abs(exact[1][b].numpy() - expected).max() <= 1e-12 * kernel.sum()
            assert np.abs(fast[1][b].numpy() - expected).max() <= 1e-6 * kernel.sum()
            expected = (pred[b] * cv2.filter2D(gt[b].astype(np.float64), -1, kernel)).sum()
            assert abs(exact[0][b].item() - expected) <= 1e-14 * expected
            assert abs(fast[0][b].item() - expected) <= 1e-6 * expected


def test_reflect_101_border_for_kernels_wider_than_the_image():
    rng = np.random.default_rng(4)
    for height, width in [(1, 1), (1, 9), (9, 1), (2, 3), (5, 5), (7, 40)]:
        image = rng.uniform(size=(height, width))
        kernel = rng.uniform(size=(39, 39))
        ours = correlate_reflect_101(torch.from_numpy(image)[None], torch.from_numpy(image)[None],
                                     torch.from_numpy(kernel)[None])[1][0].numpy()
        assert np.abs(ours - cv2.filter2D(image, -1, kernel)).max() <= 1e-12, (height, width)


def test_degenerate_and_collinear_gts():
    rng = np.random.default_rng(5)
    pred = rng.uniform(size=(20, 30))
    empty, full = np.zeros((20, 30), bool), np.ones((20, 30), bool)
    one = empty.copy()
    one[4, 7] = True  # one pixel: the reference's diag(0.25, 0.25) 3x3 kernel
    for gt in (empty, full, one):
        assert abs(_ours(pred, gt) - _reference(pred, gt, normalize=False)) <= TOLERANCE
    assert _ours(pred, empty) == 0.0  # the reference: 0 whatever the prediction
    assert _ours(pred, empty, "agreement") == pytest.approx(1 - pred.mean(), abs=1e-15)
    assert _ours(pred, full, "agreement") == pytest.approx(pred.mean(), abs=1e-15)
    assert _ours(np.zeros_like(pred), empty, "agreement") == 1.0
    two = empty.copy()
    two[3, 3] = two[10, 17] = True  # collinear pixels: the reference's covariance is singular
    with pytest.raises(np.linalg.LinAlgError):
        _reference(pred, two, normalize=False)
    assert np.isfinite(_ours(pred, two))
    # ... scored with the one-pixel fallback kernel: equal to the reference on a gt it accepts with that kernel
    kernel = context_kernels(torch.from_numpy(two)[None], 6.0, 1)[0]
    assert torch.allclose(kernel, context_kernels(torch.from_numpy(one)[None], 6.0, 1)[0], atol=0, rtol=0)


def test_class_passes_the_shared_tester():
    pairs, expected = _dataset("uint8")
    samples = list(zip(*as_tensors(pairs[:30])))
    check_metric(functools.partial(nm.ContextMeasure, **REFERENCE), samples, float(np.mean(expected[:30])),
                 functional=functools.partial(F.context_measure, **REFERENCE), atol=TOLERANCE,
                 invariance_atol=BATCH_LAYOUT_ATOL)


def test_options_and_registry():
    assert "context_measure" in METRIC_NAMES
    def names(metric: Metric) -> list[str]:
        return sorted(metric.metric_state)

    assert names(nm.ContextMeasure()) != names(nm.ContextMeasure(alpha=4.0))
    assert names(nm.ContextMeasure()) != names(nm.ContextMeasure(beta2=0.3))
    gt = np.zeros((40, 50), bool)
    gt[5:30, 10:45] = True
    pred = np.clip(gt * 0.8 + np.random.default_rng(7).uniform(0, 0.3, gt.shape), 0, 1)
    for beta2, alpha in [(0.3, 6.0), (1.0, 2.5), (2.0, 10.0)]:
        reference = ReferenceCm(beta2=beta2, alpha=alpha)
        reference.step(pred, gt, normalize=False)
        ours = F.context_measure(torch.from_numpy(pred), torch.from_numpy(gt), beta2=beta2, alpha=alpha)
        assert abs(ours.item() - reference.scores[0]) <= TOLERANCE, (beta2, alpha)
    with pytest.raises(ValueError, match="alpha"):
        nm.ContextMeasure(alpha=0.0)
    with pytest.raises(ValueError, match="beta2"):
        F.context_measure(torch.zeros(3, 3), torch.zeros(3, 3), beta2=-1.0)
    with pytest.raises(ValueError, match="empty_gt"):
        nm.ContextMeasure(empty_gt="nan")


@pytest.mark.slow
def test_context_measure_under_two_process_ddp():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(zip(*as_tensors(sod_pairs(8, SHAPES[:4]))))[:9]
    check_ddp(functools.partial(nm.ContextMeasure, **REFERENCE), samples, atol=BATCH_LAYOUT_ATOL)


@pytest.mark.slow
def test_1024_images_equal_the_reference():
    pairs = sod_pairs(9, [(1024, 1024), (1000, 1024)])[:4]
    for pred, gt in pairs:
        assert abs(_ours(pred, gt) - _reference(pred, gt)) <= TOLERANCE
