"""Size-invariant metrics (Li et al., ICML 2024) as ``Metric`` classes.

- :class:`SizeInvariantMAE` — PySODMetrics' ``SizeInvarianceMAE``;
- :class:`SizeInvariantConfusion` — a member of the confusion family made size-invariant
  (``SizeInvarianceFmeasureV2`` with one handler), in a mode, ``sample_based`` or not;
- :class:`SizeInvariant` — the size-invariant version of a configured metric: ``SizeInvariant(MAE())``,
  ``SizeInvariant(Precision(mode="max"), sample_based=False)``, ``SizeInvariant(PRAUC())``;
- :func:`nobg_metrics.collection.size_invariant_collection` — many of them in one compute group: one labelling and one
  pass per batch.

State (fixed size: it does not grow with the images or their targets; float64 sums and int64 counts,
``dist_reduce_fx="sum"``): SI-MAE holds ``si_mae_sum``, the image count ``si_mae_count`` and
``si_mae_overflow``; a confusion member one state per statistic it reads (``si_<measure>_sample_max``,
``si_<measure>_overall_curve`` :math:`(T,)`, ``si_pooled`` :math:`(4,)`, ...; see
:mod:`nobg_metrics.functional.sod.si_family`), ``si_samples``, ``si_targets`` and ``si_overflow``: the images that
had more targets than ``max_targets`` on the fixed-size (device) path, which make ``compute()`` raise. A zero
``options_<digest>`` state names the options that change the statistics.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping
from typing import Any, cast

from torch import Tensor
from torchmetrics import Metric

from nobg_metrics._inputs import EmptyGt, InputMaps, check_flag
from nobg_metrics.functional.sod.confusion import POOLED
from nobg_metrics.functional.sod.confusion_measures import MEASURES, KappaChance
from nobg_metrics.functional.sod.family import AUC_CURVES, Mode, confusion_options
from nobg_metrics.functional.sod.si_family import (
    OVERFLOW,
    SAMPLES,
    TARGETS,
    SIRequest,
    check_max_targets,
    check_si_requests,
    si_compute,
    si_fingerprint,
    si_key,
    si_requests,
    si_update,
)
from nobg_metrics.functional.sod.si_targets import DEFAULT_MAX_TARGETS
from nobg_metrics.functional.sod.size_invariance import _si_mae_compute, _si_mae_update
from nobg_metrics.metrics.base import NobgMetric, Statistics
from nobg_metrics.metrics.sod.confusion import ConfusionMetric
from nobg_metrics.metrics.sod.mae import MAE
from nobg_metrics.ops.histogram import NUM_LEVELS

__all__ = ["SizeInvariant", "SizeInvariantConfusion", "SizeInvariantMAE"]


class SizeInvariantMAE(NobgMetric):
    """Size-invariant MAE, the mean over images of ``SizeInvarianceMAE``'s per-image value; see
    :func:`nobg_metrics.functional.si_mae`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``si_mae`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image size-invariant MAE, in
      [0, 1] (lower is better).

    Args:
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        max_targets: target slots per image off CPU (an image with more makes ``compute()`` raise); no bound on CPU.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 16, 24, dtype=torch.bool); gt[0, 2:10, 2:10] = True
        >>> pred = gt.double(); pred[0, 2:10, 2:6] = 0.5
        >>> metric = SizeInvariantMAE()
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(0.0417, dtype=torch.float64)
    """

    higher_is_better = False

    def __init__(self, *, normalize: bool = False, max_targets: int = DEFAULT_MAX_TARGETS, validate_args: bool = True,
                 **kwargs: Any) -> None:
        check_flag("normalize", normalize)
        check_max_targets(max_targets)
        super().__init__(validate_args=validate_args, **kwargs)
        self.normalize, self.max_targets = normalize, max_targets
        self._add_fingerprint({"normalize": normalize, "max_targets": max_targets, "size_invariant": True})
        self._add_sum("si_mae_sum")
        self._add_count("si_mae_count")
        self._add_count("si_mae_overflow")

    def _statistics(self, pred: InputMaps, gt: InputMaps) -> Statistics:
        stats = _si_mae_update(pred, gt, self.normalize, self.max_targets, self.validate_args)
        return {"si_mae_sum": stats["si_mae"], "si_mae_count": stats[SAMPLES], "si_mae_overflow": stats[OVERFLOW]}

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: scalar float64."""
        return _si_mae_compute(states["si_mae_sum"], states["si_mae_count"], states["si_mae_overflow"],
                               self.max_targets)


class SizeInvariantConfusion(NobgMetric):
    """A confusion-family measure made size-invariant (``SizeInvarianceFmeasureV2``); see
    :func:`nobg_metrics.functional.size_invariant`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``si_<measure>`` (:class:`~torch.Tensor`): float64, the measure's range (``"kappa"``: [-1, 1], else [0, 1]): a
      scalar, or :math:`(T,)` with ``mode="curve"`` (``T = num_thresholds``, thresholds descending).

    Args:
        measure: ``"precision"``, ``"recall"``, ``"specificity"``, ``"fpr"``, ``"iou"``, ``"dice"``,
            ``"accuracy"``, ``"ber"``, ``"kappa"``, ``"f_measure"``, ``"f1"``, or ``"pr_auc"`` / ``"roc_auc"``;
            the default with ``mode="max"`` is the paper's headline SI-maxF.
        mode: ``"max"``, ``"mean"``, ``"curve"``, ``"adaptive"`` or ``"binary"`` (not read for the AUCs).
        sample_based: mean over each image's targets, then over images (True); or over all targets (False).
        threshold: the binary mode's strict threshold ``pred > threshold``.
        num_thresholds: T points of a curve; 256 reproduces PySODMetrics.
        beta2: β² of the F-measure (0.3; 1.0 for F1).
        chance: kappa's chance agreement, ``"cohen"`` / ``"reference"``; ``None``: ``"reference"`` exactly under
            ``empty_gt="reference"`` (as :class:`nobg_metrics.Kappa`).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        max_targets: target slots per image off CPU (an image with more makes ``compute()`` raise).
        share_statistics: further ``(measure, reduction)`` statistics to compute in the same pass (a compute group).
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 16, 24, dtype=torch.bool); gt[0, 1:11, 1:11] = True  # a square of 100 px
        >>> for i in range(12): gt[0, 4 + i, 12:13 + i] = True  # a triangle of 78 px in a 12 x 12 box
        >>> pred = gt.double() * 0.9; pred[0, 4:16, 12:24] = 0.9  # the triangle's whole box predicted
        >>> metric = SizeInvariantConfusion("iou", "binary")
        >>> metric.update(pred, gt)
        >>> metric.compute()  # the mean of the targets' IoU: (1 + 78/144) / 2
        tensor(0.7708, dtype=torch.float64)
    """

    def __init__(self, measure: str = "f_measure", mode: Mode = "max", *, sample_based: bool = True,
                 threshold: float = 0.5, num_thresholds: int = NUM_LEVELS, beta2: float = 0.3,
                 chance: KappaChance | None = None, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 max_targets: int = DEFAULT_MAX_TARGETS, share_statistics: Iterable[SIRequest] = (),
                 validate_args: bool = True, **kwargs: Any) -> None:
        check_max_targets(max_targets)
        requests = si_requests(measure, mode, sample_based)
        super().__init__(validate_args=validate_args, **kwargs)
        self.measure, self.mode, self.sample_based, self.max_targets = measure, mode, sample_based, max_targets
        self.options = confusion_options(num_thresholds, threshold, normalize, empty_gt, beta2=beta2, chance=chance)
        self.normalize, self.empty_gt, self.num_thresholds = normalize, empty_gt, num_thresholds
        self._requests = requests | check_si_requests(share_statistics)
        # sorted: every process registers (and so all-reduces) the states in one order
        self._state_names = {si_key(m, r): f"si_{si_key(m, r)}" for m, r in sorted(self._requests)}
        self._add_fingerprint(si_fingerprint(self._requests, self.options, max_targets))
        for key, name in self._state_names.items():
            if key == POOLED:
                self._add_count(name, (4,))
            else:
                self._add_sum(name, (num_thresholds,) if key.endswith("_curve") else ())
        for key in (SAMPLES, TARGETS, OVERFLOW):
            self._state_names[key] = f"si_{key}"
            self._add_count(f"si_{key}")

    @property
    def higher_is_better(self) -> bool:  # type: ignore[override]  # a property over the base's class attribute
        """The measure's orientation (the AUCs: higher is better)."""
        return True if self.measure in AUC_CURVES else MEASURES[self.measure].higher_is_better

    @property
    def requests(self) -> frozenset[SIRequest]:
        """The ``(measure, reduction)`` statistics this metric accumulates."""
        return self._requests

    def _statistics(self, pred: InputMaps, gt: InputMaps) -> Statistics:
        stats = si_update(pred, gt, self._requests, self.options, self.max_targets, self.validate_args)
        return {name: stats[key] for key, name in self._state_names.items()}

    def statistics(self) -> dict[str, Tensor]:
        """The accumulated sums by statistic key (``"f_measure_sample_max"``, ``"samples"``, ...)."""
        states = cast("dict[str, Tensor]", self.metric_state)  # sums and counts only: no list state
        return {key: states[name] for key, name in self._state_names.items()}

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: float64, scalar or :math:`(T,)` for ``mode="curve"``."""
        statistics = {key: states[name] for key, name in self._state_names.items()}
        return si_compute(self.measure, self.mode, self.sample_based, statistics, self.options, self.max_targets)


class SizeInvariant(abc.ABC):  # noqa: B024 - an ABC for its register()ed virtual subclasses, no abstract method
    """The size-invariant version of a configured metric, with its options: ``nm.SizeInvariant(nm.MAE())``.

    A constructor: ``SizeInvariant(metric, ...)`` returns a :class:`SizeInvariantMAE` or a
    :class:`SizeInvariantConfusion` (both count as instances of ``SizeInvariant``).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``si_<measure>`` (:class:`~torch.Tensor`): the returned metric's: a scalar float64 (SI-MAE, the AUCs, every mode
      but ``"curve"``) or :math:`(T,)` (``mode="curve"``).

    Args:
        metric (Metric): :class:`~nobg_metrics.MAE`, or a confusion-family member (``Precision``, ``Recall``,
            ``Specificity``, ``FPR``, ``IoU``, ``Dice``, ``Accuracy``, ``BER``, ``Kappa``, ``F1``, ``FMeasure``,
            ``PRAUC``, ``ROCAUC``; not ``EMeasure``, which has no size-invariant reference).
        sample_based (bool | None): ``None``: ``False`` for a ``reduction="pooled"`` member, else ``True``.
        max_targets (int): as :class:`SizeInvariantConfusion`.
        kwargs (Any): passed to :class:`torchmetrics.Metric`.

    Examples:
        >>> import nobg_metrics as nm
        >>> type(nm.SizeInvariant(nm.MAE())).__name__, nm.SizeInvariant(nm.IoU(reduction="pooled")).sample_based
        ('SizeInvariantMAE', False)
        >>> isinstance(nm.SizeInvariant(nm.Precision(mode="max")), nm.SizeInvariant)
        True
    """

    def __new__(  # type: ignore[misc]  # returns a registered virtual subclass, which mypy does not model
            cls, metric: Metric, *, sample_based: bool | None = None, max_targets: int = DEFAULT_MAX_TARGETS,
            **kwargs: Any) -> SizeInvariantMAE | SizeInvariantConfusion:
        if isinstance(metric, MAE):
            if sample_based is False:
                raise ValueError("SI-MAE is a mean of per-image values: `sample_based` must be True or None")
            return SizeInvariantMAE(normalize=metric.normalize, max_targets=max_targets,
                                    validate_args=metric.validate_args, **kwargs)
        if not isinstance(metric, ConfusionMetric) or metric._measure == "e_measure":
            raise TypeError(f"`metric` must be MAE or a confusion-family member other than EMeasure; "
                            f"got {type(metric).__name__}")
        pooled = metric.reduction == "pooled"
        if sample_based is None:
            sample_based = not pooled
        elif pooled and sample_based:
            raise ValueError("a reduction='pooled' member pools over all targets: `sample_based` must be False or None")
        o = metric.options
        return SizeInvariantConfusion(metric._measure, metric.mode, sample_based=sample_based, threshold=o.threshold,
                                      num_thresholds=o.num_thresholds, beta2=o.beta2, chance=o.chance,
                                      normalize=o.normalize, empty_gt=o.empty_gt, max_targets=max_targets,
                                      validate_args=metric.validate_args, **kwargs)


SizeInvariant.register(SizeInvariantMAE)
SizeInvariant.register(SizeInvariantConfusion)
