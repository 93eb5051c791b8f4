"""``MAE``: mean absolute error as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.sod.mae import _mae_update
from nobg_metrics.metrics.per_image import PerImageMean

__all__ = ["MAE"]


class MAE(PerImageMean):
    """Mean absolute error, the mean of per-image MAE (see :func:`nobg_metrics.functional.mae`).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``mae`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image mean absolute error, in
      [0, 1] (lower is better).

    Args:
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        validate_args: run the checks that force a device sync.

    Examples:
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
