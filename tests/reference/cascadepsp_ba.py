"""Reference boundary accuracy (BA / mBA): a port of CascadePSP's ``compute_boundary_acc`` (Cheng et al.,
CVPR 2020, ``util/compute_boundary_acc.py``), written from docs/references.md ("mBA"), OpenCV + numpy, one image
at a time.

Per image: ``r_max = (w + h) / 300``; for ``i = 0..4`` the radius ``1 + int((r_max - 1) / 5 * i)``, the band
``morphologyEx(gt, MORPH_GRADIENT, ellipse(2r+1)) > 0`` (OpenCV's default border), the share of band
pixels where the binarised prediction equals the gt; BA = Python ``sum`` of the five / 5. An empty band
divides numpy ``0 / 0`` (NaN), as the reference.
"""

from __future__ import annotations

import cv2
import numpy as np


def radii(height: int, width: int, steps: int = 5) -> list[int]:
    """The reference's radii, in its float arithmetic."""
    max_radius = (width + height) / 300
    return [1 + int((max_radius - 1) / steps * i) for i in range(steps)]


def boundary_accuracy(gt: np.ndarray, seg: np.ndarray) -> float:
    """BA of a binarised (H, W) prediction ``seg`` against a binarised gt (both bool or 0/1)."""
    gt8, seg8 = gt.astype(np.uint8), seg.astype(np.uint8)
    height, width = gt8.shape
    accuracies = []
    for radius in radii(height, width):
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
        band = cv2.morphologyEx(gt8, cv2.MORPH_GRADIENT, kernel) > 0
        gt_in, seg_in = gt8[band], seg8[band]
        agreeing = (gt_in * seg_in + (1 - gt_in) * (1 - seg_in)).sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracies.append(np.int64(agreeing) / np.int64(band.sum()))
    return float(sum(accuracies) / len(accuracies))


def mean_boundary_accuracy(preds_u8: list[np.ndarray], gts_u8: list[np.ndarray]) -> tuple[float, list[float]]:
    """CascadePSP ``eval_post.py``'s reading (``gt > 128``, ``seg > 128``) and mean: ``(mBA, per-image BA)``."""
    values = [boundary_accuracy(gt > 128, pred > 128) for pred, gt in zip(preds_u8, gts_u8)]
    return float(sum(values) / len(values)), values
