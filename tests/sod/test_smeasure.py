"""S-measure equals PySODMetrics 1.6.2 ``Smeasure``; where the reference is NaN or rounding-dependent, it
equals the reference with those two flaws fixed (``FixedSmeasure`` below) and the value is documented."""

from __future__ import annotations

import numpy as np
import py_sod_metrics as psm
import pytest
import torch

from nobg_metrics import functional as F
from tests.helpers.data import float_pairs, sod_pairs

EPS = np.spacing(1)


class FixedSmeasure(psm.Smeasure):
    """The reference with our two definitions: an empty quadrant weighs 0 (instead of NaN), and the mean of
    a constant quadrant is exactly that constant (numpy's rounded mean may differ by an ulp and flip ssim)."""

    def region(self, pred, gt):
        h, w = gt.shape
        cy, cx = np.argwhere(gt).mean(axis=0).round()
        cy, cx = int(cy) + 1, int(cx) + 1
        parts = [(pred[0:cy, 0:cx], gt[0:cy, 0:cx]), (pred[0:cy, cx:w], gt[0:cy, cx:w]),
                 (pred[cy:h, 0:cx], gt[cy:h, 0:cx]), (pred[cy:h, cx:w], gt[cy:h, cx:w])]
        weights = [cx * cy / (h * w), cy * (w - cx) / (h * w), (h - cy) * cx / (h * w)]
        weights.append(1 - weights[0] - weights[1] - weights[2])
        return sum(self.ssim(p, g) * wt if p.size else 0.0 for (p, g), wt in zip(parts, weights))

    def ssim(self, pred, gt):
        n = pred.size
        x = pred.flat[0] if pred.min() == pred.max() else np.mean(pred)
        y = np.mean(gt)
        sigma_x = np.sum((pred - x) ** 2) / (n - 1 + EPS)
        sigma_y = np.sum((gt - y) ** 2) / (n - 1 + EPS)
        sigma_xy = np.sum((pred - x) * (gt - y)) / (n - 1 + EPS)
        alpha = 4 * x * y * sigma_xy
        beta = (x**2 + y**2) * (sigma_x + sigma_y)
        return alpha / (beta + EPS) if alpha != 0 else (1.0 if beta == 0 else 0.0)


def per_image(cls, pairs, normalize):
    out = []
    for pred, gt in pairs:
        metric = cls()
        metric.step(pred, gt, normalize=normalize)
        out.append(float(metric.get_results()["sm"]))
    return np.array(out)


def _ours(pairs, normalize):
    return np.array([F.s_measure(torch.from_numpy(p), torch.from_numpy(g), normalize=normalize).item()
                     for p, g in pairs])


@pytest.mark.parametrize("normalize", [True, False])
def test_per_image_parity(normalize):
    pairs = sod_pairs(0) if normalize else float_pairs(0)
    ours = _ours(pairs, normalize)
    fixed = per_image(FixedSmeasure, pairs, normalize)
    plain = per_image(psm.Smeasure, pairs, normalize)
    assert np.isfinite(ours).all()
    assert np.abs(ours - fixed).max() <= 1e-6
    same = np.isfinite(plain) & (plain == fixed)
    assert same.sum() >= len(pairs) - 8  # the rest: NaN (empty quadrant) or a constant-quadrant coin flip
    assert np.abs(ours[same] - plain[same]).max() <= 1e-6


def test_dataset_value_and_batching_equal_reference():
    pairs = [pair for pair in sod_pairs(1) if pair[0].min() != pair[0].max()]
    fixed = per_image(FixedSmeasure, pairs, True)
    preds = [torch.from_numpy(p) for p, _ in pairs]
    gts = [torch.from_numpy(g) for _, g in pairs]
    assert abs(F.s_measure(preds, gts, normalize=True).item() - fixed.mean()) <= 1e-6


def test_uint8_table_path_equals_float_path():
    pairs = sod_pairs(2)
    for pred, gt in pairs[:20]:
        as_uint8 = F.s_measure(torch.from_numpy(pred), torch.from_numpy(gt), normalize=False).item()
        as_float = F.s_measure(torch.from_numpy(pred / 255), torch.from_numpy(gt > 128)).item()
        assert abs(as_uint8 - as_float) <= 1e-9


def test_centroid_on_last_row_is_nan_in_reference_and_defined_here():
    gt = np.zeros((6, 9), bool)
    gt[5, 2:7] = True  # centroid row 5 -> cy = 6 = h: the bottom quadrants are empty
    pred = np.linspace(0, 1, 54).reshape(6, 9)
    with np.errstate(all="ignore"):
        assert np.isnan(per_image(psm.Smeasure, [(pred, gt)], False)[0])
    ours = F.s_measure(torch.from_numpy(pred), torch.from_numpy(gt)).item()
    assert np.isfinite(ours)
    assert abs(ours - per_image(FixedSmeasure, [(pred, gt)], False)[0]) <= 1e-12


def test_degenerate_gt_is_the_reference_agreement_score_under_both_policies():
    pred = torch.rand(1, 5, 7, dtype=torch.float64)
    empty, full = torch.zeros(1, 5, 7, dtype=torch.bool), torch.ones(1, 5, 7, dtype=torch.bool)
    for policy in ("agreement", "reference"):
        assert abs(F.s_measure(pred, empty, empty_gt=policy).item() - (1 - pred.mean().item())) <= 1e-12
        assert abs(F.s_measure(pred, full, empty_gt=policy).item() - pred.mean().item()) <= 1e-12


def test_bad_alpha():
    with pytest.raises(ValueError, match="alpha"):
        F.s_measure(torch.rand(3, 3), torch.rand(3, 3) > 0.5, alpha=1.5)
