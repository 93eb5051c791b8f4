"""``torchmetrics.Metric`` classes: fixed-size summed states, synced over DDP."""

from nobg_metrics.metrics.boundary import BoundaryIoU
from nobg_metrics.metrics.confusion import ConfusionMetric
from nobg_metrics.metrics.connectivity import ConnectivityError
from nobg_metrics.metrics.curves import EMeasure, FMeasure
from nobg_metrics.metrics.family import F1, FPR, PRAUC, ROCAUC, Kappa, Precision, Recall, Specificity
from nobg_metrics.metrics.gradient import GradientError
from nobg_metrics.metrics.mae import MAE
from nobg_metrics.metrics.matting import MSE, SAD
from nobg_metrics.metrics.msiou import ContextMeasure, MSIoU
from nobg_metrics.metrics.overlap import BER, Accuracy, Dice, IoU
from nobg_metrics.metrics.size_invariance import (
    SizeInvariant,
    SizeInvariantConfusion,
    SizeInvariantMAE,
)
from nobg_metrics.metrics.smeasure import SMeasure
from nobg_metrics.metrics.weighted_f import WeightedFMeasure

__all__ = [
    "BER",
    "F1",
    "FPR",
    "MAE",
    "MSE",
    "PRAUC",
    "ROCAUC",
    "SAD",
    "Accuracy",
    "BoundaryIoU",
    "ConfusionMetric",
    "ConnectivityError",
    "ContextMeasure",
    "Dice",
    "EMeasure",
    "FMeasure",
    "GradientError",
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
