"""Instance segmentation: COCO / LVIS mask AP and Boundary AP, Cityscapes instance AP.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.functional.instance.ap_resampling import (
    ResamplingRecords,
    resampling_records,
    weighted_summary,
)
from nobg_metrics.functional.instance.cityscapes_instances import cityscapes_instance_ap
from nobg_metrics.functional.instance.mean_average_precision import mean_average_precision
from nobg_metrics.functional.instance.tide import tide_errors

__all__ = [
    "ResamplingRecords",
    "cityscapes_instance_ap",
    "mean_average_precision",
    "resampling_records",
    "tide_errors",
    "weighted_summary",
]
