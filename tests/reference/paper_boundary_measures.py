"""The Boundary IoU paper's Table 1 measures written out with numpy + OpenCV, one image at a time: Trimap IoU and
the approximate boundary F-measure (Cheng et al., CVPR 2021), with the definitions of docs/boundary_measures.md.

- ``d = max(1, round(ratio * sqrt(H² + W²)))`` (Python round, half to even) — the Boundary IoU width rule;
- Trimap IoU's band: the mask is padded by ``d`` zero pixels (the outside is background), then ``cv2.dilate``
  and ``cv2.erode`` with a ``(2d+1)²`` ones kernel; the band is dilated AND NOT eroded;
- the F-measure: the one-pixel contour is ``M`` AND NOT its padded 3x3 erosion; "within d of it" is its padded
  ``(2d+1)²`` dilation.

Raw ratios: NaN where a formula divides 0/0 (the tests apply the named policies themselves).
"""

from __future__ import annotations

import math

import cv2
import numpy as np


def width_of(height: int, width: int, dilation_ratio: float) -> int:
    """``max(1, round(dilation_ratio * sqrt(H² + W²)))``."""
    return max(1, round(dilation_ratio * math.sqrt(height**2 + width**2)))


def _padded_window(mask: np.ndarray, radius: int, erode: bool) -> np.ndarray:
    """Erosion / dilation of a bool mask by a ``(2r+1)²`` square, everything outside the image background."""
    height, width = mask.shape
    padded = cv2.copyMakeBorder(mask.astype(np.uint8), radius, radius, radius, radius, cv2.BORDER_CONSTANT, value=0)
    kernel = np.ones((2 * radius + 1, 2 * radius + 1), np.uint8)
    done = cv2.erode(padded, kernel) if erode else cv2.dilate(padded, kernel)
    return done[radius:radius + height, radius:radius + width] > 0


def band(mask: np.ndarray, radius: int) -> np.ndarray:
    """The pixels within ``radius`` of the crack between ``mask`` and its complement (both sides)."""
    return _padded_window(mask, radius, erode=False) & ~_padded_window(mask, radius, erode=True)


def contour(mask: np.ndarray) -> np.ndarray:
    """The one-pixel inner contour of ``mask`` (image border included)."""
    return mask & ~_padded_window(mask, 1, erode=True)


def _ratio(numerator: int, denominator: int) -> float:
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.float64(numerator) / np.float64(denominator))


def trimap_iou(gt: np.ndarray, pred: np.ndarray, radius: int) -> float:
    """``|G_d ∩ G ∩ P| / |G_d ∩ (G ∪ P)|`` (NaN for an empty gt)."""
    gt_band = band(gt, radius)
    return _ratio(int((gt_band & gt & pred).sum()), int((gt_band & (gt | pred)).sum()))


def precision_recall(gt: np.ndarray, pred: np.ndarray, radius: int) -> tuple[float, float]:
    """``(p, r)`` of the approximate F: ``|P_1 ∩ G_d| / |P_1|``, ``|G_1 ∩ P_d| / |G_1|`` (NaN for an empty contour)."""
    pred_contour, gt_contour = contour(pred), contour(gt)
    near_gt = _padded_window(gt_contour, radius, erode=False)
    near_pred = _padded_window(pred_contour, radius, erode=False)
    precision = _ratio(int((pred_contour & near_gt).sum()), int(pred_contour.sum()))
    recall = _ratio(int((gt_contour & near_pred).sum()), int(gt_contour.sum()))
    return precision, recall


def boundary_f(gt: np.ndarray, pred: np.ndarray, radius: int) -> float:
    """``2 p r / (p + r)`` with the empty-contour conventions (precision 1 without a predicted contour, recall 1
    without a gt contour) and F = 0 when ``p + r = 0``."""
    precision, recall = precision_recall(gt, pred, radius)
    precision = 1.0 if math.isnan(precision) else precision
    recall = 1.0 if math.isnan(recall) else recall
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
