"""``GreyBoundaryIoU``: BiRefNet's max / mean BIoU (the grey-boundary IoU curve) as a ``Metric``.

States (fixed size, summed over batches and DDP ranks): ``grey_boundary_curve`` (:math:`(256,)` float64 sum
of per-image IoU curves), ``grey_boundary_count`` (images) and the options' fingerprint. ``mode`` only picks
the reduction, so ``mode="max"`` and ``mode="mean"`` instances hold identical states and share one update in
a compute group. The maths is :mod:`nobg_metrics.functional.boundary.grey_boundary_iou`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.boundary.grey_boundary_iou import (
    GreyMode,
    _check_grey_boundary_args,
    _grey_boundary_compute,
    _grey_boundary_update,
)
from nobg_metrics.functional.sod.family import thresholds_of
from nobg_metrics.metrics.base import NobgMetric, Statistics
from nobg_metrics.ops.histogram import NUM_LEVELS
from nobg_metrics.plotting import plot_curves

__all__ = ["GreyBoundaryIoU"]


class GreyBoundaryIoU(NobgMetric):
    """BiRefNet's BIoU: the IoU curve of the grey boundary ``u8 - erode(u8)`` against the gt's inner band.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``grey_boundary_iou`` (:class:`~torch.Tensor`): float64 in [0, 1]: scalar maxBIoU (``mode="max"``) or meanBIoU
      (``"mean"``) of the mean curve, or the :math:`(256,)` mean curve itself (``"curve"``, index ``k`` at threshold
      ``(255 - k) / 255``).

    Args:
        mode: ``"max"`` (maxBIoU), ``"mean"`` (meanBIoU) or ``"curve"`` (:math:`(256,)`).
        dilation_ratio: band width as a fraction of the diagonal (0.02).
        dilation_pixels: a fixed band width ``d >= 1`` instead of the ratio.
        normalize: per-image min-max stretch of ``pred`` first (BiRefNet's reading: ``True``).
        empty_gt: ``"agreement"`` or ``"reference"`` (BiRefNet's guarded 0) for all-background/all-foreground gts.
        validate_args: run the checks that force a device sync.

    ``curves()`` gives the mean curve with its thresholds (as the confusion family's ``curves()``).
    Not :class:`~nobg_metrics.BoundaryIoU` (binarised masks at one threshold, the boundary-iou-api's definition).

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 9, 12, dtype=torch.bool)
        >>> gt[0, 2:7, 3:9] = True
        >>> metric = GreyBoundaryIoU(mode="mean", dilation_pixels=1)
        >>> metric.update(gt.float(), gt)
        >>> metric.compute()  # IoU 1 at levels 255..1, |G_b| / N = 18 / 108 at level 0
        tensor(0.9967, dtype=torch.float64)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    grey_boundary_curve: Tensor  # the states (declared in __init__)
    grey_boundary_count: Tensor

    def __init__(self, mode: GreyMode = "max", dilation_ratio: float = 0.02, *, dilation_pixels: int | None = None,
                 normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
                 **kwargs: Any) -> None:
        _check_grey_boundary_args(mode, dilation_ratio, dilation_pixels, empty_gt)
        super().__init__(validate_args=validate_args, **kwargs)
        self.mode, self.dilation_ratio, self.dilation_pixels = mode, dilation_ratio, dilation_pixels
        self.normalize, self.empty_gt = normalize, empty_gt
        self._add_fingerprint({"dilation_ratio": float(dilation_ratio), "dilation_pixels": dilation_pixels,
                               "normalize": normalize, "empty_gt": empty_gt})
        self._add_sum("grey_boundary_curve", (NUM_LEVELS,))
        self._add_count("grey_boundary_count")

    def _statistics(self, pred: InputMaps, gt: InputMaps) -> Statistics:
        curve_sum, count = _grey_boundary_update(pred, gt, self.dilation_ratio, self.dilation_pixels, self.normalize,
                                                 self.empty_gt, self.validate_args)
        return {"grey_boundary_curve": curve_sum, "grey_boundary_count": count}

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """maxBIoU / meanBIoU (scalar float64) or the :math:`(256,)` mean curve."""
        return _grey_boundary_compute(states["grey_boundary_curve"], states["grey_boundary_count"], self.mode)

    def curves(self) -> dict[str, Tensor]:
        """``{"grey_boundary_iou": (256,), "thresholds": (256,)}``: the mean curve, thresholds ``(255 - k) / 255``."""
        curve = _grey_boundary_compute(self.grey_boundary_curve, self.grey_boundary_count, "curve")
        return {"grey_boundary_iou": curve, "thresholds": thresholds_of(NUM_LEVELS, curve.device)}

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:
        """Plot the curve against the threshold (``mode="curve"``), else the scalar value (matplotlib)."""
        if self.mode != "curve":
            return super().plot(val, ax)
        return plot_curves(self.curves(), "grey_boundary_iou", ax=ax)
