"""BiRefNet's grey-boundary BIoU (max / mean / curve) vs the BiRefNet port, and the protocol's other columns."""

from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path

import cv2
import numpy as np
import py_sod_metrics
import pytest
import torch

from nobg_metrics.functional.boundary.grey_boundary_iou import grey_boundary_iou, grey_erode
from nobg_metrics.functional.matting.sad_mse import mse_metric
from nobg_metrics.functional.sod.mae import mae
from nobg_metrics.functional.sod.smeasure import s_measure
from nobg_metrics.metrics.boundary.grey_boundary_iou import GreyBoundaryIoU
from tests.helpers.data import SHAPES, as_tensors, sod_pairs
from tests.helpers.tester import check_metric
from tests.reference import birefnet_port
from tests.reference.boundary_iou_ref import dilation_of, mask_to_boundary

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import shapes

BIREFNET = {"normalize": True, "empty_gt": "reference"}


@functools.cache
def _pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        realistic = shapes.real_pairs((301, 457), count=2, seed=7) + shapes.real_pairs((1, 700), count=1, seed=1)
    return sod_pairs(3, [*SHAPES, (120, 211)]) + realistic


def _curve(pred, gt, **options) -> np.ndarray:
    return grey_boundary_iou(torch.from_numpy(pred), torch.from_numpy(gt), "curve", **options).numpy()


def test_grey_erosion_equals_the_boundary_iou_api_erosion():
    rng = np.random.default_rng(0)
    for height, width in [*SHAPES, (40, 70)]:
        image = rng.integers(0, 256, (height, width)).astype(np.uint8)
        for radius in (1, 2, 5):
            padded = cv2.copyMakeBorder(image, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
            expected = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=radius)[1:height + 1, 1:width + 1]
            assert np.array_equal(grey_erode(torch.from_numpy(image)[None], radius)[0].numpy(), expected)


def test_per_image_curves_and_dataset_values_equal_birefnet():
    pairs = _pairs()
    for pred, gt in pairs:
        assert np.abs(_curve(pred, gt, **BIREFNET) - birefnet_port.biou_curve(pred, gt)).max() <= 1e-12, gt.shape
    expected = birefnet_port.evaluate([p for p, _ in pairs], [g for _, g in pairs])
    preds, gts = as_tensors(pairs)
    assert np.abs(grey_boundary_iou(preds, gts, "curve", **BIREFNET).numpy() - expected["biou_curve"]).max() <= 1e-12
    assert abs(grey_boundary_iou(preds, gts, "max", **BIREFNET).item() - expected["maxBIoU"]) <= 1e-12
    assert abs(grey_boundary_iou(preds, gts, "mean", **BIREFNET).item() - expected["meanBIoU"]) <= 1e-12


def test_float_input_and_fixed_band_width():
    rng = np.random.default_rng(1)
    for pred_u8, gt in _pairs()[:12]:
        pred = np.clip(pred_u8 / 255 + rng.uniform(0, 1 / 255, pred_u8.shape), 0, 1)
        for dilation in (None, 3):
            levels = (pred * 255).astype(np.uint8)
            boundary = mask_to_boundary(levels, dilation=dilation)
            band = mask_to_boundary((gt > 128).astype(np.uint8), dilation=dilation) > 0
            on, _ = np.histogram(boundary[band], bins=np.linspace(0, 256, 257))
            off, _ = np.histogram(boundary[~band], bins=np.linspace(0, 256, 257))
            expected = np.cumsum(on[::-1]) / (max(band.sum(), 1) + np.cumsum(off[::-1]))
            ours = _curve(pred, gt, dilation_pixels=dilation, empty_gt="reference")
            assert np.abs(ours - expected).max() <= 1e-12
    assert dilation_of(1024, 768, 0.02) == 26


def test_degenerate_gt_policies():
    empty, full = torch.zeros(6, 9, dtype=torch.bool), torch.ones(6, 9, dtype=torch.bool)
    pred = torch.zeros(6, 9, dtype=torch.uint8)
    pred[1:3, 2:6] = 200  # 8 of 54 pixels at level 200
    curve_empty = grey_boundary_iou(pred, empty, "curve")
    assert torch.equal(grey_boundary_iou(pred, empty, "curve", empty_gt="reference"),
                       torch.zeros(256, dtype=torch.float64))
    assert curve_empty[0].item() == 1.0 and curve_empty[255 - 200].item() == pytest.approx(46 / 54, abs=1e-15)
    assert curve_empty[-1].item() == 0.0  # level >= 0: every pixel predicted
    curve_full = grey_boundary_iou(pred, full, "curve")
    assert curve_full[255 - 200].item() == pytest.approx(8 / 54, abs=1e-15) and curve_full[-1].item() == 1.0
    assert grey_boundary_iou(torch.zeros(6, 9), empty, "max").item() == 1.0


def test_class_modes_curves_and_shared_tester():
    samples = [(torch.from_numpy(p), torch.from_numpy(g)) for p, g in _pairs()[:14]]
    expected = birefnet_port.evaluate([p.numpy() for p, _ in samples], [g.numpy() for _, g in samples])
    for mode in ("max", "mean"):
        check_metric(lambda mode=mode: GreyBoundaryIoU(mode, **BIREFNET), samples,
                     expected["maxBIoU" if mode == "max" else "meanBIoU"], atol=1e-12,
                     functional=lambda p, g, mode=mode: grey_boundary_iou(p, g, mode, **BIREFNET))
    metric = GreyBoundaryIoU("curve", **BIREFNET)
    metric.update(*as_tensors([(p.numpy(), g.numpy()) for p, g in samples]))
    curves = metric.curves()
    assert np.abs(curves["grey_boundary_iou"].numpy() - expected["biou_curve"]).max() <= 1e-12
    assert torch.equal(curves["grey_boundary_iou"], metric.compute())
    assert curves["thresholds"][0].item() == 1.0 and curves["thresholds"][-1].item() == 0.0


def test_birefnet_protocol_other_columns():
    """MAE and MSE against the binarised gt map onto our calls; BiRefNet's S leaves PySODMetrics only on degenerate
    regions (one-pixel regions, 1-pixel or empty quadrants), where it scores 0."""
    differs = 0
    for pred, gt in _pairs():
        stretched, binary = birefnet_port.prepare(pred, gt)
        pred_t, gt_t = torch.from_numpy(pred), torch.from_numpy(gt)
        assert abs(mae(pred_t, gt_t, normalize=True).item() - birefnet_port.mae(pred, gt)) <= 1e-12
        mse = mse_metric(torch.from_numpy(stretched), torch.from_numpy(binary).double()).item()
        assert abs(mse - birefnet_port.mse(pred, gt)) <= 1e-12
        reference = py_sod_metrics.Smeasure()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # its empty quadrants of 1xN images
            reference.step(pred, gt)
        theirs, birefnet = reference.sms[0], birefnet_port.s_measure(pred, gt)
        if min(gt.shape) >= 3 and 2 <= (gt > 128).sum() <= gt.size - 2:
            assert abs(theirs - birefnet) <= 1e-12, gt.shape
            assert abs(s_measure(pred_t, gt_t, normalize=True, empty_gt="reference").item() - birefnet) <= 1e-12
        differs += not abs(theirs - birefnet) <= 1e-12
    assert differs > 0  # the 1xN / tiny images


def test_bad_input_errors():
    with pytest.raises(ValueError, match="mode"):
        GreyBoundaryIoU("adaptive")
    with pytest.raises(ValueError, match="dilation_pixels"):
        grey_boundary_iou(torch.rand(3, 4), torch.rand(3, 4), dilation_pixels=0)
    with pytest.raises(ValueError, match="empty_gt"):
        GreyBoundaryIoU(empty_gt="skip")
    with pytest.raises(TypeError, match="pred"):
        grey_boundary_iou(torch.zeros(3, 4, dtype=torch.int32), torch.rand(3, 4))
