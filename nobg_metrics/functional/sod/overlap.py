"""Overlap members of the confusion family: IoU, Dice, pixel accuracy and balanced error rate.

PySODMetrics 1.6.2 ``FmeasureV2`` handlers ``IOUHandler``, ``DICEHandler``, ``OverallAccuracyHandler`` and
``BERHandler``. By default (``mode="binary"``) the prediction is binarised at ``pred > threshold`` (strict,
"Simulating the effect of the argmax function") and the dataset value is the mean of per-image values
(``sample_based=True``, the reference default) or, with ``reduction="pooled"``, the value of the summed
counts; every other mode of :mod:`nobg_metrics.functional.sod.family` applies too.

Degenerate gt (all background or all foreground): ``empty_gt="reference"`` keeps the reference's guarded
division (IoU = Dice = 0 for an empty gt); ``"agreement"`` scores the pixel agreement ``(TP + TN) / N`` for
IoU, Dice and accuracy and its complement for BER, so a perfect prediction scores 1 (BER 0).
"""

from __future__ import annotations

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.sod.family import Mode, SampleReduction, confusion_options, family_value
from nobg_metrics.ops.histogram import NUM_LEVELS

__all__ = ["accuracy", "ber", "dice", "iou_metric"]


def iou_metric(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, mode: Mode = "binary", normalize: bool = False,
    empty_gt: EmptyGt = "agreement", reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS,
    validate_args: bool = True,
) -> Tensor:
    r"""IoU ``TP / (TP + FP + FN)``, by default of ``pred > threshold`` and averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        threshold: the binary mode's threshold (strict ``>``, as PySODMetrics).
        mode: ``"binary"`` (default), ``"max"``, ``"mean"``, ``"curve"`` or ``"adaptive"``
            (see :mod:`nobg_metrics.functional.sod.family`).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        reduction: the binary mode's ``"mean"`` of per-image values or ``"pooled"`` counts.
        num_thresholds: T points of a curve; 256 reproduces PySODMetrics.
        validate_args: run the checks that force a device sync.

    Returns:
        float64: scalar, or :math:`(T,)` for ``mode="curve"``.

    Examples:
        >>> import torch
        >>> pred = torch.tensor([[0.9, 0.8], [0.2, 0.6]])
        >>> gt = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> iou_metric(pred, gt)
        tensor(0.6667, dtype=torch.float64)
        >>> iou_metric(pred, gt, mode="max")
        tensor(1., dtype=torch.float64)
    """
    return family_value("iou", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))


def dice(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, mode: Mode = "binary", normalize: bool = False,
    empty_gt: EmptyGt = "agreement", reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS,
    validate_args: bool = True,
) -> Tensor:
    r"""Dice ``2TP / (2TP + FP + FN)``, by default of ``pred > threshold`` and averaged over images.

    Args and returns as :func:`iou_metric`.

    Examples:
        >>> import torch
        >>> dice(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.8000, dtype=torch.float64)
    """
    return family_value("dice", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))


def accuracy(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, mode: Mode = "binary", normalize: bool = False,
    empty_gt: EmptyGt = "agreement", reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS,
    validate_args: bool = True,
) -> Tensor:
    r"""Pixel accuracy ``(TP + TN) / N``, by default of ``pred > threshold`` and averaged over images.

    Args and returns as :func:`iou_metric` (accuracy never divides by zero; ``empty_gt`` changes nothing).

    Examples:
        >>> import torch
        >>> accuracy(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.7500, dtype=torch.float64)
    """
    return family_value("accuracy", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))


def ber(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, *, mode: Mode = "binary", normalize: bool = False,
    empty_gt: EmptyGt = "agreement", reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS,
    validate_args: bool = True,
) -> Tensor:
    r"""Balanced error rate ``1 - (TP / (TP + FN) + TN / (TN + FP)) / 2`` (lower is better), by default of
    ``pred > threshold`` and averaged over images.

    Args and returns as :func:`iou_metric`.

    Examples:
        >>> import torch
        >>> ber(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.2500, dtype=torch.float64)
    """
    return family_value("ber", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))
