"""HQ-SAM's evaluation protocol (Ke et al., "Segment Anything in High Quality", NeurIPS 2023): per-image mask
IoU and Boundary IoU, plain mean over images (mIoU, mBIoU on DIS-val, COIFT, HRSOD, ThinObject-5K).

Reference: SysCV/sam-hq ``train/train.py`` (``compute_iou``, ``compute_boundary_iou``) and
``train/utils/misc.py``::

    masks = F.interpolate(logits, size=gt.shape[-2:], mode="bilinear", align_corners=False)  # when sizes differ
    mask_iou:     pred = logits > 0;  gt = gt > 128;  |pred & gt| / |pred | gt|       (torch, float32)
    boundary_iou: the boundary-iou-api's mask_to_boundary (ratio 0.02) of both, |I| / |U| (numpy float64,
                  then .float())
    dataset value: MetricLogger.global_avg = mean of the per-batch means (validation batch size 1: images)

What our existing calls already give (same bands, same binarisation ``pred > threshold``, gt ``> 128``):

- ``IoU(mode="binary", empty_gt="reference")`` = HQ-SAM's mIoU, except an image whose prediction and gt
  are both empty (HQ-SAM: ``0 / 0`` = NaN; ours: 0, PySODMetrics' guard).
- ``BoundaryIoU(empty_gt="reference")`` = HQ-SAM's mBIoU, except both empty (NaN; ours 1.0).

So the protocol needs no new statistic; this module names it. :func:`hqsam_iou` and
:func:`hqsam_boundary_iou` compute the per-image values from one pass (the Boundary IoU's packed bands and
mask counts) with the both-empty value as a **named policy** ``both_empty``: ``"one"`` (default: an empty
prediction of an empty gt is perfect), ``"zero"`` (what ``IoU(empty_gt="reference")`` gives) or ``"nan"``
(the reference's unguarded division: one such image makes the dataset value NaN). Every other
degenerate case keeps the reference's value (an empty gt with a non-empty prediction scores 0; a full gt
scores its IoU). ``float32_values=True`` rounds each per-image value as HQ-SAM does (torch's float32
``int / int`` for the mask IoU, ``float64 -> float32`` for the boundary IoU), for bit parity with its logs.

Inputs: HQ-SAM binarises logits at 0. Pass probabilities (``sigmoid``; threshold 0.5) or, to reproduce
``logits > 0`` exactly (float32 ``sigmoid`` rounds to 0.5 for ``0 < x < ~6e-8``), the mask ``logits > 0``
itself as a bool ``pred``. The bilinear upsampling to the gt size is the caller's (as in HQ-SAM).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_flag, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.boundary.boundary_iou import boundary_stats
from nobg_metrics.ops.band_width import dilation_radius

__all__ = ["hqsam_boundary_iou", "hqsam_iou"]

BothEmpty = Literal["one", "zero", "nan"]
"""The value of an image whose prediction and gt are both empty (the IoU's 0/0)."""


def _ratio(intersection: Tensor, union: Tensor, both_empty: BothEmpty, float32_values: bool, torch_float32: bool
           ) -> Tensor:
    """``|I| / |U|`` per image with the named 0/0 value; float64 (optionally rounded through float32)."""
    if float32_values and torch_float32:  # torch int64 / int64 -> float32 operands and quotient (HQ-SAM's mask_iou)
        value = (intersection.float() / union.float()).double()
    else:
        value = intersection.double() / union.double()
        if float32_values:  # numpy float64 -> torch .float() (HQ-SAM's boundary_iou)
            value = value.float().double()
    fill = {"one": 1.0, "zero": 0.0, "nan": float("nan")}[both_empty]
    return torch.where(union == 0, torch.full_like(value, fill), value)


def _hqsam_per_image(batch: SegBatch, threshold: float, dilation_ratio: float, both_empty: BothEmpty,
                     float32_values: bool) -> dict[str, Tensor]:
    """``{"iou": (B,), "boundary_iou": (B,)}`` float64 per-image values of one equal-size group."""
    height, width = batch.shape[-2:]
    radius = dilation_radius(height, width, dilation_ratio)
    # [band ∩, band ∪, mask ∩, mask ∪, -, -]: the Boundary IoU's bands and, with combine="min", the mask counts
    stats = boundary_stats(batch, threshold, radius, "min", "reference")
    return {"iou": _ratio(stats[:, 2], stats[:, 3], both_empty, float32_values, True),
            "boundary_iou": _ratio(stats[:, 0], stats[:, 1], both_empty, float32_values, False)}


def _hqsam_update(pred: InputMaps, gt: InputMaps, threshold: float, dilation_ratio: float, both_empty: BothEmpty,
                  float32_values: bool, validate_args: bool) -> tuple[dict[str, Tensor], Tensor]:
    """``({"iou": sum, "boundary_iou": sum}, image count)`` of a batch."""
    _check_hqsam_args(threshold, dilation_ratio, both_empty, float32_values)
    batches = prepare_segmentation(pred, gt, validate_args=validate_args)
    return sum_per_image(lambda b: _hqsam_per_image(b, threshold, dilation_ratio, both_empty, float32_values),
                         batches)


def _check_hqsam_args(threshold: float, dilation_ratio: float, both_empty: str, float32_values: bool) -> None:
    check_number("threshold", threshold, low=0.0, high=1.0)
    check_number("dilation_ratio", dilation_ratio, low=0.0)
    check_option("both_empty", both_empty, BothEmpty)
    check_flag("float32_values", float32_values)


def check_hqsam_options(*, threshold: float = 0.5, dilation_ratio: float = 0.02, both_empty: str = "one",
                        float32_values: bool = False) -> None:
    """The options of :func:`hqsam_iou` / :func:`hqsam_boundary_iou` (and their classes), by name."""
    _check_hqsam_args(threshold, dilation_ratio, both_empty, float32_values)


def _hqsam_iou_update(pred: InputMaps, gt: InputMaps, threshold: float, both_empty: BothEmpty, float32_values: bool,
                      validate_args: bool) -> tuple[Tensor, Tensor]:
    """``(sum of per-image mIoU values, image count)`` of a batch."""
    sums, count = _hqsam_update(pred, gt, threshold, 0.02, both_empty, float32_values, validate_args)
    return sums["iou"], count


def _hqsam_boundary_iou_update(pred: InputMaps, gt: InputMaps, threshold: float, dilation_ratio: float,
                               both_empty: BothEmpty, float32_values: bool, validate_args: bool
                               ) -> tuple[Tensor, Tensor]:
    """``(sum of per-image mBIoU values, image count)`` of a batch."""
    sums, count = _hqsam_update(pred, gt, threshold, dilation_ratio, both_empty, float32_values, validate_args)
    return sums["boundary_iou"], count


def hqsam_iou(pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, both_empty: BothEmpty = "one",
              float32_values: bool = False, validate_args: bool = True) -> Tensor:
    r"""HQ-SAM's mIoU: per-image ``|pred > t  AND  gt| / |pred > t  OR  gt|``, plain mean over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1], uint8 or bool.
        gt: same layout; bool, uint8 (``> 128``, HQ-SAM's rule) or float (``> 0.5``).
        threshold: strict prediction threshold (0.5 on probabilities = HQ-SAM's ``logits > 0``).
        both_empty: ``"one"``, ``"zero"`` or ``"nan"`` (the reference) for an empty prediction of an empty gt.
        float32_values: round each per-image value through float32 as HQ-SAM's torch code does.
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(2, 4, 4, dtype=torch.bool)
        >>> gt[0, :2] = True
        >>> pred = gt.clone()
        >>> pred[0, 2] = True                          # image 0: 8 / 12; image 1: both empty
        >>> hqsam_iou(pred, gt), hqsam_iou(pred, gt, both_empty="nan")
        (tensor(0.8333, dtype=torch.float64), tensor(nan, dtype=torch.float64))
    """
    return mean_over_images(*_hqsam_iou_update(pred, gt, threshold, both_empty, float32_values, validate_args))


def hqsam_boundary_iou(pred: InputMaps, gt: InputMaps, threshold: float = 0.5, dilation_ratio: float = 0.02, *,
                       both_empty: BothEmpty = "one", float32_values: bool = False,
                       validate_args: bool = True) -> Tensor:
    r"""HQ-SAM's mBIoU: per-image Boundary IoU (boundary-iou-api, ``dilation_ratio``), plain mean over images.

    Args and returns as :func:`hqsam_iou`; ``dilation_ratio``: band width as a fraction of the diagonal.

    Examples:
        >>> gt = torch.zeros(1, 9, 12, dtype=torch.bool)
        >>> gt[0, 2:7, 3:9] = True
        >>> pred = torch.zeros(1, 9, 12)
        >>> pred[0, 2:7, 3:10] = 0.9
        >>> hqsam_boundary_iou(pred, gt)  # d = 1 at this size: 1-px rings of 18 and 20 pixels share 15
        tensor(0.6522, dtype=torch.float64)
    """
    return mean_over_images(*_hqsam_boundary_iou_update(pred, gt, threshold, dilation_ratio, both_empty,
                                                        float32_values, validate_args))
