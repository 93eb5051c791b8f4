"""Per-image joint histograms of prediction levels and gt, the statistic behind the pixel metrics.

One ``bincount`` over image-offset bin ids counts, for every image of a batch at once, how many pixels
of each prediction level fall on gt background and on gt foreground. For ``uint8`` predictions (the PNG
protocol) the 256 raw levels determine everything the cheap and threshold-swept metrics need: each
level maps to one float64 value (:mod:`nobg_metrics.ops.levels`), computed exactly as PySODMetrics
computes it pixel by pixel, so sums over the histogram equal the reference's sums over pixels up to
summation order.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.levels import (  # noqa: F401  (the level tables live there; re-exported for callers)
    NUM_LEVELS,
    binarize_gt,
    foreground_bit_256,
    level_values,
    lookup_levels,
    quantize,
    range_level_values,
)


def joint_histogram(levels: Tensor, gt: Tensor, num_levels: int = NUM_LEVELS) -> Tensor:
    """Count pixels per (image, gt class, level).

    Args:
        levels: :math:`(B, H, W)` integer levels in ``[0, num_levels)`` (uint8 or any integer dtype).
        gt: :math:`(B, H, W)` bool, or raw uint8 read by the reference rule (foreground where ``> 128``).
        num_levels: number of levels.

    Returns:
        :math:`(B, 2, L)` int64 counts; ``[:, 0]`` gt background, ``[:, 1]`` gt foreground.

    Examples:
        >>> lv = torch.tensor([[[0, 255], [255, 3]]], dtype=torch.uint8)
        >>> gt = torch.tensor([[[False, True], [False, True]]])
        >>> h = joint_histogram(lv, gt)
        >>> h[0, 0, 0].item(), h[0, 0, 255].item(), h[0, 1, 255].item(), h[0, 1, 3].item()
        (1, 1, 1, 1)
        >>> torch.equal(joint_histogram(lv, gt.to(torch.uint8) * 129), h)
        True
    """
    batch = levels.shape[0]
    size = batch * 2 * num_levels
    # int16 ids while they fit (half the memory traffic of int32)
    dtype = torch.int16 if size <= torch.iinfo(torch.int16).max else torch.int32
    if gt.dtype == torch.uint8 and num_levels == NUM_LEVELS:
        flat_levels = levels.reshape(batch, -1)
        flat_levels = flat_levels if flat_levels.dtype in (torch.uint8, dtype) else flat_levels.to(dtype)
        ids = foreground_bit_256(gt.reshape(batch, -1), dtype).add_(flat_levels)
    else:
        foreground = binarize_gt(gt)
        ids = levels.reshape(batch, -1).to(dtype).add_(foreground.reshape(batch, -1).to(dtype), alpha=num_levels)
    return bincount_per_image(ids, 2 * num_levels).reshape(batch, 2, num_levels)


def bincount_per_image(ids: Tensor, bins: int) -> Tensor:
    """Per-image ``bincount`` of ids in ``[0, bins)``: one pass over the batch, image offsets added in place.

    Args:
        ids: :math:`(B, ...)` integer ids (modified in place when ``B > 1``; ``B * bins`` must fit its dtype).
        bins: bins per image.

    Returns:
        :math:`(B, bins)` int64 counts.

    Examples:
        >>> bincount_per_image(torch.tensor([[0, 2, 2], [1, 1, 0]]), 3).tolist()
        [[1, 0, 2], [1, 2, 0]]
    """
    batch = ids.shape[0]
    if batch > 1:
        offsets = torch.arange(0, batch * bins, bins, device=ids.device, dtype=ids.dtype)
        ids.add_(offsets.view(batch, *([1] * (ids.ndim - 1))))
    return bincount_fixed(ids.reshape(-1), batch * bins).view(batch, bins)


def bincount_fixed(ids: Tensor, size: int) -> Tensor:
    """``bincount`` of non-negative ids into exactly ``size`` bins, without a device sync.

    CUDA's ``bincount`` reads the maximum back to the host, so CUDA uses ``index_add_`` into a fixed
    size. CPU ``bincount`` is single-threaded; it stays so: splitting it over a Python thread pool made
    the pool threads start OpenMP teams of their own, and every later torch op of the process ran ~1.5x
    slower on 2 cores (measured: weighted F 43 -> 63 ms once the S-measure had used the pool).
    """
    if not host_reads.free_on(ids):
        flat = ids.long()
        ones = torch.ones(1, dtype=torch.int64, device=ids.device).expand(flat.numel())
        return torch.zeros(size, dtype=torch.int64, device=ids.device).index_add_(0, flat, ones)
    return torch.bincount(ids, minlength=size)


def regroup_levels(hist: Tensor, new_levels: Tensor, num_levels: int = NUM_LEVELS) -> Tensor:
    """Re-bin a per-image histogram: raw level ``v`` of image ``b`` moves to ``new_levels[b, v]``.

    Args:
        hist: :math:`(B, 2, L)` counts.
        new_levels: :math:`(B, L)` int64 target level of each raw level.
        num_levels: number of target levels.

    Returns:
        :math:`(B, 2, num_levels)` int64 counts.
    """
    index = new_levels[:, None, :].expand(-1, 2, -1)
    out = torch.zeros(hist.shape[0], 2, num_levels, dtype=hist.dtype, device=hist.device)
    return out.scatter_add_(2, index, hist)
