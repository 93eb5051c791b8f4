"""Per-image joint histograms of prediction levels and gt, the statistic behind the pixel metrics.

One ``bincount`` over image-offset bin ids counts, for every image of a batch at once, how many pixels
of each prediction level fall on gt background and on gt foreground. For ``uint8`` predictions (the PNG
protocol) the 256 raw levels determine everything the cheap and threshold-swept metrics need: each
level maps to one float64 value (``v / 255``, stretched when ``normalize``), computed exactly as
PySODMetrics computes it pixel by pixel, so sums over the histogram equal the reference's sums over
pixels up to summation order.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.arith import divide

NUM_LEVELS = 256


def joint_histogram(levels: Tensor, gt: Tensor, num_levels: int = NUM_LEVELS) -> Tensor:
    """Count pixels per (image, gt class, level).

    Args:
        levels: :math:`(B, H, W)` integer levels in ``[0, num_levels)`` (uint8 or any integer dtype).
        gt: :math:`(B, H, W)` bool, or raw uint8 read by the reference rule (foreground where ``> 128``).
        num_levels: number of levels.

    Returns:
        :math:`(B, 2, L)` int64 counts; ``[:, 0]`` gt background, ``[:, 1]`` gt foreground.

    Example:
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
        # class bit without a bool pass: (g + 127) & 256 is 256 exactly when g > 128 (g in 0..255)
        flat_levels = levels.reshape(batch, -1)
        flat_levels = flat_levels if flat_levels.dtype in (torch.uint8, dtype) else flat_levels.to(dtype)
        ids = gt.reshape(batch, -1).to(dtype).add_(127).bitwise_and_(256).add_(flat_levels)
    else:
        foreground = gt > 128 if gt.dtype == torch.uint8 else gt
        ids = levels.reshape(batch, -1).to(dtype).add_(foreground.reshape(batch, -1).to(dtype), alpha=num_levels)
    return bincount_per_image(ids, 2 * num_levels).reshape(batch, 2, num_levels)


def bincount_per_image(ids: Tensor, bins: int) -> Tensor:
    """Per-image ``bincount`` of ids in ``[0, bins)``: one pass over the batch, image offsets added in place.

    Args:
        ids: :math:`(B, ...)` integer ids (modified in place when ``B > 1``; ``B * bins`` must fit its dtype).
        bins: bins per image.

    Returns:
        :math:`(B, bins)` int64 counts.

    Example:
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


def level_values(hist: Tensor, normalize: bool) -> Tensor:
    """The float64 prediction value of each raw uint8 level, per image.

    ``v / 255``, then — with ``normalize`` and a non-constant image — the reference's stretch
    ``(v/255 - min) / (max - min)`` with min and max taken over the levels present in the image.
    The arithmetic is the reference's, operation for operation, so each value is bit-identical to
    what PySODMetrics' ``prepare_data`` gives the pixels of that level.

    Args:
        hist: :math:`(B, 2, 256)` counts from :func:`joint_histogram` of the raw uint8 levels.
        normalize: apply the per-image min-max stretch.

    Returns:
        :math:`(B, 256)` float64.
    """
    levels = torch.arange(NUM_LEVELS, device=hist.device)
    present = hist.sum(dim=1) > 0
    low = torch.where(present, levels, NUM_LEVELS).amin(dim=1)
    high = torch.where(present, levels, -1).amax(dim=1)
    return range_level_values(low, high, normalize)


def range_level_values(low: Tensor, high: Tensor, normalize: bool) -> Tensor:
    """:func:`level_values` from each image's lowest and highest uint8 level (e.g. ``aminmax``).

    Args:
        low: :math:`(B,)` integer, the image's minimum level.
        high: :math:`(B,)` integer, the image's maximum level.
        normalize: apply the per-image min-max stretch.

    Returns:
        :math:`(B, 256)` float64; levels outside ``[low, high]`` hold no pixel and may leave [0, 1].

    Example:
        >>> range_level_values(torch.tensor([51]), torch.tensor([153]), True)[0, [51, 102, 153]].tolist()
        [0.0, 0.5000000000000001, 1.0]
    """
    base = divide(torch.arange(NUM_LEVELS, device=low.device, dtype=torch.float64), 255)
    values = base.expand(low.shape[0], NUM_LEVELS)
    if not normalize:
        return values
    low = divide(low.double(), 255)[:, None]
    span = divide(high.double(), 255)[:, None] - low
    stretched = (values - low) / torch.where(span == 0, torch.ones_like(span), span)
    return torch.where(span == 0, values, stretched)


def lookup_levels(tables: Tensor, levels: Tensor) -> Tensor:
    """``tables[b, levels[b, ...]]``: each image's levels read through its own table.

    One ``index_select`` with int32 indices (~3x cheaper than an int64 gather).

    Args:
        tables: :math:`(B, K)` values per level (``K = 256`` for uint8 levels).
        levels: :math:`(B, ...)` uint8, or int32 indices below ``K``; never modified.

    Returns:
        ``levels``' shape, ``tables``' dtype.

    Example:
        >>> lookup_levels(torch.tensor([[0.0, 0.5] + [1.0] * 254]), torch.tensor([[1, 0, 9]], dtype=torch.uint8))
        tensor([[0.5000, 0.0000, 1.0000]])
    """
    index = levels.int()
    if index.shape[0] > 1:  # out of place: int32 ``levels`` are ``index`` itself
        index = index + torch.arange(0, tables.numel(), tables.shape[-1], device=index.device,
                                     dtype=torch.int32).view(-1, *[1] * (index.ndim - 1))
    return tables.reshape(-1).index_select(0, index.reshape(-1)).view(levels.shape)


def quantize(pred: Tensor) -> Tensor:
    """The reference's 256-level quantisation ``(pred * 255).astype(uint8)``: truncation.

    Computed in the prediction's own dtype, as numpy does (float64 for the uint8 protocol, float32
    stays float32), so the levels equal the reference's for both.

    Args:
        pred: :math:`(B, H, W)` float in [0, 1].

    Returns:
        :math:`(B, H, W)` uint8 levels.

    Example:
        >>> quantize(torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64))
        tensor([  0, 127, 255], dtype=torch.uint8)
    """
    return (pred * 255).to(torch.uint8)


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
