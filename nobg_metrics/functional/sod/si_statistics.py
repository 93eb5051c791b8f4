"""What each target's box holds, and the helpers both counting paths share.

Per target the reference scores ``(pred · box, gt ∧ box)`` over the whole image (``SizeInvarianceFmeasureV2``,
``SizeInvarianceMAE``). Outside its box the masked prediction is 0 and the masked gt empty, so everything
outside is known without reading it: those ``N - area`` pixels are gt background at level 0 (positive only at
the curve's ``>= 0`` threshold, or at an adaptive threshold of 0). The counts over the box itself come from
:mod:`nobg_metrics.functional.sod.si_box_counts`; here: the result type, SI-MAE's exact uint8 sums, the background
outside every box, and the adaptive threshold's mean as numpy rounds it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from nobg_metrics._seg_batch import SegBatch
from nobg_metrics.functional.sod import confusion
from nobg_metrics.functional.sod.si_targets import Targets
from nobg_metrics.ops import host_reads, uint8_stats
from nobg_metrics.ops.arith import divide
from nobg_metrics.ops.histogram import NUM_LEVELS
from nobg_metrics.ops.numpy_sum import numpy_mean

TIE = confusion.TIE
"""A value this close to the adaptive threshold ``2 · mean`` may sit on it in exact arithmetic: then numpy's
rounding of the masked prediction's mean decides (as ``functional.sod.confusion`` does for whole images)."""

TIE_PIXELS = 1 << 16
"""Off CPU, images of at most this many pixels take every target's mean in numpy's order (no host read decides
which); larger ones the fast mean: a tie then needs an exact coincidence (uint8: ``2 Σ_box v = j N`` for a
level j present), about 2e-6 per target at 1024². On CPU the near targets are always re-summed."""

PLANE_PIXELS = 1 << 24
"""Fixed-size path: plane pixels per chunk (bool plane + int32 running sum: ~80 MiB)."""


@dataclass
class TargetStats:
    """What the measures read from each target's box (flat, in the order of :class:`Targets`).

    Attributes:
        fg: :math:`(T,)` int64 ``|gt ∧ box|``.
        hist: :math:`(T, 2, L)` int64 joint histogram of the box pixels (``[:, 1]`` gt foreground); uint8
            predictions: raw levels (L = 256), float: curve levels ``floor((L - 1) · pred)``; or ``None``.
        binary: ``(TP, TP + FP)`` :math:`(T,)` int64 of ``pred > threshold`` in the box (float input), or ``None``.
        adaptive: ``(TP, TP + FP)`` over the whole image at the masked prediction's own threshold (float input).
        error: :math:`(T,)` float64 ``Σ_box |pred - gt|`` (SI-MAE), or ``None``.
        background: ``(pixels, Σ |pred - gt|)`` outside every box, :math:`(B,)` int64 and float64, or ``None``.
    """

    fg: Tensor
    hist: Tensor | None = None
    binary: tuple[Tensor, Tensor] | None = None
    adaptive: tuple[Tensor, Tensor] | None = None
    error: Tensor | None = None
    background: tuple[Tensor, Tensor] | None = None


def uint8_error(batch: SegBatch, image: Tensor, area: Tensor, level_sum: Tensor, fg_level_sum: Tensor,
                fg: Tensor, low_high: tuple[Tensor, Tensor] | None) -> Tensor:
    """``Σ |pred - gt|`` over regions of uint8 images from exact integer sums (as ``functional.mae``).

    ``Σ f(v) - 2 Σ_fg f(v) + |fg|`` with ``f(v) = v / 255`` or, stretched, ``(v - min) / (max - min)``: one
    float64 division per region. All arguments :math:`(R,)` int64 (``image``: the region's image);
    ``low_high``: the images' level range (``normalize`` only).
    """
    sum_all, sum_fg = divide(level_sum.double(), 255), divide(fg_level_sum.double(), 255)
    if batch.normalize:
        assert low_high is not None, "the level range comes with every stretched uint8 batch"
        low, high = (level.long().index_select(0, image) for level in low_high)
        span = high - low
        divisor = span.clamp_min(1).double()
        sum_all = torch.where(span > 0, (level_sum - low * area).double() / divisor, sum_all)
        sum_fg = torch.where(span > 0, (fg_level_sum - low * fg).double() / divisor, sum_fg)
    return sum_all - 2 * sum_fg + fg.double()


def error_map(batch: SegBatch) -> Tensor:
    """:math:`(B, H, W)` ``|pred - gt|`` in the prediction's dtype (float input; as ``functional.mae``)."""
    pred = batch.pred
    return (pred - batch.gt.to(pred.dtype)).abs()


def histogram_error(batch: SegBatch, targets: Targets, hist: Tensor, low_high: tuple[Tensor, Tensor] | None) -> Tensor:
    """SI-MAE box sums of uint8 input from the raw-level histograms (exact integer sums)."""
    levels = torch.arange(NUM_LEVELS, device=hist.device)
    per_level = hist.sum(dim=1)
    return uint8_error(batch, targets.image, per_level.sum(-1), (per_level * levels).sum(-1),
                       (hist[:, 1] * levels).sum(-1), hist[:, 1].sum(-1), low_high)


def masked_means(batch: SegBatch, targets: Targets, chosen: Tensor) -> Tensor:
    """``np.mean(pred * box)`` of the chosen targets bit for bit (numpy's pairwise order over the whole masked
    image, :func:`~nobg_metrics.ops.numpy_sum.numpy_mean`): :math:`(len(chosen),)` float64, in chunks."""
    _, h, w = batch.shape
    device = batch.pred.device
    rows, columns = torch.arange(h, device=device), torch.arange(w, device=device)
    means = []
    per_chunk = max(1, PLANE_PIXELS // (h * w))
    for first in range(0, chosen.numel(), per_chunk):
        part = chosen[first:first + per_chunk]
        top, bottom, left, right = (x.index_select(0, part) for x in (targets.top, targets.bottom, targets.left,
                                                                      targets.right))
        box = (((rows >= top[:, None]) & (rows <= bottom[:, None]))[:, :, None]
               & ((columns >= left[:, None]) & (columns <= right[:, None]))[:, None, :])
        means.append(numpy_mean(batch.pred.index_select(0, targets.image.index_select(0, part)) * box))
    return torch.cat(means) if means else torch.zeros(0, dtype=torch.float64, device=device)


def reference_means(batch: SegBatch, targets: Targets, fast: Tensor, near: Tensor,
                    engine: host_reads.Engine = "auto") -> Tensor:
    """Per-target means of ``pred · box`` as ``np.mean`` rounds them where a value may sit on the threshold.

    Args:
        fast: :math:`(T,)` float64 means in any summation order.
        near: :math:`(T,)` bool, targets with a value within :data:`TIE` of ``2 · fast``.
        engine: ``"data_sized"`` (``"auto"`` on CPU): the near targets are re-summed (a host read picks them);
            ``"fixed"`` (``"auto"`` off CPU): every target when the image has at most :data:`TIE_PIXELS` pixels
            (no host read decides), else none.

    float32 predictions keep the fast mean (the reference sums them in float32; the family's documented tolerance).
    """
    if batch.pred.dtype != torch.float64:
        return fast
    if host_reads.resolve_engine(engine, fast) == "data_sized":
        rows = torch.nonzero(near).squeeze(1)
        return fast.index_put((rows,), masked_means(batch, targets, rows)) if rows.numel() else fast
    if batch.num_pixels > TIE_PIXELS:
        return fast
    return masked_means(batch, targets, torch.arange(fast.numel(), device=fast.device))


def background(batch: SegBatch, targets: Targets, low_high: tuple[Tensor, Tensor] | None) -> tuple[Tensor, Tensor]:
    """Pixels outside every box and their ``Σ |pred - gt|``, :math:`(B,)` each, with no host read: a coverage count
    from ``+1`` / ``-1`` at each box row's ends (one running sum along the rows), then masked byte sums."""
    b, h, w = batch.shape
    device = batch.gt_raw.device
    if targets.slots is None:  # exact: one entry per row of every box
        heights = targets.bottom - targets.top + 1
        rows = int(heights.sum())
        row_target = torch.arange(heights.numel(), device=device).repeat_interleave(heights, output_size=rows)
        rank = torch.arange(rows, device=device) - (torch.cumsum(heights, 0) - heights).index_select(0, row_target)
        row = targets.image.index_select(0, row_target) * h + targets.top.index_select(0, row_target) + rank
        weight = torch.ones_like(row, dtype=torch.int32)
    else:  # fixed: an entry per (image, row, slot), weighted by whether the slot's box holds the row
        k = targets.slots
        entry = torch.arange(b * h * k, device=device)  # ((image · H) + y) · K + slot
        row = torch.div(entry, k, rounding_mode="floor")
        row_target = torch.div(entry, h * k, rounding_mode="floor") * k + entry % k
        y = row % h
        weight = ((y >= targets.top.index_select(0, row_target)) & (y <= targets.bottom.index_select(0, row_target))
                  & targets.valid.index_select(0, row_target)).to(torch.int32)
    edges = torch.zeros(b * h, w + 1, dtype=torch.int32, device=device)
    edges.view(-1).index_add_(0, row * (w + 1) + targets.left.index_select(0, row_target).clamp(0, w), weight)
    edges.view(-1).index_add_(0, row * (w + 1) + (targets.right.index_select(0, row_target) + 1).clamp(0, w), -weight)
    outside = (edges.cumsum_(1)[:, :w] == 0).view(b, -1).view(torch.uint8)
    pixels = uint8_stats.count(outside)
    if batch.is_uint8:
        fg = torch.minimum(uint8_stats.foreground(batch.histogram_gt), outside)
        _, level_sum = uint8_stats.level_sums(batch.pred_raw, outside)
        _, fg_level_sum = uint8_stats.level_sums(batch.pred_raw, fg)
        error = uint8_error(batch, torch.arange(b, device=device), pixels, level_sum, fg_level_sum,
                            uint8_stats.count(fg), low_high)
    else:
        error = (error_map(batch).reshape(b, -1) * outside).sum(dim=1, dtype=torch.float64)
    return pixels, error
