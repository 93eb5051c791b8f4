"""Precision, Recall, Specificity, FPR, Kappa, F1 and PySODMetrics' PR/ROC AUCs as ``Metric`` classes.

Members of the confusion family (state and options: :mod:`nobg_metrics.metrics.sod.confusion`). Like the
torchmetrics binary classification metrics they default to ``mode="binary"`` (``pred > 0.5``, mean over
images); ``mode="max" | "mean" | "curve" | "adaptive"`` give PySODMetrics' dynamic and adaptive values.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from nobg_metrics._inputs import EmptyGt
from nobg_metrics.functional.sod.confusion import Request
from nobg_metrics.functional.sod.confusion_measures import KappaChance
from nobg_metrics.functional.sod.family import fpr, kappa, pr_auc, precision, recall, roc_auc, specificity
from nobg_metrics.functional.sod.threshold_curves import f_measure
from nobg_metrics.metrics.sod.confusion import ConfusionMetric
from nobg_metrics.ops.histogram import NUM_LEVELS

__all__ = ["F1", "FPR", "PRAUC", "ROCAUC", "Kappa", "Precision", "Recall", "Specificity"]


class Precision(ConfusionMetric):
    """Precision ``TP / (TP + FP)`` (PySODMetrics ``PrecisionHandler``); see :func:`nobg_metrics.functional.precision`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``precision`` (:class:`~torch.Tensor`): float64 in [0, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the mode first
    (``Precision("max")``).

    Examples:
        >>> import torch
        >>> pred, gt = torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> metric = Precision(mode="mean")
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(0.6641, dtype=torch.float64)
    """

    _measure = "precision"
    functional = staticmethod(precision)


class Recall(ConfusionMetric):
    """Recall = TPR = sensitivity ``TP / (TP + FN)`` (``RecallHandler``); see :func:`nobg_metrics.functional.recall`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``recall`` (:class:`~torch.Tensor`): float64 in [0, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the mode first
    (``Recall("max")``).

    Examples:
        >>> import torch
        >>> Recall()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(1., dtype=torch.float64)
    """

    _measure = "recall"
    functional = staticmethod(recall)


class Specificity(ConfusionMetric):
    """Specificity = TNR ``TN / (TN + FP)`` (``SpecificityHandler``); see :func:`nobg_metrics.functional.specificity`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``specificity`` (:class:`~torch.Tensor`): float64 in [0, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the mode first
    (``Specificity("max")``).

    Examples:
        >>> import torch
        >>> Specificity()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.5000, dtype=torch.float64)
    """

    _measure = "specificity"
    functional = staticmethod(specificity)


class FPR(ConfusionMetric):
    """False positive rate ``FP / (TN + FP)`` (``FPRHandler``, lower is better); see
    :func:`nobg_metrics.functional.fpr`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``fpr`` (:class:`~torch.Tensor`): float64 in [0, 1] (lower is better), a scalar, or :math:`(T,)` with
      ``mode="curve"`` (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the mode first
    (``FPR("max")``).

    Examples:
        >>> import torch
        >>> FPR()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.5000, dtype=torch.float64)
    """

    _measure = "fpr"
    functional = staticmethod(fpr)
    plot_upper_bound = 1.0


class Kappa(ConfusionMetric):
    """Kappa ``(OA - p_e) / (1 - p_e)``, Cohen's by default; ``chance="reference"`` (implied by
    ``empty_gt="reference"``) is PySODMetrics' ``KappaHandler``. See :func:`nobg_metrics.functional.kappa`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``kappa`` (:class:`~torch.Tensor`): float64 in [-1, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the mode first
    (``Kappa("max")``).

    Examples:
        >>> import torch
        >>> pred, gt = torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> Kappa()(pred, gt), Kappa(chance="reference")(pred, gt)
        (tensor(0.5000, dtype=torch.float64), tensor(0.4286, dtype=torch.float64))
    """

    _measure = "kappa"
    functional = staticmethod(kappa)
    plot_lower_bound = -1.0


class F1(ConfusionMetric):
    """F1 = Dice of the binarised prediction, ``(2 P R) / (P + R)``: the F-measure with β² = 1 as a measure of its own
    (``FmeasureHandler(beta=1)``), so that one compute group holds it next to ``FMeasure`` (β² = 0.3).
    ``FMeasure(beta2=1.0)`` gives the same values. Defaults to ``mode="binary"``.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``f1`` (:class:`~torch.Tensor`): float64 in [0, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the mode first
    (``F1("max")``).

    Examples:
        >>> import torch
        >>> F1()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.8000, dtype=torch.float64)
    """

    _measure = "f1"
    functional = staticmethod(functools.partial(f_measure, beta2=1.0))


class _AreaUnderCurve(ConfusionMetric):
    """An AUC of PySODMetrics' recipe over the family's mean curves (no mode, no threshold of its own)."""

    def __init__(self, *, num_thresholds: int = NUM_LEVELS, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                 threshold: float = 0.5, beta2: float = 0.3, chance: KappaChance | None = None,
                 share_statistics: Iterable[Request] = (), validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__("curve", threshold=threshold, num_thresholds=num_thresholds, beta2=beta2, chance=chance,
                         normalize=normalize, empty_gt=empty_gt, share_statistics=share_statistics,
                         validate_args=validate_args, **kwargs)


class PRAUC(_AreaUnderCurve):
    """Area under the mean PR curve, PySODMetrics' recipe; see :func:`nobg_metrics.functional.pr_auc`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``pr_auc`` (:class:`~torch.Tensor`): scalar float64 in [0, 1].

    Args:
        num_thresholds: T points of the mean curves; 256 reproduces PySODMetrics.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        threshold: as :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s; read only for the statistics of
            a shared compute group.
        beta2: likewise.
        chance: likewise.
        share_statistics: likewise.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> PRAUC()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.6250, dtype=torch.float64)
    """

    _measure = "pr_auc"
    functional = staticmethod(pr_auc)


class ROCAUC(_AreaUnderCurve):
    """Area under the mean ROC curve (recall over FPR), PySODMetrics' recipe; see
    :func:`nobg_metrics.functional.roc_auc`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``roc_auc`` (:class:`~torch.Tensor`): scalar float64 in [0, 1].

    The options are :class:`PRAUC`'s.

    Examples:
        >>> import torch
        >>> ROCAUC()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.7500, dtype=torch.float64)
    """

    _measure = "roc_auc"
    functional = staticmethod(roc_auc)
