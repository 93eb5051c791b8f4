"""The ``Metric`` classes of salient, dichotomous and camouflaged object detection: MAE, the confusion family (F, E,
IoU, Dice, ... in every mode), the S-measure, the weighted F-measure, the size-invariant metrics, multi-scale IoU,
the context measures and HCE.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.metrics.sod.birefnet import BinarisedGtMSE
from nobg_metrics.metrics.sod.confusion import ConfusionMetric
from nobg_metrics.metrics.sod.context_measure import (
    CamouflageContextMeasure,
    ContextMeasure,
)
from nobg_metrics.metrics.sod.curves import (
    EMeasure,
    FMeasure,
)
from nobg_metrics.metrics.sod.family import (
    F1,
    FPR,
    PRAUC,
    ROCAUC,
    Kappa,
    Precision,
    Recall,
    Specificity,
)
from nobg_metrics.metrics.sod.hce import HCE
from nobg_metrics.metrics.sod.mae import MAE
from nobg_metrics.metrics.sod.msiou import MSIoU
from nobg_metrics.metrics.sod.overlap import (
    BER,
    Accuracy,
    Dice,
    IoU,
)
from nobg_metrics.metrics.sod.size_invariance import (
    SizeInvariant,
    SizeInvariantConfusion,
    SizeInvariantMAE,
)
from nobg_metrics.metrics.sod.smeasure import SMeasure
from nobg_metrics.metrics.sod.weighted_f import WeightedFMeasure

__all__ = [
    "BER",
    "F1",
    "FPR",
    "HCE",
    "MAE",
    "PRAUC",
    "ROCAUC",
    "Accuracy",
    "BinarisedGtMSE",
    "CamouflageContextMeasure",
    "ConfusionMetric",
    "ContextMeasure",
    "Dice",
    "EMeasure",
    "FMeasure",
    "IoU",
    "Kappa",
    "MSIoU",
    "Precision",
    "Recall",
    "SMeasure",
    "SizeInvariant",
    "SizeInvariantConfusion",
    "SizeInvariantMAE",
    "Specificity",
    "WeightedFMeasure",
]
