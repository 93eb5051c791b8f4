"""``FMeasure`` and ``EMeasure``: the threshold-swept members of the confusion family.

Both default to ``mode="max"``; ``"mean"``, ``"curve"``, ``"adaptive"`` (and ``"binary"``) as every member.
In the threshold modes both hold the mean per-image precision, recall, F and E curves (``curves()``, the PR
and F/E plots) and the adaptive F and E, so the six F/E entries (F and E x max/mean/adaptive) hold identical
states and share one histogram per batch in any compute group, declared or automatic. State and options:
:mod:`nobg_metrics.metrics.sod.confusion` (``EMeasure`` takes ``beta2`` for the F curve it holds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import Tensor

from nobg_metrics.functional.sod.confusion import Request, check_requests
from nobg_metrics.functional.sod.threshold_curves import CURVE_NAMES, ThresholdCurves, e_measure, f_measure
from nobg_metrics.metrics.sod.confusion import ConfusionMetric
from nobg_metrics.plotting import plot_threshold_curves

__all__ = ["EMeasure", "FMeasure"]


class _CurveMetric(ConfusionMetric):
    """A member whose threshold modes also hold the P/R/F/E curves of :class:`ThresholdCurves`."""

    _default_mode = "max"

    def _extra_requests(self) -> frozenset[Request]:
        """The four curves and the adaptive F and E: all six F/E entries hold the same states, as they always have."""
        if self.mode == "binary":
            return frozenset()
        adaptive = [("f_measure", "adaptive"), ("e_measure", "adaptive")]
        return check_requests([(name, "curve") for name in CURVE_NAMES] + adaptive)

    def curves(self) -> ThresholdCurves:  # type: ignore[override]  # the named tuple, not the base's dict
        """The mean per-image precision, recall, F and E curves, each :math:`(T,)`, thresholds descending."""
        curves = super().curves()
        return ThresholdCurves(**{name: curves[name] for name in ThresholdCurves._fields})

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:
        """Draw the PR curve and the F/E-vs-threshold curves (matplotlib, the ``plot`` extra).

        ``val`` and ``ax`` are accepted for torchmetrics compatibility; ``ax`` may be a sequence of two axes.

        Returns:
            ``(figure, axes)``.
        """
        if self.mode == "binary":
            return super().plot(val, ax)
        return plot_threshold_curves(self.curves(), axes=ax)


class FMeasure(_CurveMetric):
    """F-measure (β² = 0.3; F1 with ``beta2=1.0``): ``mode="max"`` (maxF), ``"mean"`` (meanF), ``"adaptive"`` (adpF),
    ``"curve"`` or ``"binary"``. See :func:`nobg_metrics.functional.f_measure`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``f_measure`` (:class:`~torch.Tensor`): float64 in [0, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the mode first
    (``FMeasure("max")``).

    Examples:
        >>> import torch
        >>> metric = FMeasure(mode="max")
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """

    _measure = "f_measure"
    functional = staticmethod(f_measure)


class EMeasure(_CurveMetric):
    """E-measure: ``mode="max"`` (maxE), ``"mean"`` (meanE), ``"adaptive"`` (adpE) or ``"curve"``.

    See :func:`nobg_metrics.functional.e_measure`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``e_measure`` (:class:`~torch.Tensor`): float64 >= 0 (PySODMetrics divides by ``N - 1``: a perfect prediction
      scores ``N / (N - 1)``), a scalar, or :math:`(T,)` with ``mode="curve"`` (``T = num_thresholds``, thresholds
      descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the mode first
    (``EMeasure("max")``).

    Examples:
        >>> import torch
        >>> metric = EMeasure(mode="max")
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(1.3333, dtype=torch.float64)
    """

    _measure = "e_measure"
    functional = staticmethod(e_measure)
    plot_upper_bound = None
