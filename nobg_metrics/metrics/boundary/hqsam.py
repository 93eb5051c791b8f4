"""``HQSAMIoU`` and ``HQSAMBoundaryIoU``: HQ-SAM's mIoU and mBIoU (per-image mask IoU and Boundary IoU, plain mean
over images) as ``Metric`` classes.

States (:class:`~nobg_metrics.metrics.per_image.PerImageMean`): ``hqsam_iou_sum`` / ``hqsam_boundary_iou_sum``
(float64 sums of per-image values), ``hqsam_iou_count`` / ``hqsam_boundary_iou_count`` (images) and the options'
fingerprint. The maths is :mod:`nobg_metrics.functional.boundary.hqsam`.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.boundary.hqsam import (
    BothEmpty,
    _check_hqsam_args,
    _hqsam_boundary_iou_update,
    _hqsam_iou_update,
)
from nobg_metrics.metrics.per_image import PerImageMean

__all__ = ["HQSAMBoundaryIoU", "HQSAMIoU"]


class HQSAMIoU(PerImageMean):
    """HQ-SAM's mIoU: per-image ``|pred > t  AND  gt| / |pred > t  OR  gt|``, plain mean over images.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``, HQ-SAM's
      rule) or float in [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``hqsam_iou`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image mask IoU, in
      [0, 1] (NaN with ``both_empty="nan"`` once an image with empty prediction and gt was scored).

    Args:
        threshold: strict prediction threshold (0.5 on probabilities = HQ-SAM's ``logits > 0``).
        both_empty: ``"one"``, ``"zero"`` or ``"nan"`` (the reference) for an empty prediction of an empty gt.
        float32_values: round each per-image value through float32 as HQ-SAM's torch code does.
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.

    See :func:`nobg_metrics.functional.boundary.hqsam.hqsam_iou`.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(2, 4, 4, dtype=torch.bool)
        >>> gt[0, :2] = True
        >>> pred = gt.clone()
        >>> pred[0, 2] = True                          # image 0: 8 / 12; image 1: both empty
        >>> metric = HQSAMIoU()
        >>> metric.update(pred[:1], gt[:1])
        >>> metric.update(pred[1:], gt[1:])
        >>> metric.compute()
        tensor(0.8333, dtype=torch.float64)
    """

    higher_is_better = True
    plot_upper_bound = 1.0
    _state_prefix = "hqsam_iou"

    def __init__(self, threshold: float = 0.5, *, both_empty: BothEmpty = "one", float32_values: bool = False,
                 validate_args: bool = True, **kwargs: Any) -> None:
        _check_hqsam_args(threshold, 0.02, both_empty, float32_values)
        super().__init__(options={"threshold": threshold, "both_empty": both_empty, "float32_values": float32_values},
                         validate_args=validate_args, **kwargs)
        self.threshold, self.both_empty, self.float32_values = threshold, both_empty, float32_values

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps) -> tuple[Tensor, Tensor]:
        return _hqsam_iou_update(pred, gt, self.threshold, self.both_empty, self.float32_values, self.validate_args)


class HQSAMBoundaryIoU(PerImageMean):
    """HQ-SAM's mBIoU: per-image Boundary IoU (boundary-iou-api bands of width ``dilation_ratio`` of the diagonal),
    plain mean over images.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``, HQ-SAM's
      rule) or float in [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``hqsam_boundary_iou`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image
      Boundary IoU, in [0, 1] (NaN with ``both_empty="nan"`` once an image with empty prediction and gt was scored).

    Args:
        threshold: strict prediction threshold (0.5 on probabilities = HQ-SAM's ``logits > 0``).
        dilation_ratio: band width as a fraction of the image diagonal (HQ-SAM: 0.02).
        both_empty: ``"one"`` (default), ``"zero"`` or ``"nan"`` (the reference) for an empty prediction of an
            empty gt.
        float32_values: round each per-image value through float32 as HQ-SAM's numpy-then-``.float()`` code does.
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.

    See :func:`nobg_metrics.functional.boundary.hqsam.hqsam_boundary_iou`.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 9, 12, dtype=torch.bool)
        >>> gt[0, 2:7, 3:9] = True
        >>> pred = torch.zeros(1, 9, 12)
        >>> pred[0, 2:7, 3:10] = 0.9
        >>> metric = HQSAMBoundaryIoU()
        >>> metric.update(pred, gt)  # d = 1 at this size: 1-px rings of 18 and 20 pixels share 15
        >>> metric.compute()
        tensor(0.6522, dtype=torch.float64)
    """

    higher_is_better = True
    plot_upper_bound = 1.0
    _state_prefix = "hqsam_boundary_iou"

    def __init__(self, threshold: float = 0.5, dilation_ratio: float = 0.02, *, both_empty: BothEmpty = "one",
                 float32_values: bool = False, validate_args: bool = True, **kwargs: Any) -> None:
        _check_hqsam_args(threshold, dilation_ratio, both_empty, float32_values)
        super().__init__(options={"threshold": threshold, "dilation_ratio": dilation_ratio, "both_empty": both_empty,
                                  "float32_values": float32_values}, validate_args=validate_args, **kwargs)
        self.threshold, self.dilation_ratio = threshold, dilation_ratio
        self.both_empty, self.float32_values = both_empty, float32_values

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps) -> tuple[Tensor, Tensor]:
        return _hqsam_boundary_iou_update(pred, gt, self.threshold, self.dilation_ratio, self.both_empty,
                                          self.float32_values, self.validate_args)
