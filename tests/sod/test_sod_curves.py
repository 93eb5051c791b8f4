"""F- and E-measure curves equal PySODMetrics 1.6.2 ``Fmeasure``/``Emeasure`` point for point."""

from __future__ import annotations

import warnings

import numpy as np
import py_sod_metrics as psm
import pytest
import torch

from nobg_metrics import functional as F
from tests.helpers.data import as_tensors, float_pairs, sod_pairs

FUNCTIONS = {
    ("f", "max"): F.f_measure_max, ("f", "mean"): F.f_measure_mean, ("f", "adaptive"): F.f_measure_adaptive,
    ("e", "max"): F.e_measure_max, ("e", "mean"): F.e_measure_mean, ("e", "adaptive"): F.e_measure_adaptive,
}


def reference(pairs, normalize: bool) -> dict[str, np.ndarray]:
    """PySODMetrics' mean curves and adaptive values on numpy (pred, gt) pairs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fm, em = psm.Fmeasure(), psm.Emeasure()
    for pred, gt in pairs:
        fm.step(pred, gt, normalize=normalize)
        em.step(pred, gt, normalize=normalize)
    f, e = fm.get_results(), em.get_results()
    return {"precision": f["pr"]["p"], "recall": f["pr"]["r"], "f_measure": f["fm"]["curve"],
            "e_measure": e["em"]["curve"], "f_adaptive": f["fm"]["adp"], "e_adaptive": e["em"]["adp"]}


def _check(preds, gts, expected, normalize):
    curves = F.threshold_curves(preds, gts, normalize=normalize, empty_gt="reference")
    for name in ("precision", "recall", "f_measure", "e_measure"):
        diff = np.abs(getattr(curves, name).numpy() - expected[name]).max()
        assert diff <= 1e-6, (name, diff)
    values = {("f", "max"): expected["f_measure"].max(), ("f", "mean"): expected["f_measure"].mean(),
              ("f", "adaptive"): expected["f_adaptive"], ("e", "max"): expected["e_measure"].max(),
              ("e", "mean"): expected["e_measure"].mean(), ("e", "adaptive"): expected["e_adaptive"]}
    for key, function in FUNCTIONS.items():
        ours = function(preds, gts, normalize=normalize, empty_gt="reference")
        assert ours.dtype == torch.float64 and ours.ndim == 0
        assert abs(ours.item() - values[key]) <= 1e-6, key


@pytest.mark.parametrize("seed", [0, 1])
def test_uint8_normalized_curves_equal_pysodmetrics(seed):
    pairs = sod_pairs(seed)
    preds, gts = as_tensors(pairs)
    _check(preds, gts, reference(pairs, True), True)


def test_float64_curves_without_normalize_equal_pysodmetrics():
    pairs = float_pairs(2)
    preds = [torch.from_numpy(p) for p, _ in pairs]
    gts = [torch.from_numpy(g) for _, g in pairs]
    _check(preds, gts, reference(pairs, False), False)


def test_uint8_without_normalize_bins_by_level():
    pairs = sod_pairs(4)
    preds, gts = as_tensors(pairs)
    float_in = [(p.astype(np.float64) / 255, g > 128) for p, g in pairs]
    _check(preds, gts, reference(float_in, False), False)


def test_float32_within_tolerance():
    pairs = float_pairs(3)
    preds = [torch.from_numpy(p.astype(np.float32)) for p, _ in pairs]
    gts = [torch.from_numpy(g) for _, g in pairs]
    expected = reference([(p.astype(np.float32), g) for p, g in pairs], False)
    curves = F.threshold_curves(preds, gts, empty_gt="reference")
    assert np.abs(curves.f_measure.numpy() - expected["f_measure"]).max() <= 1e-6


def _brute_force(pred: np.ndarray, gt: np.ndarray, num_thresholds: int, beta2: float = 0.3):
    """Per-threshold loops in numpy: floor((T-1) pred) >= k, k = T-1 .. 0; agreement for degenerate gt."""
    levels = np.floor(pred * (num_thresholds - 1)).astype(np.int64)
    f_curve, agreement = [], []
    for k in range(num_thresholds - 1, -1, -1):
        binary = levels >= k
        tp = np.count_nonzero(binary & gt)
        precision, recall = tp / max(binary.sum(), 1), tp / max(gt.sum(), 1)
        num = (1 + beta2) * precision * recall
        f_curve.append(0.0 if num == 0 else num / (beta2 * precision + recall))
        agreement.append(np.mean(binary == gt))
    return np.array(f_curve), np.array(agreement)


@pytest.mark.parametrize("num_thresholds", [2, 11, 1000])
def test_other_threshold_counts_quantise_floor_t_minus_1(num_thresholds):
    rng = np.random.default_rng(num_thresholds)
    pred, gt = rng.uniform(0, 1, (13, 21)), rng.uniform(0, 1, (13, 21)) > 0.6
    curves = F.threshold_curves(torch.from_numpy(pred), torch.from_numpy(gt), num_thresholds)
    expected, _ = _brute_force(pred, gt, num_thresholds)
    assert curves.f_measure.shape == (num_thresholds,)
    assert np.abs(curves.f_measure.numpy() - expected).max() <= 1e-12
    assert curves.thresholds[0] == 1 and curves.thresholds[-1] == 0


@pytest.mark.parametrize("kind", ["empty", "full"])
def test_agreement_policy_scores_pixel_agreement_for_degenerate_gt(kind):
    rng = np.random.default_rng(9)
    gt = np.zeros((7, 9), bool) if kind == "empty" else np.ones((7, 9), bool)
    pred = rng.uniform(0, 1, gt.shape)
    _, agreement = _brute_force(pred, gt, 256)
    curves = F.threshold_curves(torch.from_numpy(pred), torch.from_numpy(gt))
    assert np.abs(curves.f_measure.numpy() - agreement).max() <= 1e-12
    assert np.abs(curves.e_measure.numpy() - agreement).max() <= 1e-12
    adaptive = pred >= min(2 * pred.mean(), 1)
    assert abs(F.f_measure_adaptive(torch.from_numpy(pred), torch.from_numpy(gt)).item()
               - np.mean(adaptive == gt)) <= 1e-12
    perfect = torch.from_numpy(gt.astype(np.float64))
    assert F.f_measure_max(perfect, torch.from_numpy(gt)).item() == 1.0
    reference_value = F.f_measure_max(perfect, torch.from_numpy(gt), empty_gt="reference").item()
    assert reference_value == (0.0 if kind == "empty" else 1.0)


def test_one_pixel_image_agreement_is_bounded():
    pred, gt = torch.tensor([[0.7]]), torch.tensor([[True]])
    assert F.e_measure_max(pred, gt).item() == 1.0
    assert F.e_measure_max(pred, gt, empty_gt="reference").item() > 1e15  # 1 / (N - 1 + eps)


def test_bad_options_name_the_argument():
    pred, gt = torch.rand(1, 4, 4), torch.rand(1, 4, 4) > 0.5
    with pytest.raises(ValueError, match="num_thresholds"):
        F.f_measure_max(pred, gt, 1)
    with pytest.raises(ValueError, match="beta2"):
        F.f_measure_max(pred, gt, beta2=0.0)
    with pytest.raises(ValueError, match="empty_gt"):
        F.e_measure_mean(pred, gt, empty_gt="nan")
