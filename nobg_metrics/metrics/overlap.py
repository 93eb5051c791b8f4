"""IoU, Dice, Accuracy and BER as ``Metric`` classes sharing one confusion statistic.

All four hold the same states under the same names — ``overlap_value_sum`` (sums of per-image
``[IoU, Dice, accuracy, BER]``), ``overlap_confusion`` (pooled ``[TP, FP, TN, FN]``) and
``overlap_count`` — so a ``MetricCollection`` compute group updates them once per batch.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.overlap import (
    OverlapReduction,
    _check_overlap_args,
    _overlap_compute,
    _overlap_update,
)
from nobg_metrics.metrics.base import NobgMetric


class _OverlapMetric(NobgMetric):
    """Shared state and update of the overlap metrics; subclasses name the value they compute.

    Args:
        threshold: prediction threshold (strict ``>``).
        normalize: per-image min-max stretch of ``pred`` first.
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        reduction: ``"mean"`` of per-image values or ``"pooled"`` counts.
        validate_args: run the checks that force a device sync.
    """

    _name: str

    def __init__(self, threshold: float = 0.5, *, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 reduction: OverlapReduction = "mean", validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_overlap_args(threshold, reduction, empty_gt)
        self.threshold, self.normalize, self.empty_gt, self.reduction = threshold, normalize, empty_gt, reduction
        self._add_sum("overlap_value_sum", (4,))
        self._add_count("overlap_confusion", (4,))
        self._add_count("overlap_count")

    def update(self, pred: InputMaps, gt: InputMaps) -> None:
        """Add a batch: ``pred``, ``gt`` of shape :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists."""
        values, confusion, count = _overlap_update(
            pred, gt, self.threshold, self.normalize, self.empty_gt, self.validate_args
        )
        self.overlap_value_sum += values
        self.overlap_confusion += confusion
        self.overlap_count += count

    def compute(self) -> Tensor:
        """The dataset value: scalar float64."""
        return _overlap_compute(
            self._name, self.overlap_value_sum, self.overlap_confusion, self.overlap_count, self.reduction,
            self.empty_gt,
        )


class IoU(_OverlapMetric):
    """Hard IoU of ``pred > threshold`` (see :func:`nobg_metrics.functional.iou_metric`).

    Example:
        >>> import torch
        >>> metric = IoU()
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    _name = "iou"
    higher_is_better = True


class Dice(_OverlapMetric):
    """Dice coefficient of ``pred > threshold`` (see :func:`nobg_metrics.functional.dice`)."""

    _name = "dice"
    higher_is_better = True


class Accuracy(_OverlapMetric):
    """Pixel accuracy of ``pred > threshold`` (see :func:`nobg_metrics.functional.accuracy`)."""

    _name = "accuracy"
    higher_is_better = True


class BER(_OverlapMetric):
    """Balanced error rate of ``pred > threshold`` (see :func:`nobg_metrics.functional.ber`)."""

    _name = "ber"
    higher_is_better = False
