"""The confusion family as ``Metric`` classes: one class per measure, ``mode=`` picks the reduction.

State (fixed size, float64 sums / int64 counts, summed over batches and DDP ranks): ``confusion_table_<layout>``
:math:`(K, M)`, the sums over images of every read measure's (columns) per-image curve points and adaptive and
binary values (rows; :func:`~nobg_metrics.functional.sod.confusion.state_shapes`), ``confusion_pooled`` :math:`(4,)`
int64 summed ``[TP, FP, TN, FN]``, ``confusion_count`` — and the zero ``options_<digest>`` state naming the
options that change those statistics
(:meth:`~nobg_metrics.functional.sod.confusion.ConfusionOptions.fingerprint`): two metrics hold equal state
names exactly when they compute equal statistics, so a user's ``MetricCollection`` with torchmetrics'
automatic compute groups merges ``IoU(threshold=0.3)`` and ``IoU(threshold=0.7)`` never, and
``Precision("max")`` with ``Precision("mean")`` always. The table's name is a digest of its layout, so equal names
mean equal statistics there too. ``share_statistics=`` makes a metric compute (and hold) other members'
statistics too, which is how ``make_collection`` gives a whole family one histogram pass per batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.sod.confusion import (
    COUNT,
    TABLE,
    ConfusionOptions,
    Request,
    check_requests,
    confusion_sums,
    split_table,
    state_shapes,
)
from nobg_metrics.functional.sod.confusion_measures import MEASURES, KappaChance
from nobg_metrics.functional.sod.family import (
    AUC_CURVES,
    Mode,
    SampleReduction,
    mode_compute,
    mode_requests,
    resolve_chance,
    thresholds_of,
)
from nobg_metrics.metrics.base import NobgMetric, Statistics
from nobg_metrics.ops.histogram import NUM_LEVELS
from nobg_metrics.plotting import plot_curves

__all__ = ["ConfusionMetric"]


class ConfusionMetric(NobgMetric):
    """Shared state, update and compute of every family member; subclasses name the measure.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``value`` (:class:`~torch.Tensor`): the member's measure in ``mode``, float64: a scalar, or :math:`(T,)` with
      ``mode="curve"`` (``T = num_thresholds``, thresholds descending).

    Args:
        mode: ``"max"``, ``"mean"``, ``"curve"``, ``"adaptive"`` or ``"binary"``
            (see :mod:`nobg_metrics.functional.sod.family`); ``None`` takes the class's default.
        threshold: the binary mode's strict threshold ``pred > threshold``.
        reduction: the binary mode's ``"mean"`` over images (``sample_based=True``) or ``"pooled"`` counts.
        num_thresholds: T points of a curve; 256 reproduces PySODMetrics.
        beta2: β² of the F-measure (0.3; 1.0 for F1). Read only where an F-measure is computed.
        chance: kappa's chance agreement, ``"cohen"`` / ``"reference"``; ``None``: ``"reference"`` exactly
            under ``empty_gt="reference"``. Read only where kappa is computed.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        share_statistics: further ``(measure, reduction)`` statistics to compute in the same pass (the
            union of a compute group's needs, so that all its members hold identical states).
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> from nobg_metrics import IoU
        >>> pred, gt = torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> metric = IoU(share_statistics=[("precision", "curve")])  # also holds the mean precision curve
        >>> metric(pred, gt), sorted(metric.statistics()), isinstance(metric, ConfusionMetric)
        (tensor(0.6667, dtype=torch.float64), ['count', 'iou_binary', 'precision_curve'], True)
    """

    _measure: str
    _default_mode: Mode = "binary"
    functional: Callable[..., Tensor]
    """The member's functional form (``Precision.functional is nobg_metrics.functional.precision``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A member's orientation comes from the measure registry (names and orientations typed once)."""
        super().__init_subclass__(**kwargs)
        measure = cls.__dict__.get("_measure")
        if measure in MEASURES:
            cls.higher_is_better = MEASURES[measure].higher_is_better
        elif measure in AUC_CURVES:
            cls.higher_is_better = True

    def __init__(self, mode: Mode | None = None, *, threshold: float = 0.5, reduction: SampleReduction = "mean",
                 num_thresholds: int = NUM_LEVELS, beta2: float = 0.3, chance: KappaChance | None = None,
                 normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 share_statistics: Iterable[Request] = (), validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        self.mode = self._default_mode if mode is None else mode
        self.reduction = reduction
        self.options = ConfusionOptions(num_thresholds=num_thresholds, threshold=threshold, beta2=beta2,
                                        normalize=normalize, empty_gt=empty_gt,
                                        chance=resolve_chance(chance, empty_gt))
        self.threshold, self.num_thresholds, self.beta2 = threshold, num_thresholds, beta2
        self.normalize, self.empty_gt, self.chance = normalize, empty_gt, self.options.chance
        self._requests = (mode_requests(self._measure, self.mode, reduction) | self._extra_requests()
                          | check_requests(share_statistics))
        self._states = state_shapes(self._requests, num_thresholds, "confusion")
        self._add_fingerprint(self.options.fingerprint(self._requests))
        for key, (name, shape) in self._states.items():
            if key == TABLE:
                self._add_sum(name, shape)
            else:
                self._add_count(name, shape)

    def _extra_requests(self) -> frozenset[Request]:
        """Statistics a subclass holds beyond its mode's (e.g. the curves its ``curves()`` returns)."""
        return frozenset()

    @property
    def requests(self) -> frozenset[Request]:
        """The ``(measure, reduction)`` statistics this metric accumulates."""
        return self._requests

    def _statistics(self, pred: InputMaps, gt: InputMaps) -> Statistics:
        sums = confusion_sums(pred, gt, self._requests, self.options, self.validate_args)
        return {name: sums[key] for key, (name, _) in self._states.items()}

    def statistics(self, states: Mapping[str, Tensor] | None = None) -> dict[str, Tensor]:
        """The accumulated sums by statistic key (``"iou_binary"``, ``"precision_curve"``, ``"count"``, ...) of
        ``states`` (default: the metric's own)."""
        if states is None:
            states = cast("dict[str, Tensor]", self.metric_state)  # sums and counts only: no list state
        sums = {key: states[name] for key, (name, _) in self._states.items()}
        table = sums.pop(TABLE, None)
        return {**sums, **({} if table is None else split_table(table, self._requests))}

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: float64, scalar or :math:`(T,)` for ``mode="curve"``."""
        return mode_compute(self._measure, self.mode, self.reduction, self.statistics(states), self.options)

    def curves(self) -> dict[str, Tensor]:
        """The mean per-image curves this metric holds, ``{measure: (T,)}``, and ``"thresholds"`` (descending)."""
        stats = self.statistics()
        out = {key[: -len("_curve")]: value / stats[COUNT] for key, value in stats.items() if key.endswith("_curve")}
        out["thresholds"] = thresholds_of(self.num_thresholds, stats[COUNT].device)
        return out

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:
        """Plot: the curve against the threshold (curve modes; PR / ROC for the AUCs), else the scalar value.

        Returns:
            ``(figure, axis)`` (matplotlib, the ``plot`` extra).
        """
        if self.mode not in ("max", "mean", "curve") and self._measure not in AUC_CURVES:
            return super().plot(val, ax)
        return plot_curves(self.curves(), self._measure, ax=ax)


class ThresholdFirstMetric(ConfusionMetric):
    """A family member whose first positional argument is the binary threshold (as ``IoU(0.5)``)."""

    def __init__(self, threshold: float = 0.5, *, mode: Mode | None = None, reduction: SampleReduction = "mean",
                 num_thresholds: int = NUM_LEVELS, beta2: float = 0.3, chance: KappaChance | None = None,
                 normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 share_statistics: Iterable[Request] = (), validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(mode, threshold=threshold, reduction=reduction, num_thresholds=num_thresholds, beta2=beta2,
                         chance=chance, normalize=normalize, empty_gt=empty_gt, share_statistics=share_statistics,
                         validate_args=validate_args, **kwargs)
