"""``MAE``: mean absolute error as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.mae import _mae_update
from nobg_metrics.metrics.per_image import PerImageMean

__all__ = ["MAE"]


class MAE(PerImageMean):
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
    _state_prefix = "mae"

    def __init__(self, *, normalize: bool = False, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(options={"normalize": normalize}, validate_args=validate_args, **kwargs)
        self.normalize = normalize

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps) -> tuple[Tensor, Tensor]:
        return _mae_update(pred, gt, self.normalize, self.validate_args)
