"""The reading rules of 8-bit data, in one place: the gt's ``> 128`` and the level -> value tables.

PySODMetrics 1.6.2 ``prepare_data``: ``gt = gt > 128`` (strict: 128 is background), ``pred = pred / 255`` in
float64, then, with ``normalize``, the per-image min-max stretch ``(pred - min) / (max - min)`` when
``max != min``; its curves quantise ``(pred * 255).astype(np.uint8)`` (truncation). For a uint8 prediction
every pixel of one level gets one value, so a 256-entry table per image (:func:`range_level_values`), built
with the reference's own float64 arithmetic operation for operation, gives every metric the reference's
pixel values bit for bit. Float gts are foreground where ``> 0.5``, bool gts as they are.

The fast forms of the gt rule (a 0/1 byte indicator by saturating arithmetic, the histogram's class bit) are
here too, each tested against :func:`binarize_gt`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops.arith import divide

NUM_LEVELS = 256
"""Levels of an 8-bit map (and thresholds of the reference's curves)."""

GT_CUT = 128
"""uint8 gt pixels are foreground where ``gt > GT_CUT``."""


def binarize_gt(gt: Tensor) -> Tensor:
    """Foreground mask by the reference rules: bool as is, uint8 ``> 128``, float ``> 0.5``.

    Examples:
        >>> binarize_gt(torch.tensor([127, 128, 129], dtype=torch.uint8))
        tensor([False, False,  True])
    """
    if gt.dtype == torch.bool:
        return gt
    if gt.dtype == torch.uint8:
        return gt > GT_CUT
    return gt > 0.5




def foreground_bit_256(gt: Tensor, dtype: torch.dtype) -> Tensor:
    """``256`` where the raw uint8 ``gt > 128``, else ``0``, in ``dtype`` — without a bool pass.

    ``(g + 127) & 256`` is 256 exactly when ``g > 128`` for ``g`` in 0..255 (the histogram's class bit).

    Examples:
        >>> foreground_bit_256(torch.tensor([0, 128, 129, 255], dtype=torch.uint8), torch.int16).tolist()
        [0, 0, 256, 256]
    """
    return gt.to(dtype).add_(255 - GT_CUT).bitwise_and_(256)


def foreground_indicator(gt: Tensor) -> Tensor:
    """:math:`(B, N)` uint8 0/1 gt indicator from :math:`(B, H, W)` bool or raw uint8 (``> 128``).

    Examples:
        >>> foreground_indicator(torch.tensor([[0, 128, 129, 255]], dtype=torch.uint8)).tolist()
        [[0, 0, 1, 1]]
    """
    flat = gt.reshape(gt.shape[0], -1)
    if flat.dtype == torch.bool:
        return flat.view(torch.uint8)
    return flat.clamp(GT_CUT, GT_CUT + 1).sub_(GT_CUT)  # 0 for g <= 128, 1 for g >= 129


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

    Examples:
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

    Examples:
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

    Examples:
        >>> quantize(torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64))
        tensor([  0, 127, 255], dtype=torch.uint8)
    """
    return (pred * 255).to(torch.uint8)
