"""Video object segmentation: DAVIS 2017 J, F and J & F.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.functional.video.davis import (
    davis_contour_accuracy,
    davis_region_similarity,
)
from nobg_metrics.functional.video.davis_sequences import (
    davis_f,
    davis_j,
    davis_j_and_f,
)
from nobg_metrics.functional.video.davis_statistics import davis_statistics

__all__ = [
    "davis_contour_accuracy",
    "davis_f",
    "davis_j",
    "davis_j_and_f",
    "davis_region_similarity",
    "davis_statistics",
]
