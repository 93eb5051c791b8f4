"""Per-image reductions of uint8 predictions for the pixel metrics, without a histogram.

For the PNG protocol (uint8 prediction, uint8 or bool gt) MAE and the overlap metrics need only a few
numbers per image: the lowest and highest prediction level (the min-max stretch), the foreground count,
the level sums over all pixels and over the foreground, and the counts above one threshold level.
Masks are built as 0/1 bytes with saturating byte arithmetic (``clamp``/``maximum``/``minimum``, then a
subtraction), which the CPU vectorises, rather than with comparisons, which it does not: ten times
cheaper per pixel. Level values and the gt rule come from :mod:`nobg_metrics.ops.levels`, the
reference's own float64 arithmetic, and all sums are exact integers.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops.levels import foreground_indicator as foreground
from nobg_metrics.ops.levels import range_level_values


def above(levels: Tensor, cut: Tensor) -> Tensor:
    """:math:`(B, N)` uint8 0/1 indicator of ``level > cut[b]`` (``cut``: :math:`(B,)`, 0..255).

    Examples:
        >>> above(torch.tensor([[3, 4, 5]], dtype=torch.uint8), torch.tensor([4])).tolist()
        [[0, 0, 1]]
    """
    flat = levels.reshape(levels.shape[0], -1)
    low = cut.to(torch.uint8)[:, None]
    high = cut.clamp(max=254).add(1).to(torch.uint8)[:, None]  # cut 255: nothing is above, and all map to 0
    return torch.minimum(torch.maximum(flat, low), high).sub_(low)


def count(indicator: Tensor) -> Tensor:
    """Per-image number of ones of a :math:`(B, N)` uint8 0/1 indicator: :math:`(B,)` int64.

    One image: ``count_nonzero`` over the whole tensor (vectorised). Several: a byte sum with int32
    accumulation, faster on the CPU than ``count_nonzero(dim=)``; exact, since it sums at most 2**30 pixels at a
    time (an image of more pixels: in slices, their counts added in int64; a byte sum in int64 would first copy
    the bytes to int64).

    Examples:
        >>> count(torch.tensor([[1, 0, 1], [0, 0, 1]], dtype=torch.uint8)).tolist()
        [2, 1]
    """
    if indicator.shape[0] == 1:
        return torch.count_nonzero(indicator).reshape(1)
    pixels, step = indicator.shape[1], 2**30
    parts = [indicator[:, start : start + step].sum(dim=1, dtype=torch.int32).long()
             for start in range(0, pixels, step)]
    return parts[0] if len(parts) == 1 else torch.stack(parts).sum(dim=0)  # > 2**30 pixels: a few slices


def level_range(levels: Tensor) -> tuple[Tensor, Tensor]:
    """Per-image ``(min, max)`` level of :math:`(B, H, W)` uint8 levels: two :math:`(B,)` uint8."""
    flat = levels.reshape(levels.shape[0], -1)
    return flat.amin(dim=1), flat.amax(dim=1)  # separately: aminmax(dim=) has no vectorised CPU kernel


def level_sums(levels: Tensor, indicator: Tensor) -> tuple[Tensor, Tensor]:
    """Per-image sum of levels over all pixels and over an indicator: two :math:`(B,)` int64, exact.

    Args:
        levels: :math:`(B, H, W)` uint8.
        indicator: :math:`(B, N)` uint8 0/1.
    """
    flat = levels.reshape(levels.shape[0], -1)
    # int32 accumulation is exact while 255 * N < 2**31 (N < 8.4 Mpixel); beyond, int64
    dtype = torch.int32 if 255 * flat.shape[1] < 2**31 else torch.int64
    masked = flat * indicator
    if flat.shape[0] == 1:  # whole-tensor reductions are the vectorised CPU kernels
        return flat.sum(dtype=dtype).long().reshape(1), masked.sum(dtype=dtype).long().reshape(1)
    return flat.sum(dim=1, dtype=dtype).long(), masked.sum(dim=1, dtype=dtype).long()


def positive_counts(levels: Tensor, indicator: Tensor, values: Tensor, threshold: float) -> tuple[Tensor, Tensor]:
    """Per-image ``(TP, TP + FP)`` of ``value(level) > threshold`` against a gt indicator.

    ``values`` is non-decreasing in the level (``v / 255``, or an increasing affine stretch), so the
    positive pixels are exactly those above one cut level per image. Level 0 is never positive for a
    threshold >= 0 (its value is 0, or ``(0 - min) / span <= 0`` when stretched), so the cut is 0..255.

    Args:
        levels: :math:`(B, H, W)` uint8.
        indicator: :math:`(B, N)` uint8 0/1 gt.
        values: :math:`(B, 256)` float64 value of each level.
        threshold: strict threshold on the values, >= 0.

    Returns:
        two :math:`(B,)` int64.
    """
    cut = (values <= threshold).sum(dim=1) - 1  # the highest negative level
    positive = above(levels, cut)
    return count(positive & indicator), count(positive)


__all__ = ["above", "count", "foreground", "level_range", "level_sums", "positive_counts", "range_level_values"]
