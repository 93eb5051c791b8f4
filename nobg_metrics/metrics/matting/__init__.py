"""The ``Metric`` classes of alpha matting: the DIM evaluation's SAD, MSE, gradient and connectivity errors, and the
P3M-10k / AM-2k / AIM-500 protocol.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.metrics.matting.connectivity import ConnectivityError
from nobg_metrics.metrics.matting.gradient import GradientError
from nobg_metrics.metrics.matting.p3m import (
    P3MMAD,
    P3MMSE,
    P3MSAD,
    P3MConnectivityError,
    P3MGradientError,
)
from nobg_metrics.metrics.matting.sad_mse import (
    MSE,
    SAD,
)

__all__ = [
    "MSE",
    "P3MMAD",
    "P3MMSE",
    "P3MSAD",
    "SAD",
    "ConnectivityError",
    "GradientError",
    "P3MConnectivityError",
    "P3MGradientError",
]
