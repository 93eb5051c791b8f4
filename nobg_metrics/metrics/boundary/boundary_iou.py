"""Boundary IoU as a ``Metric``: the state of :func:`nobg_metrics.functional.boundary_iou`.

States (fixed size, summed over batches and DDP ranks): ``boundary_value_sum`` (float64 sum of
per-image values), ``boundary_counts`` (int64 pooled ``[band ∩, band ∪, mask ∩, mask ∪]``; the mask counts are
accumulated only with ``combine="min"``, which alone reads them) and
``boundary_count`` (images), and the fingerprint of the options (a ``MetricCollection``'s automatic compute
groups never merge two instances with different options).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.boundary.boundary_iou import (
    BoundaryCombine,
    BoundaryReduction,
    _boundary_compute,
    _boundary_update,
    _check_boundary_args,
)
from nobg_metrics.metrics.base import NobgMetric, Statistics

__all__ = ["BoundaryIoU"]


class BoundaryIoU(NobgMetric):
    """Boundary IoU (Cheng et al., CVPR 2021) of ``pred > threshold``; mBIoU by default.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``boundary_iou`` (:class:`~torch.Tensor`): scalar float64 in [0, 1]: the mean of per-image Boundary IoU
      (``reduction="mean"``, mBIoU) or the pooled ``sum |I| / sum |U|`` (``"pooled"``).

    Args:
        threshold: prediction threshold (strict ``>``).
        dilation_ratio: band width as a fraction of the image diagonal, ``d = max(1, round(ratio * diag))``.
        dilation_pixels: a fixed band width ``d >= 1`` instead of the ratio.
        reduction: ``"mean"`` of per-image values (mBIoU) or ``"pooled"`` ``sum |I| / sum |U|``.
        combine: ``None`` or ``"min"`` for ``min(mask IoU, boundary IoU)``.
        normalize: per-image min-max stretch of ``pred`` first.
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        validate_args: run the checks that force a device sync.

    See :func:`nobg_metrics.functional.boundary_iou` for the definition and the defined edge values.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 9, 12, dtype=torch.bool)
        >>> gt[0, 2:7, 3:9] = True
        >>> pred = torch.zeros(1, 9, 12)
        >>> pred[0, 2:7, 3:10] = 0.9
        >>> metric = BoundaryIoU(dilation_pixels=1)
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(0.6522, dtype=torch.float64)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self, threshold: float = 0.5, dilation_ratio: float = 0.02, *, dilation_pixels: int | None = None,
        reduction: BoundaryReduction = "mean", combine: BoundaryCombine = None, normalize: bool = False,
        empty_gt: EmptyGt = "agreement", validate_args: bool = True, **kwargs: Any,
    ) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_boundary_args(threshold, dilation_ratio, dilation_pixels, reduction, combine, empty_gt)
        self.threshold, self.dilation_ratio, self.dilation_pixels = threshold, dilation_ratio, dilation_pixels
        self.reduction, self.combine, self.normalize, self.empty_gt = reduction, combine, normalize, empty_gt
        self._add_fingerprint({"threshold": float(threshold), "dilation_ratio": float(dilation_ratio),
                               "dilation_pixels": dilation_pixels, "combine": combine, "normalize": normalize,
                               "empty_gt": empty_gt})
        self._add_sum("boundary_value_sum")
        self._add_count("boundary_counts", (4,))
        self._add_count("boundary_count")

    def _statistics(self, pred: InputMaps, gt: InputMaps) -> Statistics:
        value_sum, counts, count = _boundary_update(
            pred, gt, self.threshold, self.dilation_ratio, self.dilation_pixels, self.combine, self.normalize,
            self.empty_gt, self.validate_args,
        )
        return {"boundary_value_sum": value_sum, "boundary_counts": counts, "boundary_count": count}

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: scalar float64."""
        return _boundary_compute(states["boundary_value_sum"], states["boundary_counts"], states["boundary_count"],
                                 self.reduction, self.combine)
