"""E-measure (enhanced alignment; Fan et al., IJCAI 2018) as PySODMetrics 1.6.2 ``Emeasure``: max, mean, adaptive.

Per image and threshold: the binarised prediction and the gt are centred by their means (μp, μg); on each
of the four confusion regions (TP, FP, FN, TN) the centred values are constants ``a ∈ {1-μp, -μp}``,
``b ∈ {1-μg, -μg}``, so ``align = 2ab / (a² + b² + eps)``, ``enhanced = (align + 1)² / 4`` and
``E = Σ_regions enhanced · count / (N - 1 + eps)`` — every threshold from the one cumulative histogram.
Degenerate gt: the reference scores #pred-bg (all-background gt) or #pred-fg (all-foreground gt) over
``N - 1 + eps``; ``empty_gt="agreement"`` uses ``(TP + TN) / N`` instead. A perfect prediction of a
non-degenerate gt scores ``N / (N - 1)`` (> 1): that is the reference. The F/E classes share statistics,
so these functions take ``beta2`` too (it only matters for the shared F curve, never for E).
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
        num_thresholds: T; 256 reproduces PySODMetrics; other T quantise ``floor((T-1) pred)``.
        beta2: β² of the F-measure computed alongside (no effect on E).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` (``(TP + TN) / N`` for an all-background/all-foreground gt) or
            ``"reference"`` (PySODMetrics' values).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.
"""


def e_measure_max(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Maximum over thresholds of the mean per-image E-measure curve (maxE)."""
    return _measure("e_measure", "max", pred, gt, num_thresholds, beta2, normalize, empty_gt, validate_args)


def e_measure_mean(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Mean over thresholds of the mean per-image E-measure curve (meanE)."""
    return _measure("e_measure", "mean", pred, gt, num_thresholds, beta2, normalize, empty_gt, validate_args)


def e_measure_adaptive(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    """Mean per-image E-measure at the adaptive threshold ``min(2 mean(pred), 1)`` (adpE)."""
    return _measure("e_measure", "adaptive", pred, gt, num_thresholds, beta2, normalize, empty_gt, validate_args)


e_measure_max.__doc__ += _ARGS + """
    Example:
        >>> import torch
        >>> pred = torch.tensor([[0.9, 0.8], [0.2, 0.6]])
        >>> gt = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> e_measure_max(pred, gt)
        tensor(1.3333, dtype=torch.float64)
"""
e_measure_mean.__doc__ += _ARGS + """
    Example:
        >>> import torch
        >>> e_measure_mean(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.7896, dtype=torch.float64)
"""
e_measure_adaptive.__doc__ += _ARGS + """
    Example:
        >>> import torch
        >>> e_measure_adaptive(torch.tensor([[0.9, 0.3], [0.1, 0.0]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.8515, dtype=torch.float64)
"""
