"""``MAE``: mean absolute error as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.mae import _mae_compute, _mae_update
from nobg_metrics.metrics.base import NobgMetric


class MAE(NobgMetric):
    """Mean absolute error, the mean of per-image MAE (see :func:`nobg_metrics.functional.mae`).

    Args:
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        validate_args: run the checks that force a device sync.

    Example:
        >>> import torch
        >>> metric = MAE()
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(0.2750, dtype=torch.float64)
    """

    higher_is_better = False

    def __init__(self, *, normalize: bool = False, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        self.normalize = normalize
        self._add_sum("mae_sum")
        self._add_count("mae_count")

    def update(self, pred: InputMaps, gt: InputMaps) -> None:
        """Add a batch: ``pred``, ``gt`` of shape :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists."""
        total, count = _mae_update(pred, gt, self.normalize, self.validate_args)
        self.mae_sum += total
        self.mae_count += count

    def compute(self) -> Tensor:
        """The dataset MAE: scalar float64."""
        return _mae_compute(self.mae_sum, self.mae_count)
