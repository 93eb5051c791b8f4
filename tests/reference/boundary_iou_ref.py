"""Reference Boundary IoU: a port of the boundary-iou-api definition (Cheng et al., CVPR 2021), written
from docs/references.md ("Boundary IoU"), OpenCV + numpy, one image at a time.

``mask_to_boundary`` pads the mask by one zero pixel, erodes ``d`` times with a 3x3 kernel (OpenCV's
default border) and crops: the image border counts as contour. ``boundary_iou`` returns the raw
``|I| / |U|`` of the two bands — NaN for 0/0, as the reference (numpy) does.
"""

from __future__ import annotations

import cv2
import numpy as np


def dilation_of(height: int, width: int, dilation_ratio: float) -> int:
    """``max(1, int(round(dilation_ratio * sqrt(H² + W²))))`` (numpy float64, round half to even)."""
    return max(1, round(dilation_ratio * np.sqrt(height**2 + width**2)))


def mask_to_boundary(mask: np.ndarray, dilation_ratio: float = 0.02, dilation: int | None = None) -> np.ndarray:
    """Inner boundary band of a (H, W) 0/1 uint8 mask: ``mask - eroded``, uint8 0/1."""
    height, width = mask.shape
    if dilation is None:
        dilation = dilation_of(height, width, dilation_ratio)
    padded = cv2.copyMakeBorder(mask, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=dilation)
    return mask - eroded[1:height + 1, 1:width + 1]


def band_counts(gt: np.ndarray, dt: np.ndarray, dilation_ratio: float = 0.02,
                dilation: int | None = None) -> tuple[int, int]:
    """``(|I|, |U|)`` of the bands of two (H, W) bool masks."""
    gt_band = mask_to_boundary(gt.astype(np.uint8), dilation_ratio, dilation)
    dt_band = mask_to_boundary(dt.astype(np.uint8), dilation_ratio, dilation)
    return int(((gt_band * dt_band) > 0).sum()), int(((gt_band + dt_band) > 0).sum())


def boundary_iou(gt: np.ndarray, dt: np.ndarray, dilation_ratio: float = 0.02, dilation: int | None = None) -> float:
    """The reference's per-image Boundary IoU (NaN when both bands are empty)."""
    intersection, union = band_counts(gt, dt, dilation_ratio, dilation)
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.float64(intersection) / np.float64(union))


def mask_iou(gt: np.ndarray, dt: np.ndarray) -> float:
    """Plain mask IoU of two bool masks (NaN when both are empty)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.float64((gt & dt).sum()) / np.float64((gt | dt).sum()))
