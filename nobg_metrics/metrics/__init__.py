"""``torchmetrics.Metric`` classes: fixed-size summed states, synced over DDP."""

from nobg_metrics.metrics.boundary import BoundaryIoU
from nobg_metrics.metrics.mae import MAE
from nobg_metrics.metrics.matting import MSE, SAD
from nobg_metrics.metrics.overlap import BER, Accuracy, Dice, IoU

__all__ = [
    "BER",
    "MAE",
    "MSE",
    "SAD",
    "Accuracy",
    "BoundaryIoU",
    "Dice",
    "IoU",
]
