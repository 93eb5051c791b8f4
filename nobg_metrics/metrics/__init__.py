"""``torchmetrics.Metric`` classes: fixed-size summed states, synced over DDP.

The classes of every module of this package (each module's ``__all__``) are exported here; a metric's module is its
only registration. The registered names, tiers and groups are the catalog's (:mod:`nobg_metrics.catalog`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nobg_metrics._lazy import lazy_attributes

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

if not TYPE_CHECKING:  # static tools see the imports above, and no catch-all attribute
    __getattr__, __dir__ = lazy_attributes(__name__, _DOMAINS, __all__)
