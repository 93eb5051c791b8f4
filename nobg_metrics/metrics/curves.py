"""``FMeasure`` and ``EMeasure``: threshold-swept measures sharing one state (mean per-image curves).

Both classes, in every mode, hold the same states under the same names — ``sod_curve_sum`` :math:`(4, T)`
(sums of per-image precision, recall, F and E curves), ``sod_adaptive_sum`` :math:`(2,)` (adaptive F, E)
and ``sod_count`` — and compute all of them in ``update``, so a ``MetricCollection`` compute group of all
six (F and E x max/mean/adaptive) runs one histogram per batch. Members of one compute group must agree
on ``num_thresholds``, ``beta2``, ``normalize`` and ``empty_gt`` (that is why ``EMeasure`` takes ``beta2``).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_option
from nobg_metrics.functional.threshold_curves import (
    CurveMode,
    ThresholdCurves,
    _check_curve_args,
    _curves_compute,
    _curves_update,
    _measure_compute,
)
from nobg_metrics.metrics.base import NobgMetric
from nobg_metrics.ops.histogram import NUM_LEVELS


class _CurveMetric(NobgMetric):
    """Shared state and update of the threshold-swept measures; subclasses name the measure.

    Args:
        mode: ``"max"`` or ``"mean"`` over thresholds of the mean curve, or ``"adaptive"``.
        beta2: β² of the F-measure (0.3); shared by the F curve every member of a compute group holds.
        num_thresholds: T; 256 reproduces PySODMetrics.
        normalize: per-image min-max stretch of ``pred`` first.
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        validate_args: run the checks that force a device sync.
    """

    _measure: str
    higher_is_better = True

    def __init__(self, mode: CurveMode = "max", *, beta2: float = 0.3, num_thresholds: int = NUM_LEVELS,
                 normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        check_option("mode", mode, CurveMode)
        _check_curve_args(num_thresholds, beta2, empty_gt)
        self.mode, self.beta2, self.num_thresholds = mode, beta2, num_thresholds
        self.normalize, self.empty_gt = normalize, empty_gt
        self._add_sum("sod_curve_sum", (4, num_thresholds))
        self._add_sum("sod_adaptive_sum", (2,))
        self._add_count("sod_count")

    def update(self, pred: InputMaps, gt: InputMaps) -> None:
        """Add a batch: ``pred``, ``gt`` of shape :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists."""
        curves, adaptive, count = _curves_update(pred, gt, self.num_thresholds, self.beta2, self.normalize,
                                                 self.empty_gt, self.validate_args)
        self.sod_curve_sum += curves
        self.sod_adaptive_sum += adaptive
        self.sod_count += count

    def compute(self) -> Tensor:
        """The dataset value: scalar float64."""
        return _measure_compute(self._measure, self.mode, self.sod_curve_sum, self.sod_adaptive_sum, self.sod_count)

    def curves(self) -> ThresholdCurves:
        """The mean per-image precision, recall, F and E curves, each :math:`(T,)`, thresholds descending."""
        return _curves_compute(self.sod_curve_sum, self.sod_count)

    def plot(self, val: Tensor | None = None, ax: Any = None) -> Any:
        """Draw the PR curve and the F/E-vs-threshold curves (matplotlib, the ``plot`` extra).

        ``val`` and ``ax`` are accepted for torchmetrics compatibility; ``ax`` may be a sequence of two axes.

        Returns:
            ``(figure, axes)``.
        """
        from nobg_metrics.plotting import plot_threshold_curves

        return plot_threshold_curves(self.curves(), axes=ax)


class FMeasure(_CurveMetric):
    """F-measure (β² = 0.3) over thresholds: ``mode="max"`` (maxF), ``"mean"`` (meanF) or ``"adaptive"`` (adpF).

    See :func:`nobg_metrics.functional.f_measure_max` and the module notes on shared state.

    Example:
        >>> import torch
        >>> metric = FMeasure(mode="max")
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """

    _measure = "f_measure"


class EMeasure(_CurveMetric):
    """E-measure over thresholds: ``mode="max"`` (maxE), ``"mean"`` (meanE) or ``"adaptive"`` (adpE).

    Takes ``beta2`` only to share state with :class:`FMeasure` (see the module notes).

    Example:
        >>> import torch
        >>> metric = EMeasure(mode="max")
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(1.3333, dtype=torch.float64)
    """

    _measure = "e_measure"
    plot_upper_bound = None
