"""Weighted F-measure equals PySODMetrics 1.6.2 ``WeightedFmeasure``; edge policies; tie-break effect; tester; DDP."""

from __future__ import annotations

import functools

import numpy as np
import py_sod_metrics as psm
import pytest
import scipy.ndimage as ndi
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.ops.distance import nearest_feature
from tests.helpers.data import as_tensors, float_pairs, sod_pairs
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric


def reference(pairs, normalize=True) -> tuple[float, list[float]]:
    """PySODMetrics' dataset value and per-image values."""
    per_image = []
    for pred, gt in pairs:
        metric = psm.WeightedFmeasure()
        metric.step(pred, gt, normalize=normalize)
        per_image.append(float(metric.get_results()["wfm"]))
    return float(np.mean(per_image)), per_image


def thin_and_border_pairs(seed: int = 0):
    """Thin gts (1-px lines, a single pixel) and gts touching the border, uint8."""
    rng = np.random.default_rng(seed)
    pairs = []
    for h, w in [(41, 29), (16, 75), (3, 40), (1, 23)]:
        gt = np.zeros((h, w), np.uint8)
        gt[:, rng.integers(0, w)] = 255
        gt[0, :] = 255  # touches the top border
        pairs.append((rng.integers(0, 256, (h, w)).astype(np.uint8), gt))
        dot = np.zeros((h, w), np.uint8)
        dot[rng.integers(0, h), rng.integers(0, w)] = 255
        pairs.append((((dot > 0) * 200 + rng.integers(0, 40, (h, w))).astype(np.uint8), dot))
    return pairs


@pytest.mark.parametrize("seed", [0, 1])
def test_uint8_protocol_equals_pysodmetrics(seed):
    pairs = sod_pairs(seed) + thin_and_border_pairs(seed)
    expected, per_image = reference(pairs)
    preds, gts = as_tensors(pairs)
    ours = [F.weighted_f_measure(p, g, normalize=True, empty_gt="reference").item() for p, g in zip(preds, gts)]
    assert max(abs(a - b) for a, b in zip(ours, per_image)) <= 1e-12
    assert abs(F.weighted_f_measure(preds, gts, normalize=True, empty_gt="reference").item() - expected) <= 1e-12


def test_float64_without_normalize_equals_pysodmetrics():
    pairs = float_pairs(5)
    expected, _ = reference(pairs, normalize=False)
    preds = [torch.from_numpy(p) for p, _ in pairs]
    gts = [torch.from_numpy(g) for _, g in pairs]
    assert abs(F.weighted_f_measure(preds, gts, empty_gt="reference").item() - expected) <= 1e-12
    # float32 predictions are computed in float64: within float32 input rounding of the reference
    assert abs(F.weighted_f_measure([p.float() for p in preds], gts, empty_gt="reference").item() - expected) <= 1e-6


def test_beta2_is_the_references_beta():
    pairs = sod_pairs(4)[:10]
    preds, gts = as_tensors(pairs)
    for beta2 in (0.3, 2.0):
        values = []
        for pred, gt in pairs:
            metric = psm.WeightedFmeasure(beta=beta2)
            metric.step(pred, gt)
            values.append(metric.get_results()["wfm"])
        ours = F.weighted_f_measure(preds, gts, beta2, normalize=True, empty_gt="reference").item()
        assert abs(ours - np.mean(values)) <= 1e-12


def test_degenerate_gt_policies():
    pred = torch.tensor([[0.0, 0.25], [0.5, 0.25]], dtype=torch.float64)
    empty, full = torch.zeros(2, 2, dtype=torch.bool), torch.ones(2, 2, dtype=torch.bool)
    assert F.weighted_f_measure(pred, empty, empty_gt="reference").item() == 0.0
    assert F.weighted_f_measure(pred, empty).item() == 0.75  # 1 - mean(pred)
    assert F.weighted_f_measure(torch.zeros(2, 2), empty).item() == 1.0  # perfect on an empty gt
    assert F.weighted_f_measure(pred, full).item() == 0.25  # mean(pred)
    _, expected = reference([(pred.numpy(), full.numpy())], normalize=False)
    assert abs(F.weighted_f_measure(pred, full, empty_gt="reference").item() - expected[0]) <= 1e-12
    assert not torch.isnan(F.weighted_f_measure(torch.zeros(1, 5), torch.ones(1, 5), empty_gt="reference"))
    with pytest.raises(ValueError, match="empty_gt"):
        F.weighted_f_measure(pred, full, empty_gt="nan")
    with pytest.raises(ValueError, match="beta2"):
        nm.WeightedFMeasure(beta2=-1.0)


def _wfm_numpy(pred, gt, rows, cols):
    """The reference's steps in numpy with an injected nearest-pixel index map (for the tie experiment)."""
    dst = np.sqrt((rows - np.arange(gt.shape[0])[:, None]) ** 2 + (cols - np.arange(gt.shape[1])[None]) ** 2)
    error = np.abs(pred - gt)
    spread = error[rows, cols]
    kernel = psm.WeightedFmeasure().matlab_style_gauss2D((7, 7), sigma=5)
    blurred = ndi.convolve(spread, weights=kernel, mode="constant", cval=0)
    weighted = np.where(gt & (blurred < error), blurred, error) * np.where(gt, 1, 2 - np.exp(np.log(0.5) / 5 * dst))
    tpw, fpw = gt.sum() - weighted[gt].sum(), weighted[~gt].sum()
    recall, precision = 1 - weighted[gt].mean(), tpw / (tpw + fpw + np.spacing(1))
    return 2 * recall * precision / (recall + precision + np.spacing(1))


def test_tie_breaking_effect_is_negligible():
    """An EDT may pick another equidistant gt pixel than scipy: measure how much that moves the value.

    Ours, run on the mirrored image and mapped back, breaks every tie the opposite way (bottom/right).
    """
    worst, worst_ours, images_with_other_ties = 0.0, 0.0, 0
    for pred_u8, gt_u8 in sod_pairs(6) + thin_and_border_pairs(6):
        gt = gt_u8 > 128
        if not gt.any():
            continue
        pred = pred_u8 / 255
        h, w = gt.shape
        _, (scipy_rows, scipy_cols) = ndi.distance_transform_edt(~gt, return_indices=True)
        ours = nearest_feature(torch.from_numpy(gt))
        mirrored = nearest_feature(torch.from_numpy(gt[::-1, ::-1].copy()))
        rows, cols = h - 1 - mirrored.rows.numpy()[::-1, ::-1], w - 1 - mirrored.cols.numpy()[::-1, ::-1]
        images_with_other_ties += bool((rows != scipy_rows).any() or (cols != scipy_cols).any())
        reference_value = _wfm_numpy(pred, gt, scipy_rows, scipy_cols)
        worst = max(worst, abs(_wfm_numpy(pred, gt, rows, cols) - reference_value))
        worst_ours = max(worst_ours, abs(_wfm_numpy(pred, gt, ours.rows.numpy(), ours.cols.numpy()) - reference_value))
    print(f"tie-break effect: opposite ties move a per-image value by <= {worst:.3g} "
          f"({images_with_other_ties} images differ); our ties: {worst_ours:.3g}")
    assert images_with_other_ties > 0  # the experiment does exercise different ties
    assert worst <= 0.05 and worst_ours == 0.0  # ties matter (~1e-2): ours are scipy's


def _samples(seed=2):
    preds, gts = as_tensors(sod_pairs(seed, shapes=[(37, 53), (1, 17), (5, 5), (33, 70)]))
    return list(zip(preds, gts))


@pytest.mark.parametrize("empty_gt", ["reference", "agreement"])
def test_passes_the_shared_tester(empty_gt):
    samples = _samples()
    expected = reference([(p.numpy(), g.numpy()) for p, g in samples])[0] if empty_gt == "reference" else None
    check_metric(functools.partial(nm.WeightedFMeasure, normalize=True, empty_gt=empty_gt), samples, expected,
                 functional=functools.partial(F.weighted_f_measure, normalize=True, empty_gt=empty_gt))


@pytest.mark.slow
def test_two_process_ddp():
    check_ddp(functools.partial(nm.WeightedFMeasure, normalize=True), _samples(7)[:9])


@pytest.mark.slow
def test_1024_image_equals_pysodmetrics():
    yy, xx = np.mgrid[0:1024, 0:960]
    gt = np.where((yy - 400) ** 2 + (xx - 500) ** 2 <= 300**2, 255, 0).astype(np.uint8)
    pred = np.clip(np.random.default_rng(0).normal(0, 40, gt.shape) + gt * 0.8, 0, 255).astype(np.uint8)
    expected, _ = reference([(pred, gt)])
    ours = F.weighted_f_measure(torch.from_numpy(pred), torch.from_numpy(gt), normalize=True)
    assert abs(ours.item() - expected) <= 1e-9


@pytest.mark.parametrize("seed", [3, 4])
def test_the_cpu_crop_to_the_gt_box_changes_nothing(seed, monkeypatch):
    """On CPU the blur runs only on the gt's box (+3 px); other devices blur the whole image. Same values,
    for gts in the middle, at the borders, thin and batched together."""
    from nobg_metrics._seg_batch import prepare_segmentation
    from nobg_metrics.functional.sod import weighted_f as module
    from nobg_metrics.ops import host_reads

    pairs = [p for p in sod_pairs(seed, shapes=[(37, 53), (64, 48)]) if p[1].any()] + thin_and_border_pairs(seed)
    for pred, gt in pairs:
        rng = np.random.default_rng(seed)
        preds, gts = torch.from_numpy(np.stack([pred, rng.permutation(pred)])), torch.from_numpy(np.stack([gt, gt]))
        batch = prepare_segmentation(preds, gts, normalize=True)[0]
        cropped = module._weighted_f_per_image(batch, 1.0, "reference")
        monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)  # the device path: whole image
        whole_value = module._weighted_f_per_image(batch, 1.0, "reference")
        assert (whole_value - cropped).abs().max() <= 1e-14  # the sums run over the box: another order
        monkeypatch.undo()
