"""The F-measure (Achanta et al., CVPR 2009) and the E-measure (Fan et al., IJCAI 2018), threshold-swept as
PySODMetrics 1.6.2 ``Fmeasure`` and ``Emeasure``, and the mean P/R/F/E curves behind their plots.

Both are members of the confusion family (:mod:`nobg_metrics.functional.sod.family`): per image and threshold
``t`` (``floor(255 · pred) >= t``, ``t = 255 … 0``), ``P = TP / (TP + FP)``, ``R = TP / |gt|`` (guarded),
``F = (1 + β²) P R / (β² P + R)`` (0 where ``P R = 0``), β² = 0.3; E from the four confusion regions'
constant enhanced-alignment values, ``E = Σ enhanced · count / (N - 1 + eps)`` (a perfect prediction of a
non-degenerate gt scores ``N / (N - 1)``, > 1: that is the reference). The dataset curve is the mean of the
per-image curves; ``max`` / ``mean`` take its maximum / mean over the T thresholds; ``adaptive`` is the mean
per-image value at ``pred >= min(2 · mean(pred), 1)``.

Degenerate gt (all background or all foreground): ``empty_gt="reference"`` keeps PySODMetrics' values
(F = 0, E = #agreeing pixels / (N - 1)); ``"agreement"`` scores the pixel agreement ``(TP + TN) / N`` per
threshold for every curve (so a perfect prediction scores 1 and a 1-pixel image does not score 1 / eps).
"""

from __future__ import annotations

from typing import NamedTuple

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.sod.family import Mode, SampleReduction, confusion_curves, confusion_options, family_value
from nobg_metrics.ops.histogram import NUM_LEVELS

__all__ = ["ThresholdCurves", "e_measure", "e_measure_adaptive", "e_measure_max", "e_measure_mean", "f_measure",
           "f_measure_adaptive", "f_measure_max", "f_measure_mean", "threshold_curves"]

CURVE_NAMES = ("precision", "recall", "f_measure", "e_measure")
"""The curves of :class:`ThresholdCurves`, in its field order."""


class ThresholdCurves(NamedTuple):
    """Mean per-image curves, each :math:`(T,)` float64, index ``i`` <-> threshold ``thresholds[i]`` (descending)."""

    precision: Tensor
    recall: Tensor
    f_measure: Tensor
    e_measure: Tensor
    thresholds: Tensor


def threshold_curves(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> ThresholdCurves:
    r"""Mean per-image precision, recall, F-measure and E-measure curves over thresholds (for PR/F/E plots).

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        num_thresholds: T; 256 reproduces PySODMetrics (``floor(255 pred) >= t``, t = 255..0).
        beta2: β² of the F-measure (PySODMetrics' ``beta``), 0.3 by convention.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        validate_args: run the checks that force a device sync.

    Returns:
        :class:`ThresholdCurves` of five :math:`(T,)` float64 tensors; thresholds descending.

    Examples:
        >>> import torch
        >>> pred = torch.tensor([[0.9, 0.8], [0.2, 0.6]])
        >>> gt = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> curves = threshold_curves(pred, gt, num_thresholds=5)
        >>> curves.thresholds
        tensor([1.0000, 0.7500, 0.5000, 0.2500, 0.0000], dtype=torch.float64)
        >>> curves.precision
        tensor([0.0000, 1.0000, 0.6667, 0.6667, 0.5000], dtype=torch.float64)
    """
    curves = confusion_curves(pred, gt, CURVE_NAMES, num_thresholds=num_thresholds, beta2=beta2, normalize=normalize,
                              empty_gt=empty_gt, validate_args=validate_args)
    return ThresholdCurves(**{name: curves[name] for name in ThresholdCurves._fields})


def f_measure(
    pred: InputMaps, gt: InputMaps, mode: Mode = "max", *, beta2: float = 0.3, threshold: float = 0.5,
    reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS, normalize: bool = False,
    empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    r"""F-measure ``(1 + β²) P R / (β² P + R)`` in ``mode`` (PySODMetrics ``Fmeasure``, ``FmeasureHandler``).

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        mode: ``"max"`` (maxF), ``"mean"`` (meanF), ``"curve"``, ``"adaptive"`` (adpF) or ``"binary"``.
        beta2: β² (PySODMetrics calls it ``beta``): 0.3 by convention, 1.0 for F1.
        threshold: the binary mode's strict threshold.
        reduction: the binary mode's ``"mean"`` over images or ``"pooled"`` counts.
        num_thresholds: T; 256 reproduces PySODMetrics; other T quantise ``floor((T-1) pred)``.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` (pixel agreement for an all-background/all-foreground gt) or
            ``"reference"`` (PySODMetrics' F = 0).
        validate_args: run the checks that force a device sync.

    Returns:
        float64: scalar, or :math:`(T,)` for ``mode="curve"``.

    Examples:
        >>> import torch
        >>> pred, gt = torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> f_measure(pred, gt), f_measure(pred, gt, "binary", beta2=1.0)
        (tensor(1., dtype=torch.float64), tensor(0.8000, dtype=torch.float64))
    """
    return family_value("f_measure", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt, beta2=beta2))


def e_measure(
    pred: InputMaps, gt: InputMaps, mode: Mode = "max", *, threshold: float = 0.5,
    reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS, normalize: bool = False,
    empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    r"""E-measure (enhanced alignment) in ``mode`` (PySODMetrics ``Emeasure``; ``"binary"`` has no reference).

    Args and returns as :func:`f_measure` (no ``beta2``); ``empty_gt="reference"`` scores an
    all-background gt #pred-bg / (N - 1 + eps) and an all-foreground one #pred-fg / (N - 1 + eps).

    Examples:
        >>> import torch
        >>> e_measure(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(1.3333, dtype=torch.float64)
    """
    return family_value("e_measure", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))


def f_measure_max(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Maximum over thresholds of the mean per-image F-measure curve (maxF): ``f_measure(mode="max")``.

    Examples:
        >>> import torch
        >>> f_measure_max(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(1., dtype=torch.float64)
    """
    return f_measure(pred, gt, "max", beta2=beta2, num_thresholds=num_thresholds, normalize=normalize,
                     empty_gt=empty_gt, validate_args=validate_args)


def f_measure_mean(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Mean over thresholds of the mean per-image F-measure curve (meanF): ``f_measure(mode="mean")``.

    Examples:
        >>> import torch
        >>> f_measure_mean(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.6811, dtype=torch.float64)
    """
    return f_measure(pred, gt, "mean", beta2=beta2, num_thresholds=num_thresholds, normalize=normalize,
                     empty_gt=empty_gt, validate_args=validate_args)


def f_measure_adaptive(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Mean per-image F-measure at the adaptive threshold ``min(2 mean(pred), 1)`` (adpF):
    ``f_measure(mode="adaptive")``.

    Examples:
        >>> import torch
        >>> f_measure_adaptive(torch.tensor([[0.9, 0.3], [0.1, 0.0]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.8125, dtype=torch.float64)
    """
    return f_measure(pred, gt, "adaptive", beta2=beta2, num_thresholds=num_thresholds, normalize=normalize,
                     empty_gt=empty_gt, validate_args=validate_args)


def e_measure_max(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Maximum over thresholds of the mean per-image E-measure curve (maxE): ``e_measure(mode="max")``.

    ``beta2`` is accepted for compatibility and has no effect on E.

    Examples:
        >>> import torch
        >>> e_measure_max(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(1.3333, dtype=torch.float64)
    """
    return e_measure(pred, gt, "max", num_thresholds=num_thresholds, normalize=normalize, empty_gt=empty_gt,
                     validate_args=validate_args)


def e_measure_mean(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Mean over thresholds of the mean per-image E-measure curve (meanE): ``e_measure(mode="mean")``.

    Examples:
        >>> import torch
        >>> e_measure_mean(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.7896, dtype=torch.float64)
    """
    return e_measure(pred, gt, "mean", num_thresholds=num_thresholds, normalize=normalize, empty_gt=empty_gt,
                     validate_args=validate_args)


def e_measure_adaptive(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Mean per-image E-measure at the adaptive threshold ``min(2 mean(pred), 1)`` (adpE):
    ``e_measure(mode="adaptive")``.

    Examples:
        >>> import torch
        >>> e_measure_adaptive(torch.tensor([[0.9, 0.3], [0.1, 0.0]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.8515, dtype=torch.float64)
    """
    return e_measure(pred, gt, "adaptive", num_thresholds=num_thresholds, normalize=normalize, empty_gt=empty_gt,
                     validate_args=validate_args)
