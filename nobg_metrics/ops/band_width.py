"""The Boundary IoU paper's band width: how many pixels from a contour a boundary band reaches, from the image's
diagonal (Cheng et al., CVPR 2021, boundary-iou-api ``mask_to_boundary``: ``dilation = int(round(dilation_ratio *
img_diag))``, at least 1). Every boundary measure (Boundary IoU, Trimap IoU, grey BIoU, HQ-SAM's mBIoU, Boundary AP
and PQ, Cityscapes' Boundary AP) takes its band from here."""

from __future__ import annotations

import math

__all__ = ["dilation_radius"]


def dilation_radius(height: int, width: int, dilation_ratio: float, dilation_pixels: int | None = None) -> int:
    """Band width ``d`` of an image size: ``dilation_pixels``, else ``max(1, round(ratio * diagonal))``.

    Python's ``round`` (half to even) on the float64 product, as the reference's ``int(round(...))``.

    Examples:
        >>> dilation_radius(1024, 1024, 0.02), dilation_radius(1024, 2048, 0.005), dilation_radius(5, 5, 0.02)
        (29, 11, 1)
    """
    if dilation_pixels is not None:
        return dilation_pixels
    return max(1, round(dilation_ratio * math.sqrt(height**2 + width**2)))
