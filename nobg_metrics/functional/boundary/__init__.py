"""Boundary measures of one mask: Boundary IoU, the Boundary IoU paper's Trimap IoU and boundary F, mBA, BiRefNet's
grey-boundary IoU and HQ-SAM's mIoU / mBIoU.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.functional.boundary.boundary_iou import boundary_iou
from nobg_metrics.functional.boundary.boundary_measures import (
    boundary_f_measure,
    trimap_iou,
)
from nobg_metrics.functional.boundary.grey_boundary_iou import grey_boundary_iou
from nobg_metrics.functional.boundary.hqsam import (
    hqsam_boundary_iou,
    hqsam_iou,
)
from nobg_metrics.functional.boundary.mba import mean_boundary_accuracy

__all__ = [
    "boundary_f_measure",
    "boundary_iou",
    "grey_boundary_iou",
    "hqsam_boundary_iou",
    "hqsam_iou",
    "mean_boundary_accuracy",
    "trimap_iou",
]
