"""Panoptic segmentation: PQ and Boundary PQ (COCO panoptic, Cityscapes).
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.functional.panoptic.panoptic_quality import (
    modified_panoptic_quality,
    panoptic_quality,
)

__all__ = [
    "modified_panoptic_quality",
    "panoptic_quality",
]
