"""IoU, Dice, Accuracy and BER as ``Metric`` classes: the confusion family's overlap members.

By default the binary mode (``pred > threshold``, mean over images, or ``reduction="pooled"``); any other
mode of the family with ``mode=``. State and options: :mod:`nobg_metrics.metrics.sod.confusion`; in a
``make_collection`` compute group the four (and every other member) share one statistics pass per batch.
"""

from __future__ import annotations

from nobg_metrics.functional.sod.overlap import accuracy, ber, dice, iou_metric
from nobg_metrics.metrics.sod.confusion import ThresholdFirstMetric

__all__ = ["BER", "Accuracy", "Dice", "IoU"]


class IoU(ThresholdFirstMetric):
    """IoU ``TP / (TP + FP + FN)`` (PySODMetrics ``IOUHandler``); see :func:`nobg_metrics.functional.iou_metric`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``iou`` (:class:`~torch.Tensor`): float64 in [0, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the threshold first
    (``IoU(0.3)``).

    Examples:
        >>> import torch
        >>> metric = IoU()
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(0.6667, dtype=torch.float64)
    """

    _measure = "iou"
    functional = staticmethod(iou_metric)


class Dice(ThresholdFirstMetric):
    """Dice ``2TP / (2TP + FP + FN)`` (``DICEHandler``); see :func:`nobg_metrics.functional.dice`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``dice`` (:class:`~torch.Tensor`): float64 in [0, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the threshold first
    (``Dice(0.3)``).

    Examples:
        >>> import torch
        >>> Dice(mode="max")(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(1., dtype=torch.float64)
    """

    _measure = "dice"
    functional = staticmethod(dice)


class Accuracy(ThresholdFirstMetric):
    """Pixel accuracy ``(TP + TN) / N`` (``OverallAccuracyHandler``); see :func:`nobg_metrics.functional.accuracy`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``accuracy`` (:class:`~torch.Tensor`): float64 in [0, 1], a scalar, or :math:`(T,)` with ``mode="curve"``
      (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the threshold first
    (``Accuracy(0.3)``).

    Examples:
        >>> import torch
        >>> Accuracy()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.7500, dtype=torch.float64)
    """

    _measure = "accuracy"
    functional = staticmethod(accuracy)


class BER(ThresholdFirstMetric):
    """Balanced error rate (``BERHandler``, lower is better); see :func:`nobg_metrics.functional.ber`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``ber`` (:class:`~torch.Tensor`): float64 in [0, 1] (lower is better), a scalar, or :math:`(T,)` with
      ``mode="curve"`` (``T = num_thresholds``, thresholds descending).

    The options are :class:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric`'s, the threshold first
    (``BER(0.3)``).

    Examples:
        >>> import torch
        >>> BER()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.2500, dtype=torch.float64)
    """

    _measure = "ber"
    functional = staticmethod(ber)
