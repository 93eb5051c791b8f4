"""Overlap metrics of a binarised prediction: IoU, Dice, pixel accuracy and balanced error rate.

The four share one statistic per image — the confusion counts TP, FP, TN, FN of ``pred > threshold``
against the gt mask — exactly as PySODMetrics 1.6.2's ``FmeasureV2`` binary handlers
(``IOUHandler``, ``DICEHandler``, ``OverallAccuracyHandler``, ``BERHandler``; strict ``pred > 0.5``,
"Simulating the effect of the argmax function"). The dataset value is the mean of per-image values
(``sample_based=True``, the reference default) or, with ``reduction="pooled"``, the value of the summed
counts.

Degenerate gt (all background or all foreground): ``empty_gt="reference"`` keeps the reference's
guarded division (0 where a denominator is 0: IoU = Dice = 0 for an empty gt); ``"agreement"`` scores
the pixel agreement ``(TP + TN) / N`` for IoU, Dice and accuracy and its complement for BER, so a perfect
prediction scores 1 (BER 0).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import (
    EmptyGt,
    InputMaps,
    SegBatch,
    check_number,
    check_option,
    prepare_segmentation,
)
from nobg_metrics.ops import uint8_stats

OverlapReduction = Literal["mean", "pooled"]
OVERLAP_NAMES = ("iou", "dice", "accuracy", "ber")
"""Order of the per-image values in :func:`_overlap_update`'s sums."""


def _confusion(batch: SegBatch, threshold: float) -> Tensor:
    """Per-image ``[TP, FP, TN, FN]`` of ``pred > threshold``.

    Args:
        batch: equal-size images.
        threshold: binarisation threshold of the prediction (strict ``>``).

    Returns:
        :math:`(B, 4)` int64.
    """
    if batch.is_uint8:
        # the level -> value map is the reference's per-pixel arithmetic; positives lie above one cut level
        mask = uint8_stats.foreground(batch.histogram_gt)
        low, high = uint8_stats.level_range(batch.pred_raw)
        values = uint8_stats.range_level_values(low, high, batch.normalize)
        tp, positives = uint8_stats.positive_counts(batch.pred_raw, mask, values, threshold)
        fp = positives - tp
        fg = uint8_stats.count(mask)
        bg = batch.num_pixels - fg
    else:
        binary = batch.pred > threshold
        tp = torch.count_nonzero(binary & batch.gt, dim=(-2, -1))
        fp = torch.count_nonzero(binary, dim=(-2, -1)) - tp
        fg = torch.count_nonzero(batch.gt, dim=(-2, -1))
        bg = batch.num_pixels - fg
    return torch.stack([tp, fp, bg - fp, fg - tp], dim=1)


def _guarded_divide(numerator: Tensor, denominator: Tensor) -> Tensor:
    """The reference's ``divide``: ``numerator / denominator``, 0 where ``denominator == 0``."""
    safe = torch.where(denominator == 0, torch.ones_like(denominator), denominator)
    return torch.where(denominator == 0, torch.zeros_like(numerator), numerator / safe)


def _overlap_values(confusion: Tensor, empty_gt: EmptyGt) -> Tensor:
    """Per-image ``[IoU, Dice, accuracy, BER]`` from confusion counts.

    Args:
        confusion: :math:`(B, 4)` int64 ``[TP, FP, TN, FN]``.
        empty_gt: degenerate-gt policy.

    Returns:
        :math:`(B, 4)` float64.
    """
    tp, fp, tn, fn = confusion.double().unbind(dim=1)
    # IOUHandler: tp / (tp + fp + fn); DICEHandler: 2tp / (tp + fn + tp + fp)
    iou = _guarded_divide(tp, tp + fp + fn)
    dice = _guarded_divide(2 * tp, tp + fn + tp + fp)
    # OverallAccuracyHandler: (tp + tn) / (tp + fp + tn + fn)
    accuracy = _guarded_divide(tp + tn, tp + fp + tn + fn)
    # BERHandler: 1 - 0.5 * (tp / (tp + fn) + tn / (tn + fp))
    ber = 1 - 0.5 * (_guarded_divide(tp, tp + fn) + _guarded_divide(tn, tn + fp))
    values = torch.stack([iou, dice, accuracy, ber], dim=1)
    if empty_gt == "agreement":
        degenerate = ((tp + fn) == 0) | ((tn + fp) == 0)
        agreement = torch.stack([accuracy, accuracy, accuracy, 1 - accuracy], dim=1)
        values = torch.where(degenerate[:, None], agreement, values)
    return values


def _overlap_update(
    pred: InputMaps,
    gt: InputMaps,
    threshold: float,
    normalize: bool,
    empty_gt: EmptyGt,
    validate_args: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """Sufficient statistics of a batch for all four overlap metrics.

    Returns:
        ``(value_sums, confusion_sums, count)``: :math:`(4,)` float64 sums of per-image
        ``[IoU, Dice, accuracy, BER]``, :math:`(4,)` int64 summed ``[TP, FP, TN, FN]``, int64 images.
    """
    value_sums, confusion_sums, count = [], [], 0
    for batch in prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args):
        confusion = _confusion(batch, threshold)
        value_sums.append(_overlap_values(confusion, empty_gt).sum(dim=0))
        confusion_sums.append(confusion.sum(dim=0))
        count += confusion.shape[0]
    device = confusion_sums[0].device
    return (
        torch.stack(value_sums).sum(dim=0),
        torch.stack(confusion_sums).sum(dim=0),
        torch.full((), count, dtype=torch.int64, device=device),
    )


def _overlap_compute(
    name: str, value_sums: Tensor, confusion_sums: Tensor, count: Tensor, reduction: OverlapReduction,
    empty_gt: EmptyGt = "agreement",
) -> Tensor:
    """The dataset value of one overlap metric from accumulated statistics.

    Args:
        name: one of :data:`OVERLAP_NAMES`.
        value_sums: :math:`(4,)` float64 sums of per-image values.
        confusion_sums: :math:`(4,)` int64 pooled counts.
        count: number of images.
        reduction: ``"mean"`` of per-image values, or ``"pooled"`` (the value of the summed counts).
        empty_gt: policy for a pooled gt with no foreground (or no background) at all.

    Returns:
        scalar float64.
    """
    index = OVERLAP_NAMES.index(name)
    if reduction == "mean":
        return value_sums[index] / count
    return _overlap_values(confusion_sums[None], empty_gt)[0, index]


def _check_overlap_args(threshold: float, reduction: str, empty_gt: str) -> None:
    check_number("threshold", threshold, low=0.0, high=1.0)
    check_option("reduction", reduction, OverlapReduction)
    check_option("empty_gt", empty_gt, EmptyGt)


def _overlap(name: str, pred: InputMaps, gt: InputMaps, threshold: float, normalize: bool, empty_gt: EmptyGt,
             reduction: OverlapReduction, validate_args: bool) -> Tensor:
    _check_overlap_args(threshold, reduction, empty_gt)
    stats = _overlap_update(pred, gt, threshold, normalize, empty_gt, validate_args)
    return _overlap_compute(name, *stats, reduction, empty_gt)


def iou_metric(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, normalize: bool = False,
    empty_gt: EmptyGt = "agreement", reduction: OverlapReduction = "mean", validate_args: bool = True,
) -> Tensor:
    r"""Hard IoU ``TP / (TP + FP + FN)`` of ``pred > threshold``, mean over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        threshold: prediction threshold (strict ``>``, as PySODMetrics).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        reduction: ``"mean"`` of per-image values or ``"pooled"`` over all pixels.
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Example:
        >>> pred = torch.tensor([[0.9, 0.8], [0.2, 0.6]])
        >>> gt = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> iou_metric(pred, gt)
        tensor(0.6667, dtype=torch.float64)
    """
    return _overlap("iou", pred, gt, threshold, normalize, empty_gt, reduction, validate_args)


def dice(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, normalize: bool = False,
    empty_gt: EmptyGt = "agreement", reduction: OverlapReduction = "mean", validate_args: bool = True,
) -> Tensor:
    r"""Dice ``2TP / (2TP + FP + FN)`` of ``pred > threshold``, mean over images.

    Args and returns as :func:`iou_metric`.

    Example:
        >>> dice(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.8000, dtype=torch.float64)
    """
    return _overlap("dice", pred, gt, threshold, normalize, empty_gt, reduction, validate_args)


def accuracy(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, normalize: bool = False,
    empty_gt: EmptyGt = "agreement", reduction: OverlapReduction = "mean", validate_args: bool = True,
) -> Tensor:
    r"""Pixel accuracy ``(TP + TN) / N`` of ``pred > threshold``, mean over images.

    Args and returns as :func:`iou_metric` (accuracy never divides by zero; ``empty_gt`` changes nothing).

    Example:
        >>> accuracy(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.7500, dtype=torch.float64)
    """
    return _overlap("accuracy", pred, gt, threshold, normalize, empty_gt, reduction, validate_args)


def ber(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, normalize: bool = False,
    empty_gt: EmptyGt = "agreement", reduction: OverlapReduction = "mean", validate_args: bool = True,
) -> Tensor:
    r"""Balanced error rate ``1 - (TP / (TP + FN) + TN / (TN + FP)) / 2`` of ``pred > threshold`` (lower is better).

    Args and returns as :func:`iou_metric`.

    Example:
        >>> ber(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.2500, dtype=torch.float64)
    """
    return _overlap("ber", pred, gt, threshold, normalize, empty_gt, reduction, validate_args)
