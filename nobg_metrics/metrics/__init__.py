"""``torchmetrics.Metric`` classes: fixed-size summed states, synced over DDP.

The classes of every module of this package (each module's ``__all__``) are exported here; a metric's module is its
only registration. The registered names, tiers and groups are the catalog's (:mod:`nobg_metrics.catalog`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
if TYPE_CHECKING:  # the names as static tools see them; at run time, __getattr__ below imports them
    from nobg_metrics.metrics.boundary import (
        MBA,
        BoundaryFMeasure,
        BoundaryIoU,
        GreyBoundaryIoU,
        HQSAMBoundaryIoU,
        HQSAMIoU,
        TrimapIoU,
    )
    from nobg_metrics.metrics.instance import (
        CityscapesInstanceAP,
        MeanAveragePrecision,
    )
    from nobg_metrics.metrics.matting import (
        MSE,
        P3MMAD,
        P3MMSE,
        P3MSAD,
        SAD,
        ConnectivityError,
        GradientError,
        P3MConnectivityError,
        P3MGradientError,
    )
    from nobg_metrics.metrics.panoptic import (
        ModifiedPanopticQuality,
        PanopticQuality,
    )
    from nobg_metrics.metrics.sod import (
        BER,
        F1,
        FPR,
        HCE,
        MAE,
        PRAUC,
        ROCAUC,
        Accuracy,
        BinarisedGtMSE,
        CamouflageContextMeasure,
        ConfusionMetric,
        ContextMeasure,
        Dice,
        EMeasure,
        FMeasure,
        IoU,
        Kappa,
        MSIoU,
        Precision,
        Recall,
        SizeInvariant,
        SizeInvariantConfusion,
        SizeInvariantMAE,
        SMeasure,
        Specificity,
        WeightedFMeasure,
    )
    from nobg_metrics.metrics.video import (
        DavisF,
        DavisJ,
        DavisJAndF,
    )

__all__ = [
    "BER",
    "F1",
    "FPR",
    "HCE",
    "MAE",
    "MBA",
    "MSE",
    "P3MMAD",
    "P3MMSE",
    "P3MSAD",
    "PRAUC",
    "ROCAUC",
    "SAD",
    "Accuracy",
    "BinarisedGtMSE",
    "BoundaryFMeasure",
    "BoundaryIoU",
    "CamouflageContextMeasure",
    "CityscapesInstanceAP",
    "ConfusionMetric",
    "ConnectivityError",
    "ContextMeasure",
    "DavisF",
    "DavisJ",
    "DavisJAndF",
    "Dice",
    "EMeasure",
    "FMeasure",
    "GradientError",
    "GreyBoundaryIoU",
    "HQSAMBoundaryIoU",
    "HQSAMIoU",
    "IoU",
    "Kappa",
    "MSIoU",
    "MeanAveragePrecision",
    "ModifiedPanopticQuality",
    "P3MConnectivityError",
    "P3MGradientError",
    "PanopticQuality",
    "Precision",
    "Recall",
    "SMeasure",
    "SizeInvariant",
    "SizeInvariantConfusion",
    "SizeInvariantMAE",
    "Specificity",
    "TrimapIoU",
    "WeightedFMeasure",
]

_DOMAINS: dict[str, tuple[str, ...]] = {
    "nobg_metrics.metrics.boundary": (
        "MBA", "BoundaryFMeasure", "BoundaryIoU", "GreyBoundaryIoU", "HQSAMBoundaryIoU", "HQSAMIoU", "TrimapIoU",
    ),
    "nobg_metrics.metrics.instance": (
        "CityscapesInstanceAP", "MeanAveragePrecision",
    ),
    "nobg_metrics.metrics.matting": (
        "MSE", "P3MMAD", "P3MMSE", "P3MSAD", "SAD", "ConnectivityError", "GradientError", "P3MConnectivityError",
        "P3MGradientError",
    ),
    "nobg_metrics.metrics.panoptic": (
        "ModifiedPanopticQuality", "PanopticQuality",
    ),
    "nobg_metrics.metrics.sod": (
        "BER", "F1", "FPR", "HCE", "MAE", "PRAUC", "ROCAUC", "Accuracy", "BinarisedGtMSE", "CamouflageContextMeasure",
        "ConfusionMetric", "ContextMeasure", "Dice", "EMeasure", "FMeasure", "IoU", "Kappa", "MSIoU", "Precision",
        "Recall", "SMeasure", "SizeInvariant", "SizeInvariantConfusion", "SizeInvariantMAE", "Specificity",
        "WeightedFMeasure",
    ),
    "nobg_metrics.metrics.video": (
        "DavisF", "DavisJ", "DavisJAndF",
    ),
}
"""Each domain package and the names it gives: imported on the first use of one of them."""


def _source(name: str) -> str | None:
    """The domain package that gives ``name`` (None: not a listed name)."""
    return next((module for module, names in _DOMAINS.items() if name in names), None)


if not TYPE_CHECKING:  # static tools see the imports above, and no catch-all attribute

    def __getattr__(name: str) -> Any:
        """A listed name, imported from its domain package on first use and bound here."""
        module = _source(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
