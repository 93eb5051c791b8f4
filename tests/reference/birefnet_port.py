"""Reference BiRefNet evaluation (ZhengPeng7/BiRefNet ``evaluation/metrics.py``), written from docs/references.md
("BiRefNet protocol") and its definitions, numpy + OpenCV, one image at a time, uint8 inputs as read by
``cv2.imread(..., IMREAD_GRAYSCALE)`` (and ``cv2.resize`` to the gt size, which is the caller's here).

Reading (``_prepare_data``): ``gt > 128``; ``pred / 255``, then the per-image min-max stretch when
``max != min`` — every measure below except mBA sees the stretched prediction.

- MAE, MSE: ``mean(|pred - gt|)``, ``mean((pred - gt)²)`` against the **binarised** gt.
- mBA: ``pred > 128``, ``gt > 128`` on the raw bytes (no stretch), CascadePSP's BA
  (:mod:`tests.reference.cascadepsp_ba`), ``np.mean`` over images.
- BIoU: the grey boundary ``u8 - erode(u8)`` of ``u8 = (pred * 255).astype(uint8)`` with the boundary-iou-api
  erosion, the gt band ``mask_to_boundary(gt * 255) > 128``, 256-bin histograms of the boundary on and off
  the band, ``TP / (max(|G_b|, 1) + FP)`` with ``TP``, ``FP`` the reversed cumulative sums; curves averaged
  over images (``np.mean(axis=0)``), then ``max`` and ``mean``.
- S-measure: BiRefNet's own ``SMeasure``, which differs from PySODMetrics 1.6.2 only on degenerate regions:
  ``np.std(ddof=1)`` of a one-pixel region is NaN (PySODMetrics: 0); the quadrant SSIM divides by ``N - 1``
  (PySODMetrics: ``N - 1 + eps``), so a 1-pixel or empty quadrant gives NaN; and ``max(0, sm)`` is Python's
  ``max``, which returns 0 for a NaN ``sm`` (PySODMetrics' ``np.maximum`` keeps the NaN). So an image with
  such a region scores 0 in BiRefNet, a finite value or NaN in PySODMetrics; elsewhere they agree.
- E-measure, F-measure (β² = 0.3) and weighted F: the same code as PySODMetrics 1.6.2 (measured: identical
  to the bit on ``tests/helpers/data.py``); the tests use ``py_sod_metrics`` for them.
"""

from __future__ import annotations

import warnings

import numpy as np

from tests.reference.boundary_iou_ref import mask_to_boundary
from tests.reference.cascadepsp_ba import boundary_accuracy

EPS = np.spacing(1)


def prepare(pred_u8: np.ndarray, gt_u8: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(stretched float64 pred, bool gt)``."""
    gt = gt_u8 > 128
    pred = pred_u8 / 255
    if pred.max() != pred.min():
        pred = (pred - pred.min()) / (pred.max() - pred.min())
    return pred, gt


def mae(pred_u8: np.ndarray, gt_u8: np.ndarray) -> float:
    pred, gt = prepare(pred_u8, gt_u8)
    return float(np.mean(np.abs(pred - gt)))


def mse(pred_u8: np.ndarray, gt_u8: np.ndarray) -> float:
    pred, gt = prepare(pred_u8, gt_u8)
    return float(np.mean((pred - gt) ** 2))


def ba(pred_u8: np.ndarray, gt_u8: np.ndarray) -> float:
    """Per-image BA as ``MBAMeasure.step`` computes it (raw bytes, both ``> 128``)."""
    return boundary_accuracy(gt_u8 > 128, pred_u8 > 128)


def biou_curve(pred_u8: np.ndarray, gt_u8: np.ndarray, dilation_ratio: float = 0.02) -> np.ndarray:
    """Per-image (256,) grey-boundary IoU curve, index k <-> boundary level >= 255 - k."""
    pred, gt = prepare(pred_u8, gt_u8)
    boundary = mask_to_boundary((pred * 255).astype(np.uint8), dilation_ratio)
    band = mask_to_boundary((gt * 255).astype(np.uint8), dilation_ratio) > 128
    edges = np.linspace(0, 256, 257)
    on_band, _ = np.histogram(boundary[band], bins=edges)
    off_band, _ = np.histogram(boundary[~band], bins=edges)
    true_pos = np.cumsum(np.flip(on_band))
    false_pos = np.cumsum(np.flip(off_band))
    return true_pos / (max(np.count_nonzero(band), 1) + false_pos)


def _region_ssim(pred: np.ndarray, gt: np.ndarray) -> float:
    count = pred.size
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of an empty quadrant: NaN, as the reference
        x, y = np.mean(pred), np.mean(gt)
        var_x = np.sum((pred - x) ** 2) / (count - 1)
        var_y = np.sum((gt - y) ** 2) / (count - 1)
        cov = np.sum((pred - x) * (gt - y)) / (count - 1)
    numerator = 4 * x * y * cov
    denominator = (x**2 + y**2) * (var_x + var_y)
    if numerator != 0:
        return numerator / (denominator + EPS)
    return 1.0 if denominator == 0 else 0.0


def _object_score(values: np.ndarray) -> float:
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ddof=1 of one pixel: NaN, as the reference
        mean, std = np.mean(values), np.std(values, ddof=1)
    return 2 * mean / (mean**2 + 1 + std + EPS)


def s_measure(pred_u8: np.ndarray, gt_u8: np.ndarray, alpha: float = 0.5) -> float:
    """BiRefNet's per-image S-measure (see the module notes for where it leaves PySODMetrics)."""
    pred, gt = prepare(pred_u8, gt_u8)
    fg_share = np.mean(gt)
    if fg_share == 0:
        return float(1 - np.mean(pred))
    if fg_share == 1:
        return float(np.mean(pred))
    gt_f = gt.astype(np.float64)
    objects = (fg_share * _object_score((pred * gt)[gt_f == 1])
               + (1 - fg_share) * _object_score(((1 - pred) * (1 - gt_f))[(1 - gt_f) == 1]))
    height, width = gt.shape
    cy, cx = np.argwhere(gt).mean(axis=0).round()
    cx, cy = int(cx) + 1, int(cy) + 1
    w1 = cx * cy / (height * width)
    w2 = cy * (width - cx) / (height * width)
    w3 = (height - cy) * cx / (height * width)
    w4 = 1 - w1 - w2 - w3
    quadrants = [(slice(0, cy), slice(0, cx)), (slice(0, cy), slice(cx, width)),
                 (slice(cy, height), slice(0, cx)), (slice(cy, height), slice(cx, width))]
    scores = [_region_ssim(pred[rows, cols], gt_f[rows, cols]) for rows, cols in quadrants]
    regions = w1 * scores[0] + w2 * scores[1] + w3 * scores[2] + w4 * scores[3]
    return float(max(0, alpha * objects + (1 - alpha) * regions))  # Python max: a NaN score gives 0


def evaluate(preds_u8: list[np.ndarray], gts_u8: list[np.ndarray]) -> dict[str, object]:
    """Dataset values the way ``get_results`` reduces them (``np.mean`` of per-image values / curves)."""
    curves = np.array([biou_curve(p, g) for p, g in zip(preds_u8, gts_u8)], dtype=np.float64)
    curve = np.mean(curves, axis=0)
    return {
        "MAE": float(np.mean(np.array([mae(p, g) for p, g in zip(preds_u8, gts_u8)], np.float64))),
        "MSE": float(np.mean(np.array([mse(p, g) for p, g in zip(preds_u8, gts_u8)], np.float64))),
        "mBA": float(np.mean(np.array([ba(p, g) for p, g in zip(preds_u8, gts_u8)], np.float64))),
        "S": float(np.mean(np.array([s_measure(p, g) for p, g in zip(preds_u8, gts_u8)], np.float64))),
        "maxBIoU": float(curve.max()), "meanBIoU": float(curve.mean()), "biou_curve": curve, "biou_curves": curves,
    }
