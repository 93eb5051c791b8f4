"""``WeightedFMeasure``: the weighted F-measure as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.weighted_f import (
    _check_weighted_f_args,
    _weighted_f_compute,
    _weighted_f_update,
)
from nobg_metrics.metrics.base import NobgMetric


class WeightedFMeasure(NobgMetric):
    """Weighted F-measure, the mean of per-image values (see :func:`nobg_metrics.functional.weighted_f_measure`).

    Args:
        beta2: β² (PySODMetrics' ``beta``).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background / all-foreground gts.
        validate_args: run the checks that force a device sync.

    Example:
        >>> import torch
        >>> gt = torch.zeros(1, 8, 10, dtype=torch.bool)
        >>> gt[0, 2:6, 3:8] = True
        >>> metric = WeightedFMeasure()
        >>> metric.update(torch.full((1, 8, 10), 0.5, dtype=torch.float64), gt)
        >>> metric.compute()
        tensor(0.3215, dtype=torch.float64)
    """

    higher_is_better = True

    def __init__(self, beta2: float = 1.0, *, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_weighted_f_args(beta2, empty_gt)
        self.beta2, self.normalize, self.empty_gt = beta2, normalize, empty_gt
        self._add_sum("weighted_f_sum")
        self._add_count("weighted_f_count")

    def update(self, pred: InputMaps, gt: InputMaps) -> None:
        """Add a batch: ``pred``, ``gt`` of shape :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists."""
        total, count = _weighted_f_update(pred, gt, self.beta2, self.normalize, self.empty_gt, self.validate_args)
        self.weighted_f_sum += total
        self.weighted_f_count += count

    def compute(self) -> Tensor:
        """The dataset weighted F: scalar float64."""
        return _weighted_f_compute(self.weighted_f_sum, self.weighted_f_count)
