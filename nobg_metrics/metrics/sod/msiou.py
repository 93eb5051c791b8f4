"""``MSIoU`` (multi-scale IoU) as a ``Metric`` class: the states of :func:`nobg_metrics.functional.msiou`.

``MSIoU`` states (fixed size, summed over batches and DDP ranks): the sum of the per-image statistic the mode
reads — ``msiou_curve_sum`` :math:`(257,)` for ``"max"`` and ``"mean"`` (the same states: they share one update in a
compute group), ``msiou_adaptive_sum`` or ``msiou_binary_sum`` — the image count ``msiou_count``, and the
fingerprint of the options that change the statistic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional._per_image import mean_over_images
from nobg_metrics.functional.sod.msiou import (
    NUM_THRESHOLDS,
    MSIoUMode,
    _check_msiou_args,
    _msiou_compute,
    _msiou_update,
    mode_statistic,
)
from nobg_metrics.metrics.base import NobgMetric, Statistics

__all__ = ["MSIoU"]


class MSIoU(NobgMetric):
    """Multi-scale IoU (Ahmadzadeh et al., ICIP 2021), the mean of per-image values; see
    :func:`nobg_metrics.functional.msiou`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``msiou`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image MSIoU (the max or mean
      of the mean 257-threshold curve, or its adaptive / binary value), in [0, 1] (the reference's ratios can lift a
      value slightly above 1).

    Args:
        mode: ``"max"`` / ``"mean"`` of the mean 257-threshold curve, ``"adaptive"`` or ``"binary"``.
        threshold: the binary mode's strict threshold ``pred > threshold``.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background / all-foreground gts.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(6, 8, dtype=torch.bool); gt[1:5, 2:6] = True
        >>> pred = torch.zeros(6, 8); pred[1:5, 2:5] = 0.9
        >>> metric = MSIoU(mode="max")
        >>> metric.update(pred, gt)
        >>> round(metric.compute().item(), 4), tuple(metric.curve().shape)
        (0.9643, (257,))
    """

    higher_is_better = True
    plot_upper_bound = None  # the reference's float16 denominator can lift a ratio above 1
    msiou_curve_sum: Tensor  # the states read by curve() (declared in __init__)
    msiou_count: Tensor

    def __init__(self, mode: MSIoUMode = "max", *, threshold: float = 0.5, normalize: bool = False,
                 empty_gt: EmptyGt = "agreement", validate_args: bool = True, **kwargs: Any) -> None:
        _check_msiou_args(mode, threshold, empty_gt)
        super().__init__(validate_args=validate_args, **kwargs)
        self.mode, self.threshold, self.normalize, self.empty_gt = mode, threshold, normalize, empty_gt
        self._statistic = mode_statistic(mode)
        options: dict[str, object] = {"normalize": normalize, "empty_gt": empty_gt}
        if self._statistic == "binary":
            options["threshold"] = float(threshold)
        self._add_fingerprint(options)
        self._sum_name = f"msiou_{self._statistic}_sum"
        self._add_sum(self._sum_name, (NUM_THRESHOLDS,) if self._statistic == "curve" else ())
        self._add_count("msiou_count")

    def _statistics(self, pred: InputMaps, gt: InputMaps) -> Statistics:
        sums, count = _msiou_update(pred, gt, frozenset({self._statistic}), self.threshold, self.normalize,
                                    self.empty_gt, self.validate_args)
        return {self._sum_name: sums[self._statistic], "msiou_count": count}

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: scalar float64."""
        return _msiou_compute(self.mode, states[self._sum_name], states["msiou_count"])

    def curve(self) -> Tensor:
        """The mean per-image curve :math:`(257,)` over ``floor(255 pred) >= t``, ``t = 0 ... 256`` (``max`` and
        ``mean`` modes)."""
        if self._statistic != "curve":
            raise ValueError(f"`curve()` needs mode 'max' or 'mean'; this MSIoU has mode {self.mode!r}")
        return mean_over_images(self.msiou_curve_sum, self.msiou_count)
