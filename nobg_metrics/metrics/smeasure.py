"""``SMeasure``: the structure measure as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.smeasure import (
    _check_s_args,
    _s_measure_compute,
    _s_measure_update,
)
from nobg_metrics.metrics.base import NobgMetric


class SMeasure(NobgMetric):
    """S-measure, the mean of per-image values (see :func:`nobg_metrics.functional.s_measure`).

    Args:
        alpha: weight of the object score, in [0, 1].
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: accepted for uniformity; both policies give the reference's degenerate-gt value.
        validate_args: run the checks that force a device sync.

    Example:
        >>> import torch
        >>> metric = SMeasure()
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1], [0.2, 0.6, 0.0]]),
        ...               torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]))
        >>> metric.compute()
        tensor(0.7346, dtype=torch.float64)
    """

    higher_is_better = True

    def __init__(self, alpha: float = 0.5, *, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_s_args(alpha, empty_gt)
        self.alpha, self.normalize, self.empty_gt = alpha, normalize, empty_gt
        self._add_sum("smeasure_sum")
        self._add_count("smeasure_count")

    def update(self, pred: InputMaps, gt: InputMaps) -> None:
        """Add a batch: ``pred``, ``gt`` of shape :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists."""
        total, count = _s_measure_update(pred, gt, self.alpha, self.normalize, self.validate_args)
        self.smeasure_sum += total
        self.smeasure_count += count

    def compute(self) -> Tensor:
        """The dataset S-measure: scalar float64."""
        return _s_measure_compute(self.smeasure_sum, self.smeasure_count)
