"""mBA (CascadePSP boundary accuracy, BiRefNet's mBA column) vs the CascadePSP port, per image and per dataset."""

from __future__ import annotations

import functools
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from nobg_metrics.functional.boundary.mba import mba_radii, mean_boundary_accuracy
from nobg_metrics.metrics.boundary.mba import MBA
from tests.helpers.data import SHAPES, as_tensors, sod_pairs
from tests.helpers.tester import check_metric
from tests.reference import birefnet_port, cascadepsp_ba

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import shapes


@functools.cache
def _pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    """Generated uint8 pairs (every gt kind over odd, 1xN, tiny shapes) and realistic ones with radii > 1."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the generator's ramp on a 1-row frame
        realistic = shapes.real_pairs((613, 407), count=2, seed=4) + shapes.real_pairs((1, 1000), count=1, seed=2)
    return sod_pairs(0, [*SHAPES, (120, 211)]) + realistic


def _same(actual: float, expected: float) -> bool:
    return (math.isnan(actual) and math.isnan(expected)) or abs(actual - expected) <= 1e-12


def test_radii_equal_the_reference():
    for height in (1, 2, 17, 150, 151, 299, 300, 613, 1024, 2048, 4000):
        for width in (1, 3, 149, 150, 407, 1024, 3000):
            assert mba_radii(height, width) == tuple(cascadepsp_ba.radii(height, width)), (height, width)


def test_per_image_and_dataset_equal_cascadepsp():
    pairs = _pairs()
    expected_mean, expected = cascadepsp_ba.mean_boundary_accuracy([p for p, _ in pairs], [g for _, g in pairs])
    for (pred, gt), value in zip(pairs, expected):
        ours = mean_boundary_accuracy(torch.from_numpy(pred), torch.from_numpy(gt), empty_gt="reference").item()
        assert _same(ours, value), (gt.shape, ours, value)
    assert math.isnan(expected_mean)  # one empty gt makes the reference's dataset value NaN
    assert math.isnan(mean_boundary_accuracy(*as_tensors(pairs), empty_gt="reference").item())
    kept = [(p, g) for p, g in pairs if 0 < (g > 128).sum() < g.size]
    ours = mean_boundary_accuracy(*as_tensors(kept), empty_gt="reference").item()
    assert abs(ours - birefnet_port.evaluate([p for p, _ in kept], [g for _, g in kept])["mBA"]) <= 1e-12


def test_threshold_rules():
    pred, gt = _pairs()[0]
    pred_t, gt_t = torch.from_numpy(pred), torch.from_numpy(gt)
    reference = cascadepsp_ba.boundary_accuracy(gt > 128, pred > 128)
    assert mean_boundary_accuracy(pred_t, gt_t).item() == pytest.approx(reference, abs=1e-12)  # None: uint8 > 128
    assert mean_boundary_accuracy(pred_t.double() / 255, gt_t, 128 / 255).item() == pytest.approx(reference, abs=1e-12)
    at_half = cascadepsp_ba.boundary_accuracy(gt > 128, pred / 255 > 0.5)  # v >= 128
    assert mean_boundary_accuracy(pred_t.double() / 255, gt_t).item() == pytest.approx(at_half, abs=1e-12)
    assert mean_boundary_accuracy(pred_t, gt_t, 0.5).item() == pytest.approx(at_half, abs=1e-12)
    assert mean_boundary_accuracy(pred_t > 128, gt_t).item() == pytest.approx(reference, abs=1e-12)  # bool pred
    stretched = birefnet_port.prepare(pred, gt)[0]
    expected = cascadepsp_ba.boundary_accuracy(gt > 128, stretched > 0.5)
    assert mean_boundary_accuracy(pred_t, gt_t, normalize=True).item() == pytest.approx(expected, abs=1e-12)


def test_empty_band_policies():
    empty, full = torch.zeros(6, 9, dtype=torch.bool), torch.ones(6, 9, dtype=torch.bool)
    pred = torch.zeros(6, 9)
    pred[1:3, 2:6] = 0.9  # 8 of 54 pixels
    for gt, agreement in ((empty, 46 / 54), (full, 8 / 54)):
        assert mean_boundary_accuracy(pred, gt).item() == pytest.approx(agreement, abs=1e-15)
        assert math.isnan(mean_boundary_accuracy(pred, gt, empty_gt="reference").item())
    assert mean_boundary_accuracy(torch.zeros(6, 9), empty).item() == 1.0
    assert mean_boundary_accuracy(torch.ones(1, 1), torch.ones(1, 1)).item() == 1.0


def test_class_through_the_shared_tester():
    samples = [(torch.from_numpy(p), torch.from_numpy(g)) for p, g in _pairs()[:14]]
    expected = np.mean([v for v in cascadepsp_ba.mean_boundary_accuracy(
        [p.numpy() for p, _ in samples], [g.numpy() for _, g in samples])[1] if not math.isnan(v)])
    kept = [s for s, value in zip(samples, cascadepsp_ba.mean_boundary_accuracy(
        [p.numpy() for p, _ in samples], [g.numpy() for _, g in samples])[1]) if not math.isnan(value)]
    check_metric(lambda: MBA(empty_gt="reference"), kept, expected, atol=1e-12,
                 functional=lambda p, g: mean_boundary_accuracy(p, g, empty_gt="reference"))
    check_metric(lambda: MBA(0.3, normalize=True), samples,
                 functional=lambda p, g: mean_boundary_accuracy(p, g, 0.3, normalize=True))


def test_bad_input_errors():
    with pytest.raises(ValueError, match="threshold"):
        MBA(1.5)
    with pytest.raises(TypeError, match="threshold"):
        mean_boundary_accuracy(torch.rand(3, 4), torch.rand(3, 4), "0.5")
    with pytest.raises(ValueError, match="empty_gt"):
        MBA(empty_gt="nan")
    with pytest.raises(ValueError, match=r"pred`?\[1\]"):
        mean_boundary_accuracy([torch.rand(3, 4), torch.rand(3, 5)], [torch.rand(3, 4), torch.rand(3, 4)])
    with pytest.raises(ValueError, match="pred"):
        mean_boundary_accuracy(torch.full((3, 4), 2.0), torch.rand(3, 4))


@pytest.mark.parametrize("shape", [(1, 5000), (5000, 1), (3, 4000), (4000, 3)])
def test_thin_images_equal_cascadepsp(shape):
    """Radii up to (H + W) / 300 on a one-pixel strip: clamped windows, transposed packing for tall images."""
    rng = np.random.default_rng(7)
    gt = np.where((np.arange(shape[0] * shape[1]).reshape(shape) // 97) % 3 == 0, 255, 0).astype(np.uint8)
    pred = np.where(rng.random(shape) < 0.9, gt, 255 - gt).astype(np.uint8)
    expected = cascadepsp_ba.boundary_accuracy(gt > 128, pred > 128)
    assert mean_boundary_accuracy(torch.from_numpy(pred), torch.from_numpy(gt)).item() == pytest.approx(expected,
                                                                                                       abs=1e-12)
