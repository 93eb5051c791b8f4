"""HQ-SAM's protocol (per-image mask IoU and Boundary IoU, plain mean) vs the sam-hq port, and its mapping onto
``IoU(mode="binary")`` / ``BoundaryIoU``."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics.functional.boundary.boundary_iou import boundary_iou
from nobg_metrics.functional.boundary.hqsam import hqsam_boundary_iou, hqsam_iou
from nobg_metrics.functional.sod.overlap import iou_metric
from nobg_metrics.metrics.boundary.hqsam import HQSAMBoundaryIoU, HQSAMIoU
from tests.helpers.data import SHAPES, float_pairs, gt_uint8
from tests.helpers.tester import check_metric
from tests.reference import hqsam_port


@functools.cache
def _pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    """Float probabilities with uint8 gts (every kind: empty, full, thin, grey edges) and a both-empty image."""
    rng = np.random.default_rng(2)
    pairs = [(pred, gt_uint8(rng, *gt.shape, kind)) for (pred, gt), kind in
             zip(float_pairs(4, [*SHAPES, (120, 211)]), ["blob", "blob", "empty", "full", "thin"] * 20)]
    return [*pairs, (np.zeros((13, 21)), np.zeros((13, 21), np.uint8))]


def _tensors(pairs):
    return [torch.from_numpy(p) for p, _ in pairs], [torch.from_numpy(g) for _, g in pairs]


def _same(actual: float, expected: float, atol: float = 1e-12) -> bool:
    return (math.isnan(actual) and math.isnan(expected)) or abs(actual - expected) <= atol


def test_per_image_and_dataset_equal_hqsam():
    pairs = _pairs()
    for float32 in (True, False):
        expected = hqsam_port.evaluate([p for p, _ in pairs], [g for _, g in pairs], float32=float32)
        cases = list(zip(pairs, expected["ious"], expected["boundary_ious"]))
        for (pred, gt), iou, biou in cases[::1 if float32 else 7]:
            p, g = torch.from_numpy(pred), torch.from_numpy(gt)
            options = {"both_empty": "nan", "float32_values": float32}
            assert _same(hqsam_iou(p, g, **options).item(), iou, 0.0), gt.shape  # bit for bit
            assert _same(hqsam_boundary_iou(p, g, **options).item(), biou, 0.0), gt.shape
        assert math.isnan(expected["iou"]) and math.isnan(expected["boundary_iou"])  # the both-empty image
        kept = [pair for pair, iou in zip(pairs, expected["ious"]) if not math.isnan(iou)]
        assert len(kept) < len(pairs) - 1  # constant predictions of empty gts: both empty
        expected = hqsam_port.evaluate([p for p, _ in kept], [g for _, g in kept], float32=float32)
        preds, gts = _tensors(kept)
        assert abs(hqsam_iou(preds, gts, float32_values=float32).item() - expected["iou"]) <= 1e-12
        assert abs(hqsam_boundary_iou(preds, gts, float32_values=float32).item() - expected["boundary_iou"]) <= 1e-12
    # float64 against the float32 logs: HQ-SAM's rounding moves the dataset value by < 1e-7
    assert abs(hqsam_iou(preds, gts).item() - expected["iou"]) < 1e-7


def test_existing_classes_reproduce_it_but_for_both_empty():
    preds, gts = _tensors(_pairs())
    assert torch.equal(hqsam_iou(preds, gts, both_empty="zero"), iou_metric(preds, gts, empty_gt="reference"))
    assert torch.equal(hqsam_boundary_iou(preds, gts, both_empty="one"), boundary_iou(preds, gts, empty_gt="reference"))
    metrics = {"iou": nm.HQSAMIoU(both_empty="zero"), "boundary_iou": nm.HQSAMBoundaryIoU()}
    for metric in metrics.values():
        metric.update(preds, gts)
    assert torch.equal(metrics["iou"].compute(), hqsam_iou(preds, gts, both_empty="zero"))
    assert torch.equal(metrics["boundary_iou"].compute(), hqsam_boundary_iou(preds, gts))


def test_the_classes_pass_the_shared_tester_and_sit_in_the_catalog():
    preds, gts = _tensors(_pairs())
    samples = list(zip(preds, gts))[:12]
    check_metric(functools.partial(nm.HQSAMIoU, both_empty="nan"), samples,
                 float(hqsam_iou([s[0] for s in samples], [s[1] for s in samples], both_empty="nan")),
                 functional=functools.partial(hqsam_iou, both_empty="nan"), atol=0.0, invariance_atol=1e-12)
    collection = nm.make_collection(metrics=["hqsam_iou", "hqsam_boundary_iou"])
    collection.update(preds, gts)
    assert torch.equal(collection.compute()["hqsam_boundary_iou"], hqsam_boundary_iou(preds, gts))
    with pytest.raises(ValueError, match="both_empty"):
        nm.HQSAMIoU(both_empty="maybe")


def test_both_empty_policies_and_logit_masks():
    empty = torch.zeros(1, 6, 9, dtype=torch.bool)
    for policy, value in (("one", 1.0), ("zero", 0.0)):
        assert hqsam_iou(empty, empty, both_empty=policy).item() == value
        assert hqsam_boundary_iou(empty, empty, both_empty=policy).item() == value
    assert math.isnan(hqsam_iou(empty, empty, both_empty="nan").item())
    some = torch.zeros(1, 6, 9)
    some[0, 1:3, 2:6] = 0.9
    assert hqsam_iou(some, empty).item() == 0.0  # an empty gt with a prediction: the reference's 0
    logits = torch.randn(2, 17, 23, dtype=torch.float64)
    gt = torch.rand(2, 17, 23) > 0.6
    assert torch.equal(hqsam_iou(logits > 0, gt), hqsam_iou(torch.sigmoid(logits), gt))


def test_bad_input_errors():
    pred, gt = torch.rand(5, 6), torch.rand(5, 6) > 0.5
    with pytest.raises(ValueError, match="both_empty"):
        hqsam_iou(pred, gt, both_empty="nan!")
    with pytest.raises(TypeError, match="float32_values"):
        hqsam_boundary_iou(pred, gt, float32_values=1)
    with pytest.raises(ValueError, match="threshold"):
        hqsam_iou(pred, gt, 2.0)
    with pytest.raises(ValueError, match="pred"):
        hqsam_iou(torch.randn(5, 6) * 5, gt)  # logits: binarise (logits > 0) or apply sigmoid first


@pytest.mark.parametrize("options", [{}, {"threshold": 0.3, "both_empty": "zero"}, {"float32_values": True}])
def test_classes_equal_functionals(options):
    preds, gts = _tensors(_pairs())
    for cls, functional, extra in ((HQSAMIoU, hqsam_iou, {}),
                                   (HQSAMBoundaryIoU, hqsam_boundary_iou, {"dilation_ratio": 0.05})):
        for more in ({}, extra):
            expected = functional(preds, gts, **options, **more)
            metric = cls(**options, **more)
            metric.update(preds, gts)
            assert torch.equal(metric.compute(), expected), (cls, options, more)  # one update: the same sum
            metric.update(preds[:5], gts[:5])
            metric.update(preds[5:], gts[5:])
            assert torch.allclose(metric.compute(), expected, rtol=0.0, atol=1e-12)
            assert metric.higher_is_better is True


def test_boundary_class_passes_the_shared_tester():
    preds, gts = _tensors(_pairs())
    samples = list(zip(preds, gts))[:12]
    check_metric(functools.partial(HQSAMBoundaryIoU, dilation_ratio=0.05), samples,
                 float(hqsam_boundary_iou([s[0] for s in samples], [s[1] for s in samples], dilation_ratio=0.05)),
                 functional=functools.partial(hqsam_boundary_iou, dilation_ratio=0.05), atol=0.0,
                 invariance_atol=1e-12)


def test_state_names_are_those_of_saved_checkpoints():
    """The states (and the default options' fingerprint) keep the names checkpoints and compute groups hold."""
    assert sorted(HQSAMIoU().metric_state) == ["hqsam_iou_count", "hqsam_iou_sum", "options_0ac119f1"]
    assert sorted(HQSAMBoundaryIoU().metric_state) == ["hqsam_boundary_iou_count", "hqsam_boundary_iou_sum",
                                                       "options_f3ec6b43"]
    assert "options_4e38c2a4" in HQSAMBoundaryIoU(dilation_ratio=0.05).metric_state
    with pytest.raises(ValueError, match="dilation_ratio"):
        HQSAMBoundaryIoU(dilation_ratio=-1.0)
    with pytest.raises(TypeError, match="float32_values"):
        HQSAMIoU(float32_values="yes")
