"""Functional metrics: one call on a batch = the class's ``compute()`` after one ``update()``."""

from nobg_metrics.functional.boundary import boundary_iou
from nobg_metrics.functional.mae import mae
from nobg_metrics.functional.matting import mse_metric, sad
from nobg_metrics.functional.overlap import accuracy, ber, dice, iou_metric

__all__ = [
    "accuracy",
    "ber",
    "boundary_iou",
    "dice",
    "iou_metric",
    "mae",
    "mse_metric",
    "sad",
]
