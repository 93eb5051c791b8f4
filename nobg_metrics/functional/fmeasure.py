"""F-measure (Achanta et al., CVPR 2009), threshold-swept as PySODMetrics 1.6.2 ``Fmeasure``: max, mean, adaptive.

Per image and threshold t: ``P = TP / max(TP + FP, 1)``, ``R = TP / max(|gt|, 1)``,
``F = (1 + β²) P R / (β² P + R)`` (0 where ``P R = 0``), β² = 0.3. The dataset curve is the mean of the
per-image curves; ``max``/``mean`` take its maximum/mean over the T thresholds; ``adaptive`` is the mean of
per-image F at ``pred >= min(2 mean(pred), 1)``. Statistics: :mod:`nobg_metrics.functional.threshold_curves`.
"""

from __future__ import annotations

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.threshold_curves import _measure
from nobg_metrics.ops.histogram import NUM_LEVELS

_ARGS = """
    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        num_thresholds: T; 256 reproduces PySODMetrics (``floor(255 pred) >= t``, t = 255..0); other T
            quantise ``floor((T-1) pred)``. Ignored by the adaptive value.
        beta2: β² (PySODMetrics calls it ``beta``), 0.3 by convention.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` (pixel agreement per threshold for an all-background/all-foreground gt)
            or ``"reference"`` (PySODMetrics' F = 0).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.
"""


def f_measure_max(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Maximum over thresholds of the mean per-image F-measure curve (maxF)."""
    return _measure("f_measure", "max", pred, gt, num_thresholds, beta2, normalize, empty_gt, validate_args)


def f_measure_mean(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Mean over thresholds of the mean per-image F-measure curve (meanF)."""
    return _measure("f_measure", "mean", pred, gt, num_thresholds, beta2, normalize, empty_gt, validate_args)


def f_measure_adaptive(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Mean per-image F-measure at the adaptive threshold ``min(2 mean(pred), 1)`` (adpF)."""
    return _measure("f_measure", "adaptive", pred, gt, num_thresholds, beta2, normalize, empty_gt, validate_args)


f_measure_max.__doc__ += _ARGS + """
    Example:
        >>> import torch
        >>> pred = torch.tensor([[0.9, 0.8], [0.2, 0.6]])
        >>> gt = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> f_measure_max(pred, gt)
        tensor(1., dtype=torch.float64)
"""
f_measure_mean.__doc__ += _ARGS + """
    Example:
        >>> import torch
        >>> f_measure_mean(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.6811, dtype=torch.float64)
"""
f_measure_adaptive.__doc__ += _ARGS + """
    Example:
        >>> import torch
        >>> f_measure_adaptive(torch.tensor([[0.9, 0.3], [0.1, 0.0]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.8125, dtype=torch.float64)
"""
