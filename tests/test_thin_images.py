"""Thin images: one-pixel strips score as their references do, and every metric's memory and time stay bounded.

Fast tier: 1 x 5000 and 5000 x 1 images (and strips a few pixels thick) against the references, on the paths that
thin images take (the context filter's strips along the long side, tall images labelled or packed transposed, mBA's
clamped windows; tests/ops/test_ellipse.py and tests/boundary/test_mba.py hold the ellipse's, and
tests/matting/test_matting_p3m.py the P3M gradient's tiles).

Slow tier: every metric class of the registry on one 1 x 10^6 and one 10^6 x 1 image in its own process
(tests/helpers/footprint.py): peak memory over the inputs at most :data:`BYTES_PER_PIXEL` (docs/scaling.md, "Thin
images"), and CPU time at 10^6 pixels at most :data:`LINEAR_RATIO` times that at 10^5 (linear: 10; quadratic: 100).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.collection import METRIC_NAMES, metric_class
from tests.helpers.footprint import footprint
from tests.reference import birefnet_port, boundary_iou_ref, p3m_port
from tests.reference import dim_matting as dim
from tests.sod.test_context_measure import TOLERANCE as CM_TOLERANCE
from tests.sod.test_context_measure import _reference as context_reference

THIN = [(1, 5000), (5000, 1), (3, 2000), (2000, 3)]


def _pair(shape: tuple[int, int], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A gt of runs of ~100 px along the strip (as thin structures are) and a noisy uint8 prediction of it."""
    rng = np.random.default_rng(seed)
    along = np.arange(shape[0] * shape[1]).reshape(shape) if shape[0] <= shape[1] else (
        np.arange(shape[0] * shape[1]).reshape(shape[::-1]).T)
    gt = np.where((along // 97) % 3 == 0, 255, 0).astype(np.uint8)
    pred = np.clip(gt.astype(np.int64) + rng.integers(-90, 90, shape), 0, 255).astype(np.uint8)
    return pred, gt


@pytest.mark.parametrize("shape", THIN)
def test_context_measure_of_thin_images_equals_the_reference(shape):
    pred, gt = _pair(shape)
    ours = F.context_measure(torch.from_numpy(pred), torch.from_numpy(gt), normalize=True, empty_gt="reference")
    assert abs(float(ours) - context_reference(pred, gt)) <= CM_TOLERANCE


@pytest.mark.parametrize("shape", THIN)
def test_boundary_ious_of_thin_images_equal_the_references(shape):
    pred, gt = _pair(shape)
    ours = F.boundary_iou(torch.from_numpy(pred), torch.from_numpy(gt), empty_gt="reference")
    assert float(ours) == pytest.approx(boundary_iou_ref.boundary_iou(gt > 128, pred > 128), abs=1e-12)
    curve = F.grey_boundary_iou(torch.from_numpy(pred), torch.from_numpy(gt), mode="curve", normalize=True,
                                empty_gt="reference")
    np.testing.assert_allclose(curve.numpy(), birefnet_port.biou_curve(pred, gt), rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape", THIN)
def test_connectivity_errors_of_thin_images_equal_the_ports(shape):
    """The level-map labelling runs transposed on tall images, its tie rule flipped with it (MATLAB's column-major
    first component for DIM, skimage's raster order for P3M)."""
    pred, gt = _pair(shape, seed=1)
    ours = float(F.connectivity_error(torch.from_numpy(pred), torch.from_numpy(gt)))
    assert ours == pytest.approx(dim.connectivity(pred, gt), rel=1e-12, abs=1e-9)
    ours = float(nm.P3MConnectivityError()(torch.from_numpy(pred), torch.from_numpy(gt)))
    assert ours == pytest.approx(p3m_port.connectivity(p3m_port.read_alpha(pred), p3m_port.read_alpha(gt)),
                                 rel=1e-12, abs=1e-9)


def test_a_tie_between_equal_components_of_a_tall_image_follows_each_protocol():
    """Two equal joint components in one column: MATLAB's column-major first and skimage's raster first are the
    same component here (a column), so both pick the top one — also when the map is labelled transposed."""
    gt = np.zeros((40, 1), np.uint8)
    gt[3:8], gt[20:25] = 255, 255
    pred = gt.copy()
    pred[30] = 255  # a speck below: its own component, never the largest
    values = (float(F.connectivity_error(torch.from_numpy(pred), torch.from_numpy(gt))),
              float(nm.P3MConnectivityError()(torch.from_numpy(pred), torch.from_numpy(gt))))
    assert values[0] == pytest.approx(dim.connectivity(pred, gt), abs=1e-12)
    assert values[1] == pytest.approx(p3m_port.connectivity(p3m_port.read_alpha(pred), p3m_port.read_alpha(gt)),
                                      abs=1e-12)


BYTES_PER_PIXEL: dict[str, float] = {
    # the confusion family, MAE and the bit-packed morphology: a few bytes a pixel
    "mae": 20, "iou_metric": 20, "dice": 20, "accuracy": 20, "ber": 20, "f_measure_max": 20, "e_measure_max": 20,
    "f1_max": 20, "fpr_max": 20, "pr_auc": 20, "roc_auc": 20, "kappa_max": 20, "precision_max": 20,
    "recall_max": 20, "specificity_max": 20, "boundary_iou": 20, "mba": 20, "grey_biou_max": 30,
    "trimap_iou": 20, "boundary_f_measure": 20, "hqsam_iou": 20, "hqsam_boundary_iou": 20, "birefnet_mse": 60,
    # float maps and filters
    "sad": 60, "mse_metric": 80, "p3m_sad": 100, "p3m_mse": 100, "p3m_mad": 80, "s_measure": 50,
    "p3m_gradient": 60, "gradient_error": 400, "weighted_f_measure": 300, "context_measure": 250,
    "camouflage_context_measure": 300, "si_mae": 200, "si_f_measure_max": 200,
    # data-sized lists: runs, contour points, components (random data: as many as an image can have)
    "connectivity_error": 600, "p3m_connectivity": 600, "hce": 600, "msiou_max": 2000,
}
"""Per metric (one registered name per class): the documented bound on the peak extra memory of one call, in bytes
per pixel, on a 1 x 10^6 or 10^6 x 1 image of random data (docs/scaling.md, "Thin images")."""

LINEAR_RATIO = 25.0
"""CPU time at 10^6 pixels over that at 10^5, at most: 10 for a linear cost; the slack covers the fixed per-call
costs that dominate the small call and a shared machine's noise (a quadratic step would give ~100)."""


@pytest.mark.slow
@pytest.mark.parametrize("long_side", ["width", "height"])
@pytest.mark.parametrize("name", sorted(BYTES_PER_PIXEL))
def test_every_metric_on_a_million_pixel_strip(name, long_side):
    measured = footprint(name, [100_000, 1_000_000], long_side)
    small, large = measured[100_000], measured[1_000_000]
    bound = BYTES_PER_PIXEL[name]
    assert large["bytes"] <= bound * 1e6, f"{name}: {large['bytes'] / 1e6:.0f} B/px > {bound} B/px"
    ratio = large["seconds"] / max(small["seconds"], 0.01)
    assert ratio <= LINEAR_RATIO, f"{name}: {large['seconds']:.2f} s at 10^6 px, {ratio:.1f}x the 10^5 call"


def test_the_bounds_cover_every_metric_class():
    classes = {metric_class(name) for name in METRIC_NAMES}
    assert {metric_class(name) for name in BYTES_PER_PIXEL} == classes
