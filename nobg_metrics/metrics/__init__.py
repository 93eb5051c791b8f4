"""``torchmetrics.Metric`` classes: fixed-size summed states, synced over DDP."""

from nobg_metrics.metrics.boundary import BoundaryIoU
from nobg_metrics.metrics.cityscapes_instances import CityscapesInstanceAP
from nobg_metrics.metrics.confusion import ConfusionMetric
from nobg_metrics.metrics.connectivity import ConnectivityError
from nobg_metrics.metrics.curves import EMeasure, FMeasure
from nobg_metrics.metrics.family import (
    F1,
    FPR,
    PRAUC,
    ROCAUC,
    Kappa,
    Precision,
    Recall,
    Specificity,
)
from nobg_metrics.metrics.gradient import GradientError
from nobg_metrics.metrics.grey_boundary_iou import GreyBoundaryIoU
from nobg_metrics.metrics.hce import HCE
from nobg_metrics.metrics.mae import MAE
from nobg_metrics.metrics.matting import MSE, SAD
from nobg_metrics.metrics.matting_p3m import (
    P3MMAD,
    P3MMSE,
    P3MSAD,
    P3MConnectivityError,
    P3MGradientError,
)
from nobg_metrics.metrics.mba import MBA
from nobg_metrics.metrics.mean_average_precision import MeanAveragePrecision
from nobg_metrics.metrics.context_measure import CamouflageContextMeasure, ContextMeasure
from nobg_metrics.metrics.msiou import MSIoU
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
    "BoundaryIoU",
    "CityscapesInstanceAP",
    "ConfusionMetric",
    "ConnectivityError",
    "CamouflageContextMeasure",
    "ContextMeasure",
    "Dice",
    "EMeasure",
    "FMeasure",
    "GradientError",
    "GreyBoundaryIoU",
    "IoU",
    "Kappa",
    "MSIoU",
    "MeanAveragePrecision",
    "P3MConnectivityError",
    "P3MGradientError",
    "Precision",
    "Recall",
    "SMeasure",
    "SizeInvariant",
    "SizeInvariantConfusion",
    "SizeInvariantMAE",
    "Specificity",
    "WeightedFMeasure",
]
