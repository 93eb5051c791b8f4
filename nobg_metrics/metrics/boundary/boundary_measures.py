"""Trimap IoU and the boundary F-measure as ``Metric``s: the states of
:mod:`nobg_metrics.functional.boundary.boundary_measures`.

States (fixed size, summed over batches and DDP ranks): ``trimap_value_sum`` (float64), ``trimap_counts`` (int64
pooled ``[∩, ∪, |P|]``), ``trimap_count`` (images); ``boundary_f_value_sum``, ``boundary_f_count``; and the options'
fingerprint (``options_<digest>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_option
from nobg_metrics.functional.boundary.boundary_measures import (
    TrimapReduction,
    _boundary_f_compute,
    _boundary_f_update,
    _check_boundary_measures_args,
    _trimap_iou_compute,
    _trimap_iou_update,
)
from nobg_metrics.metrics.base import NobgMetric, Statistics

__all__ = ["BoundaryFMeasure", "TrimapIoU"]


class TrimapIoU(NobgMetric):
    """Trimap IoU (the Boundary IoU paper's Table 1): the IoU of ``pred > threshold`` and the gt inside the gt's band.

    ``|G_d ∩ G ∩ P| / |G_d ∩ (G ∪ P)|`` with ``G_d`` the pixels within ``d = max(1, round(ratio * diag))`` of the
    gt's contour (:func:`nobg_metrics.functional.trimap_iou` has the definitions and the defined values).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``trimap_iou`` (:class:`~torch.Tensor`): scalar float64 in [0, 1]: the mean of per-image Trimap IoU
      (``reduction="mean"``) or the pooled ``sum |I| / sum |U|`` (``"pooled"``).

    Args:
        threshold: prediction threshold (strict ``>``).
        dilation_ratio: band width as a fraction of the image diagonal.
        dilation_pixels: a fixed band width ``d >= 1`` instead of the ratio.
        reduction: ``"mean"`` of per-image values or ``"pooled"`` ``sum |I| / sum |U|``.
        normalize: per-image min-max stretch of ``pred`` first.
        empty_gt: ``"agreement"`` or ``"reference"`` (the formula) for all-background/all-foreground gts.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 9, 12, dtype=torch.bool)
        >>> gt[0, 2:7, 3:9] = True
        >>> pred = torch.zeros(1, 9, 12)
        >>> pred[0, 2:7, 3:10] = 0.9
        >>> metric = TrimapIoU(dilation_pixels=1)
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(0.7826, dtype=torch.float64)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self, threshold: float = 0.5, dilation_ratio: float = 0.02, *, dilation_pixels: int | None = None,
        reduction: TrimapReduction = "mean", normalize: bool = False, empty_gt: EmptyGt = "agreement",
        validate_args: bool = True, **kwargs: Any,
    ) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_boundary_measures_args(threshold, dilation_ratio, dilation_pixels, empty_gt)
        check_option("reduction", reduction, TrimapReduction)
        self.threshold, self.dilation_ratio, self.dilation_pixels = threshold, dilation_ratio, dilation_pixels
        self.reduction, self.normalize, self.empty_gt = reduction, normalize, empty_gt
        self._add_fingerprint({"threshold": float(threshold), "dilation_ratio": float(dilation_ratio),
                               "dilation_pixels": dilation_pixels, "normalize": normalize, "empty_gt": empty_gt})
        self._add_sum("trimap_value_sum")
        self._add_count("trimap_counts", (3,))
        self._add_count("trimap_count")

    def _statistics(self, pred: InputMaps, gt: InputMaps) -> Statistics:
        return _trimap_iou_update(pred, gt, self.threshold, self.dilation_ratio, self.dilation_pixels,
                                  self.normalize, self.empty_gt, self.validate_args)

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: scalar float64."""
        return _trimap_iou_compute(states["trimap_value_sum"], states["trimap_counts"], states["trimap_count"],
                                   self.reduction)


class BoundaryFMeasure(NobgMetric):
    """Boundary F-measure (the Boundary IoU paper's approximate F): ``2pr / (p + r)`` of the one-pixel contours
    matched within ``d = max(1, round(ratio * diag))``, mean over images.

    See :func:`nobg_metrics.functional.boundary_f_measure` for the definitions and the defined values.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``boundary_f_measure`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image boundary
      F-measure, in [0, 1].

    Args:
        threshold: prediction threshold (strict ``>``).
        dilation_ratio: match distance as a fraction of the image diagonal.
        dilation_pixels: a fixed ``d >= 1`` instead of the ratio.
        normalize: per-image min-max stretch of ``pred`` first.
        empty_gt: ``"agreement"`` or ``"reference"`` (the formula) for all-background/all-foreground gts.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 20, 20, dtype=torch.bool)
        >>> gt[0, 5:15, 5:15] = True
        >>> pred = torch.zeros(1, 20, 20)
        >>> pred[0, 5:15, 9:19] = 1.0
        >>> metric = BoundaryFMeasure(dilation_pixels=2)
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(0.5556, dtype=torch.float64)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self, threshold: float = 0.5, dilation_ratio: float = 0.02, *, dilation_pixels: int | None = None,
        normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True, **kwargs: Any,
    ) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_boundary_measures_args(threshold, dilation_ratio, dilation_pixels, empty_gt)
        self.threshold, self.dilation_ratio, self.dilation_pixels = threshold, dilation_ratio, dilation_pixels
        self.normalize, self.empty_gt = normalize, empty_gt
        self._add_fingerprint({"threshold": float(threshold), "dilation_ratio": float(dilation_ratio),
                               "dilation_pixels": dilation_pixels, "normalize": normalize, "empty_gt": empty_gt})
        self._add_sum("boundary_f_value_sum")
        self._add_count("boundary_f_count")

    def _statistics(self, pred: InputMaps, gt: InputMaps) -> Statistics:
        return _boundary_f_update(pred, gt, self.threshold, self.dilation_ratio, self.dilation_pixels,
                                  self.normalize, self.empty_gt, self.validate_args)

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: scalar float64."""
        return _boundary_f_compute(states["boundary_f_value_sum"], states["boundary_f_count"])
