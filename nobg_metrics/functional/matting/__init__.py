"""Alpha matting: the DIM evaluation's SAD, MSE, gradient and connectivity errors, and the P3M-10k / AM-2k / AIM-500
protocol.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.functional.matting.connectivity import connectivity_error
from nobg_metrics.functional.matting.gradient import gradient_error
from nobg_metrics.functional.matting.p3m import (
    p3m_mad,
    p3m_mse,
    p3m_sad,
)
from nobg_metrics.functional.matting.p3m_connectivity import p3m_connectivity_error
from nobg_metrics.functional.matting.p3m_gradient import p3m_gradient_error
from nobg_metrics.functional.matting.sad_mse import (
    mse_metric,
    sad,
)

__all__ = [
    "connectivity_error",
    "gradient_error",
    "mse_metric",
    "p3m_connectivity_error",
    "p3m_gradient_error",
    "p3m_mad",
    "p3m_mse",
    "p3m_sad",
    "sad",
]
