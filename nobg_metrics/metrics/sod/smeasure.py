"""``SMeasure``: the structure measure as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.sod.smeasure import _check_s_args, _s_measure_update
from nobg_metrics.metrics.per_image import PerImageMean

__all__ = ["SMeasure"]


class SMeasure(PerImageMean):
    """S-measure, the mean of per-image values (see :func:`nobg_metrics.functional.s_measure`).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``s_measure`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image S-measure, in
      [0, 1].

    Args:
        alpha: weight of the object score, in [0, 1].
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: accepted for uniformity; both policies give the reference's degenerate-gt value.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> metric = SMeasure()
        >>> metric.update(torch.tensor([[0.9, 0.8, 0.1], [0.2, 0.6, 0.0]]),
        ...               torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]))
        >>> metric.compute()
        tensor(0.7346, dtype=torch.float64)
    """

    higher_is_better = True
    _state_prefix = "smeasure"

    def __init__(self, alpha: float = 0.5, *, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 validate_args: bool = True, **kwargs: Any) -> None:
        _check_s_args(alpha, empty_gt)
        super().__init__(options={"alpha": float(alpha), "normalize": normalize}, validate_args=validate_args,
                         **kwargs)
        self.alpha, self.normalize, self.empty_gt = alpha, normalize, empty_gt

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps) -> tuple[Tensor, Tensor]:
        return _s_measure_update(pred, gt, self.alpha, self.normalize, self.validate_args)
