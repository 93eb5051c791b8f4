"""The ``Metric`` classes of panoptic segmentation: PQ and Boundary PQ (COCO panoptic, Cityscapes).
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.metrics.panoptic.panoptic_quality import (
    ModifiedPanopticQuality,
    PanopticQuality,
)

__all__ = [
    "ModifiedPanopticQuality",
    "PanopticQuality",
]
