"""The ``Metric`` classes of instance segmentation: COCO / LVIS mask AP and Boundary AP, Cityscapes instance AP.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.metrics.instance.cityscapes_instances import CityscapesInstanceAP
from nobg_metrics.metrics.instance.mean_average_precision import MeanAveragePrecision

__all__ = [
    "CityscapesInstanceAP",
    "MeanAveragePrecision",
]
