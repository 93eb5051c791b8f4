"""The ``Metric`` classes of video object segmentation: DAVIS 2017 J, F and J & F.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.metrics.video.davis import (
    DavisF,
    DavisJ,
    DavisJAndF,
)

__all__ = [
    "DavisF",
    "DavisJ",
    "DavisJAndF",
]
