"""The ``Metric`` classes of boundary measures of one mask: Boundary IoU, the Boundary IoU paper's Trimap IoU and
boundary F, mBA, BiRefNet's grey-boundary IoU and HQ-SAM's mIoU / mBIoU.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.metrics.boundary.boundary_iou import BoundaryIoU
from nobg_metrics.metrics.boundary.boundary_measures import (
    BoundaryFMeasure,
    TrimapIoU,
)
from nobg_metrics.metrics.boundary.grey_boundary_iou import GreyBoundaryIoU
from nobg_metrics.metrics.boundary.hqsam import (
    HQSAMBoundaryIoU,
    HQSAMIoU,
)
from nobg_metrics.metrics.boundary.mba import MBA

__all__ = [
    "MBA",
    "BoundaryFMeasure",
    "BoundaryIoU",
    "GreyBoundaryIoU",
    "HQSAMBoundaryIoU",
    "HQSAMIoU",
    "TrimapIoU",
]
