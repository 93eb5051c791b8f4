"""Plots of the threshold-swept measures: PR and ROC curves, F/E and any family member against the threshold
(matplotlib, imported lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nobg_metrics.functional.sod.threshold_curves import ThresholdCurves


def _pyplot() -> Any:
    """``matplotlib.pyplot``, or an ImportError naming the extra to install."""
    try:
        import matplotlib.pyplot as plt  # the optional plot extra (and ~0.5 s of imports): only to draw
    except ImportError as error:  # pragma: no cover - optional extra
        raise ImportError("plotting needs matplotlib: pip install 'nobg_metrics[plot]'") from error
    return plt


def plot_threshold_curves(curves: ThresholdCurves, axes: Sequence[Any] | None = None, label: str | None = None) -> Any:
    """Draw precision vs recall, and F and E vs threshold.

    Args:
        curves: mean curves, each :math:`(T,)` (from ``threshold_curves`` or ``FMeasure(...).curves()``).
        axes: two matplotlib axes to draw into; a new 1x2 figure when omitted.
        label: legend label (e.g. the method's name).

    Returns:
        ``(figure, axes)``.
    """
    plt = _pyplot()
    if axes is None:
        figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    else:
        figure = axes[0].figure
    recall, precision = curves.recall.cpu().numpy(), curves.precision.cpu().numpy()
    thresholds = curves.thresholds.cpu().numpy()
    axes[0].plot(recall, precision, label=label)
    axes[0].set(xlabel="recall", ylabel="precision", title="PR curve (mean of per-image curves)",
                xlim=(0, 1), ylim=(0, 1.05))
    axes[1].plot(thresholds, curves.f_measure.cpu().numpy(), label=f"{label} F" if label else "F-measure")
    axes[1].plot(thresholds, curves.e_measure.cpu().numpy(), label=f"{label} E" if label else "E-measure")
    axes[1].set(xlabel="threshold", ylabel="score", title="F and E vs threshold", xlim=(0, 1))
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[1].legend()
    return figure, axes


AUC_AXES = {"pr_auc": ("recall", "precision", "PR curve"), "roc_auc": ("fpr", "recall", "ROC curve")}
"""Each AUC's plotted ``(x, y, title)``."""


def plot_curves(curves: dict[str, Any], measure: str, ax: Any = None, label: str | None = None) -> Any:
    """Draw a family member's mean curve against the threshold, or an AUC's PR / ROC curve.

    Args:
        curves: mean curves ``{name: (T,)}`` with ``"thresholds"`` (``ConfusionMetric.curves()``,
            ``functional.confusion_curves``).
        measure: the member (``"precision"``, ``"iou"``, ...) or ``"pr_auc"`` / ``"roc_auc"``.
        ax: a matplotlib axis; a new figure when omitted.
        label: legend label (e.g. the method's name).

    Returns:
        ``(figure, axis)``.
    """
    plt = _pyplot()
    if ax is None:
        figure, ax = plt.subplots(figsize=(5, 4))
    else:
        figure = ax.figure
    if measure in AUC_AXES:
        x_name, y_name, title = AUC_AXES[measure]
        ax.plot(curves[x_name].cpu().numpy(), curves[y_name].cpu().numpy(), label=label or measure)
        ax.set(xlabel=x_name, ylabel=y_name, title=f"{title} (mean of per-image curves)", xlim=(0, 1), ylim=(0, 1.05))
    else:
        ax.plot(curves["thresholds"].cpu().numpy(), curves[measure].cpu().numpy(), label=label or measure)
        ax.set(xlabel="threshold", ylabel=measure, title=f"{measure} vs threshold (mean of per-image curves)",
               xlim=(0, 1))
    ax.grid(True, alpha=0.3)
    ax.legend()
    return figure, ax
