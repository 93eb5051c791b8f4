"""The confusion family's public functions: a measure in a mode, and PySODMetrics' PR/ROC AUCs.

Modes (PySODMetrics 1.6.2 ``FmeasureV2`` result keys in brackets):

- ``"curve"`` — the mean over images of the per-image T-point curves ``[dynamic]``, thresholds descending
  (index 0 is ``u8 >= 255``); ``"max"`` / ``"mean"`` — its maximum / mean over thresholds (``dynamic.max()``,
  ``dynamic.mean()``);
- ``"adaptive"`` — the mean over images at ``pred >= min(2 · mean(pred), 1)`` ``[adaptive]``;
- ``"binary"`` — ``pred > threshold`` ``[binary]``: the mean over images with ``reduction="mean"``
  (``sample_based=True``), or the measure of the summed counts with ``reduction="pooled"`` (``sample_based=False``).

A functional call on a batch returns what the class's ``compute()`` returns after one ``update`` with it.
Statistics: :mod:`nobg_metrics.functional.sod.confusion`; formulas:
:mod:`nobg_metrics.functional.sod.confusion_measures`.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_option
from nobg_metrics.functional.sod.confusion import (
    COUNT,
    POOLED,
    ConfusionOptions,
    Request,
    check_requests,
    confusion_update,
    pooled_value,
    trapezoid_auc,
)
from nobg_metrics.functional.sod.confusion_measures import KappaChance
from nobg_metrics.ops.histogram import NUM_LEVELS

__all__ = ["confusion_curves", "fpr", "kappa", "pr_auc", "precision", "recall", "roc_auc", "specificity"]

Mode = Literal["max", "mean", "curve", "adaptive", "binary"]
"""How a family member becomes a dataset value (see the module notes)."""

SampleReduction = Literal["mean", "pooled"]
"""The binary mode's aggregation: mean of per-image values, or the value of the pooled counts."""

AUC_CURVES = {"pr_auc": ("precision", "recall"), "roc_auc": ("recall", "fpr")}
"""Each AUC's ``(y, x)`` mean curves: PR is precision over recall, ROC recall (TPR) over FPR."""


def resolve_chance(chance: KappaChance | None, empty_gt: EmptyGt) -> KappaChance:
    """Kappa's chance formula: as given, else PySODMetrics' under ``empty_gt="reference"`` and Cohen's otherwise."""
    if chance is None:
        return "reference" if empty_gt == "reference" else "cohen"
    check_option("chance", chance, KappaChance)
    return chance


def mode_requests(measure: str, mode: Mode, reduction: SampleReduction) -> frozenset[Request]:
    """The statistics ``measure`` in ``mode`` reads, validated (``measure`` may be ``"pr_auc"`` / ``"roc_auc"``)."""
    if measure in AUC_CURVES:
        return check_requests((name, "curve") for name in AUC_CURVES[measure])
    check_option("mode", mode, Mode)
    check_option("reduction", reduction, SampleReduction)
    if reduction == "pooled" and mode != "binary":
        raise ValueError(f"`reduction`='pooled' pools the binary mode's counts; it needs mode='binary', got {mode!r}")
    if mode in ("max", "mean", "curve"):
        return check_requests([(measure, "curve")])
    if mode == "adaptive":
        return check_requests([(measure, "adaptive")])
    return check_requests([(measure, POOLED if reduction == "pooled" else "binary")])


def mode_compute(measure: str, mode: Mode, reduction: SampleReduction, stats: dict[str, Tensor],
                 options: ConfusionOptions) -> Tensor:
    """The dataset value from accumulated statistics (``{statistic key: sum}``, see ``confusion_update``).

    Returns:
        float64: scalar, or :math:`(T,)` for ``mode="curve"``. The protocol is the mean of per-image curves
        THEN the max/mean over thresholds (not the measure of mean counts, not the mean of per-image maxima).
    """
    count = stats[COUNT]
    if measure in AUC_CURVES:
        y, x = AUC_CURVES[measure]
        return trapezoid_auc(stats[f"{y}_curve"] / count, stats[f"{x}_curve"] / count)
    if mode == "binary" and reduction == "pooled":
        return pooled_value(measure, stats[POOLED], options)
    if mode in ("adaptive", "binary"):
        return stats[f"{measure}_{mode}"] / count
    curve = stats[f"{measure}_curve"] / count
    if mode == "curve":
        return curve
    return curve.max() if mode == "max" else curve.mean()


def family_value(measure: str, pred: InputMaps, gt: InputMaps, mode: Mode = "binary", *,
                 reduction: SampleReduction = "mean", options: ConfusionOptions | None = None,
                 validate_args: bool = True) -> Tensor:
    """Check, update once, compute: the body of every public function of the family."""
    options = options or ConfusionOptions()
    requests = mode_requests(measure, mode, reduction)
    stats = confusion_update(pred, gt, requests, options, validate_args)
    return mode_compute(measure, mode, reduction, stats, options)


def confusion_options(num_thresholds: int, threshold: float, normalize: bool, empty_gt: EmptyGt, beta2: float = 0.3,
                      chance: KappaChance | None = None) -> ConfusionOptions:
    """The :class:`ConfusionOptions` of a public function's arguments (Kappa's ``chance`` resolved)."""
    return ConfusionOptions(num_thresholds=num_thresholds, threshold=threshold, beta2=beta2, normalize=normalize,
                            empty_gt=empty_gt, chance=resolve_chance(chance, empty_gt))


def precision(pred: InputMaps, gt: InputMaps, mode: Mode = "binary", *, threshold: float = 0.5,
              reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS, normalize: bool = False,
              empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Precision ``TP / (TP + FP)`` (PySODMetrics ``PrecisionHandler``) in ``mode``.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        mode: ``"max"``, ``"mean"``, ``"curve"``, ``"adaptive"`` or ``"binary"`` (module notes).
        threshold: the binary mode's strict threshold.
        reduction: the binary mode's ``"mean"`` over images or ``"pooled"`` counts.
        num_thresholds: T points of a curve; 256 reproduces PySODMetrics.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` (pixel agreement for an all-background/all-foreground gt) or
            ``"reference"`` (PySODMetrics' guarded 0).
        validate_args: run the checks that force a device sync.

    Returns:
        float64: scalar, or :math:`(T,)` (thresholds descending) for ``mode="curve"``.

    Examples:
        >>> pred = torch.tensor([[0.9, 0.8], [0.2, 0.6]])
        >>> gt = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> precision(pred, gt)
        tensor(0.6667, dtype=torch.float64)
    """
    return family_value("precision", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))


def recall(pred: InputMaps, gt: InputMaps, mode: Mode = "binary", *, threshold: float = 0.5,
           reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS, normalize: bool = False,
           empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Recall = TPR = sensitivity ``TP / (TP + FN)`` (PySODMetrics ``RecallHandler``) in ``mode``.

    Args and returns as :func:`precision`.

    Examples:
        >>> recall(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(1., dtype=torch.float64)
    """
    return family_value("recall", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))


def specificity(pred: InputMaps, gt: InputMaps, mode: Mode = "binary", *, threshold: float = 0.5,
                reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS, normalize: bool = False,
                empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Specificity = TNR ``TN / (TN + FP)`` (PySODMetrics ``SpecificityHandler``) in ``mode``.

    Args and returns as :func:`precision`.

    Examples:
        >>> specificity(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.5000, dtype=torch.float64)
    """
    return family_value("specificity", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))


def fpr(pred: InputMaps, gt: InputMaps, mode: Mode = "binary", *, threshold: float = 0.5,
        reduction: SampleReduction = "mean", num_thresholds: int = NUM_LEVELS, normalize: bool = False,
        empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""False positive rate ``FP / (TN + FP)`` (PySODMetrics ``FPRHandler``; lower is better) in ``mode``.

    Args and returns as :func:`precision` (``"max"`` is the curve's maximum, as the reference's ``dynamic.max()``).

    Examples:
        >>> fpr(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.5000, dtype=torch.float64)
    """
    return family_value("fpr", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt))


def kappa(pred: InputMaps, gt: InputMaps, mode: Mode = "binary", *, threshold: float = 0.5,
          reduction: SampleReduction = "mean", chance: KappaChance | None = None, num_thresholds: int = NUM_LEVELS,
          normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Kappa ``(OA - p_e) / (1 - p_e)`` in ``mode``.

    Cohen's chance agreement ``p_e = [(TP+FP)(TP+FN) + (TN+FN)(TN+FP)] / N²`` by default; PySODMetrics'
    ``KappaHandler`` has ``(TN+FN)(TN+TP)`` in the second product (a known flaw), reproduced with
    ``chance="reference"`` — the default under ``empty_gt="reference"``.

    Args:
        chance: ``"cohen"``, ``"reference"``, or ``None`` (``"reference"`` exactly when ``empty_gt="reference"``).
        others: as :func:`precision`.

    Returns:
        as :func:`precision`.

    Examples:
        >>> pred, gt = torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> kappa(pred, gt), kappa(pred, gt, chance="reference")
        (tensor(0.5000, dtype=torch.float64), tensor(0.4286, dtype=torch.float64))
    """
    return family_value("kappa", pred, gt, mode, reduction=reduction, validate_args=validate_args,
                        options=confusion_options(num_thresholds, threshold, normalize, empty_gt, chance=chance))


def pr_auc(pred: InputMaps, gt: InputMaps, *, num_thresholds: int = NUM_LEVELS, normalize: bool = False,
           empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Area under the mean PR curve, PySODMetrics' recipe (not scikit-learn's average precision).

    The mean per-image precision and recall curves, flipped to ascending thresholds, stable-sorted by recall,
    integrated by the trapezoid rule with no end points added.

    Args:
        pred, gt, num_thresholds, normalize, empty_gt, validate_args: as :func:`precision`.

    Returns:
        scalar float64.

    Examples:
        >>> pr_auc(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.6250, dtype=torch.float64)
    """
    return family_value("pr_auc", pred, gt, validate_args=validate_args,
                        options=confusion_options(num_thresholds, 0.5, normalize, empty_gt))


def roc_auc(pred: InputMaps, gt: InputMaps, *, num_thresholds: int = NUM_LEVELS, normalize: bool = False,
            empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Area under the mean ROC curve (recall over FPR), PySODMetrics' recipe (see :func:`pr_auc`).

    Args and returns as :func:`pr_auc`.

    Examples:
        >>> roc_auc(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.7500, dtype=torch.float64)
    """
    return family_value("roc_auc", pred, gt, validate_args=validate_args,
                        options=confusion_options(num_thresholds, 0.5, normalize, empty_gt))


def confusion_curves(pred: InputMaps, gt: InputMaps, measures: tuple[str, ...] = ("precision", "recall", "fpr"), *,
                     num_thresholds: int = NUM_LEVELS, beta2: float = 0.3, chance: KappaChance | None = None,
                     normalize: bool = False, empty_gt: EmptyGt = "agreement",
                     validate_args: bool = True) -> dict[str, Tensor]:
    r"""Mean per-image curves of several family members from one pass, and their thresholds.

    Args:
        measures: names among :data:`~nobg_metrics.functional.sod.confusion_measures.MEASURES`.
        others: as :func:`kappa` and :func:`f_measure`.

    Returns:
        ``{name: (T,) float64}`` plus ``"thresholds"`` (``k / (T - 1)``, descending).

    Examples:
        >>> curves = confusion_curves(torch.tensor([[0.9, 0.2]]), torch.tensor([[1.0, 0.0]]), num_thresholds=3)
        >>> curves["thresholds"].tolist(), curves["fpr"].tolist()
        ([1.0, 0.5, 0.0], [0.0, 0.0, 1.0])
    """
    options = confusion_options(num_thresholds, 0.5, normalize, empty_gt, beta2=beta2, chance=chance)
    stats = confusion_update(pred, gt, check_requests((name, "curve") for name in measures), options, validate_args)
    out = {name: stats[f"{name}_curve"] / stats[COUNT] for name in measures}
    out["thresholds"] = thresholds_of(num_thresholds, stats[COUNT].device)
    return out


def thresholds_of(num_thresholds: int, device: torch.device | str | None = None) -> Tensor:
    """:math:`(T,)` float64 thresholds ``k / (T - 1)`` for ``k = T-1 ... 0``, the curves' order."""
    return torch.arange(num_thresholds - 1, -1, -1, dtype=torch.float64, device=device) / (num_thresholds - 1)
