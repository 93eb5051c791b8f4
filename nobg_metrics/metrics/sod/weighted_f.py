"""``WeightedFMeasure``: the weighted F-measure as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.sod.weighted_f import _check_weighted_f_args, _weighted_f_update
from nobg_metrics.metrics.per_image import PerImageMean

__all__ = ["WeightedFMeasure"]


class WeightedFMeasure(PerImageMean):
    """Weighted F-measure, the mean of per-image values (see :func:`nobg_metrics.functional.weighted_f_measure`).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``weighted_f_measure`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image weighted
      F-measure, in [0, 1].

    Args:
        beta2: β² (PySODMetrics' ``beta``).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background / all-foreground gts.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 8, 10, dtype=torch.bool)
        >>> gt[0, 2:6, 3:8] = True
        >>> metric = WeightedFMeasure()
        >>> metric.update(torch.full((1, 8, 10), 0.5, dtype=torch.float64), gt)
        >>> metric.compute()
        tensor(0.3215, dtype=torch.float64)
    """

    higher_is_better = True
    _state_prefix = "weighted_f"

    def __init__(self, beta2: float = 1.0, *, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 validate_args: bool = True, **kwargs: Any) -> None:
        _check_weighted_f_args(beta2, empty_gt)
        super().__init__(options={"beta2": float(beta2), "normalize": normalize, "empty_gt": empty_gt},
                         validate_args=validate_args, **kwargs)
        self.beta2, self.normalize, self.empty_gt = beta2, normalize, empty_gt

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps) -> tuple[Tensor, Tensor]:
        return _weighted_f_update(pred, gt, self.beta2, self.normalize, self.empty_gt, self.validate_args)
