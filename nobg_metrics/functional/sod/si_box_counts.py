"""Counts over each target's box on both paths: by the data on CPU, with fixed sizes elsewhere.

- where host reads are free (CPU), only the boxes' pixels are read: a large box through a view of it (a copy and a
  byte-sized ``bincount``), the small ones gathered together by flat index and counted by one ``bincount``
  (work ~ the sum of the box areas, in chunks);
- elsewhere (fixed sizes, no host read), box sums of per-pixel planes from summed-area tables, four reads per
  box (:func:`_box_sums`; ``max_targets`` slots per image, planes in chunks); float sums by a matrix product with
  the boxes' column masks (float64 accuracy, no table differences).

uint8 predictions are counted per raw level (a :math:`(T, 2, 256)` joint histogram per target): the level
tables of :mod:`nobg_metrics.ops.levels` then give every binarisation and the exact integer sums of MAE.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics._seg_batch import SegBatch
from nobg_metrics.functional.sod.si_statistics import (
    PLANE_PIXELS,
    TIE,
    TargetStats,
    background,
    error_map,
    histogram_error,
    masked_means,
    reference_means,
    uint8_error,
)
from nobg_metrics.functional.sod.si_targets import Targets
from nobg_metrics.ops import host_reads, uint8_stats
from nobg_metrics.ops.histogram import NUM_LEVELS, joint_histogram

GATHER_PIXELS = 1 << 22
"""CPU path: box pixels gathered per chunk of targets (bounds the index buffers)."""

SLICE_AREA = 1 << 12
"""CPU path: a box of at least this many pixels is counted from a view of it (a copy and a byte-sized
``bincount``, ~10 µs of overhead); smaller boxes are gathered together and counted by one ``bincount``."""


def target_stats(batch: SegBatch, targets: Targets, *, curve_levels: int | None, threshold: float | None,
                 adaptive: bool, mae: bool, engine: host_reads.Engine = "auto") -> TargetStats:
    """Per-target counts of one equal-size group.

    Args:
        batch: the group.
        targets: its targets (:func:`~nobg_metrics.functional.sod.si_targets.find_targets`).
        curve_levels: L, the levels of a float prediction's curve histogram; ``None``: no curve. uint8 input
            gets its raw-level histogram whenever a binarisation is asked for (on CPU always).
        threshold: the binary threshold, or ``None`` (no binary counts).
        adaptive: the adaptive counts.
        mae: the box and background error sums.
        engine: ``"data_sized"`` (``"auto"`` on CPU): each box's pixels only (host reads); ``"fixed"`` (``"auto"``
            off CPU): whole-image planes per target, no host read. Same counts.

    Returns:
        :class:`TargetStats`.
    """
    uint8 = batch.is_uint8
    wants_hist = curve_levels is not None or (uint8 and (adaptive or threshold is not None))
    low_high = uint8_stats.level_range(batch.pred_raw) if uint8 and mae and batch.normalize else None
    if host_reads.resolve_engine(engine, batch.gt_raw) == "data_sized":
        stats = _cpu_stats(batch, targets, None if uint8 else curve_levels, threshold, adaptive, mae, low_high)
    else:
        stats = _plane_stats(batch, targets, None if uint8 else curve_levels, wants_hist, threshold, adaptive, mae,
                             low_high)
    if mae:
        stats.background = background(batch, targets, low_high)
    return stats


def _chunks(area: Tensor, budget: int) -> list[tuple[int, int]]:
    """Consecutive target ranges of at most ``budget`` box pixels each (host side: CPU only)."""
    ends = torch.cumsum(area, 0).tolist()
    ranges, start, base = [], 0, 0
    for index, end in enumerate(ends):
        if end - base > budget and index > start:
            ranges.append((start, index))
            start, base = index, ends[index - 1]
    ranges.append((start, len(ends)))
    return [r for r in ranges if r[1] > r[0]]


class _Maps:
    """The per-pixel maps the CPU counts read, built once per group (only those asked for)."""

    def __init__(self, batch: SegBatch, curve_levels: int | None, threshold: float | None, adaptive: bool,
                 mae: bool) -> None:
        uint8 = batch.is_uint8
        self.width = NUM_LEVELS if uint8 else curve_levels if curve_levels is not None else 0  # 0: no levels
        self.levels = batch.pred_raw if uint8 else (
            (batch.pred * (curve_levels - 1)).to(torch.int32) if curve_levels is not None else None)
        self.gt = batch.gt
        self.hist_gt = batch.histogram_gt if uint8 else self.gt
        self.pred = batch.pred if not uint8 and (adaptive or threshold is not None) else None
        self.error = error_map(batch) if mae and not uint8 else None
        self.threshold, self.adaptive, self.n = threshold, adaptive, batch.num_pixels


def _cpu_stats(batch: SegBatch, targets: Targets, curve_levels: int | None, threshold: float | None, adaptive: bool,
               mae: bool, low_high: tuple[Tensor, Tensor] | None) -> TargetStats:
    """CPU: count each box's pixels only. A large box is read through a view of it (a copy of the box, byte-sized
    ``bincount``); the small ones are gathered together by flat index and counted by one ``bincount``."""
    maps = _Maps(batch, curve_levels, threshold, adaptive, mae)
    count = targets.image.numel()
    area = targets.area
    out = {"fg": torch.zeros(count, dtype=torch.int64), "bin_tp": torch.zeros(count, dtype=torch.int64),
           "bin_pos": torch.zeros(count, dtype=torch.int64), "adp_tp": torch.zeros(count, dtype=torch.int64),
           "adp_pos": torch.zeros(count, dtype=torch.int64), "adp_zero": torch.zeros(count, dtype=torch.bool),
           "adp_near": torch.zeros(count, dtype=torch.bool), "error": torch.zeros(count, dtype=torch.float64)}
    if maps.levels is not None:
        out["hist"] = torch.zeros(count, 2, maps.width, dtype=torch.int64)
    large = area >= SLICE_AREA
    _count_views(maps, targets, torch.nonzero(large).squeeze(1), out)
    small = torch.nonzero(~large).squeeze(1)
    for lo, hi in _chunks(area.index_select(0, small), GATHER_PIXELS):
        _count_gathered(maps, targets, small[lo:hi], out)
    stats = TargetStats(out["hist"][:, 1].sum(dim=-1) if maps.levels is not None else out["fg"], hist=out.get("hist"))
    if maps.pred is not None and threshold is not None:
        stats.binary = (out["bin_tp"], out["bin_pos"])
    if maps.pred is not None and adaptive:
        near = torch.nonzero(out["adp_near"]).squeeze(1) if maps.pred.dtype == torch.float64 else out["adp_near"][:0]
        if near.numel():  # re-decided with numpy's rounding of the masked mean (float32: the fast mean, as the family)
            _recount_adaptive(maps, targets, near, masked_means(batch, targets, near), out)
        outside = torch.where(out["adp_zero"], maps.n - area, 0)  # a cut of 0: the pixels outside are positive too
        stats.adaptive = (out["adp_tp"], out["adp_pos"] + outside)
    if mae:
        stats.error = histogram_error(batch, targets, out["hist"], low_high) if batch.is_uint8 else out["error"]
    return stats


def _count_views(maps: _Maps, targets: Targets, chosen: Tensor, out: dict[str, Tensor]) -> None:
    """Each chosen target from a view of its box (a Python loop over the large boxes: at most N / 4096 of them
    unless boxes overlap)."""
    columns = [x.index_select(0, chosen).tolist() for x in (targets.image, targets.top, targets.bottom, targets.left,
                                                             targets.right)]
    for t, b, y0, y1, x0, x1 in zip(chosen.tolist(), *columns):
        box = (slice(b, b + 1), slice(y0, y1 + 1), slice(x0, x1 + 1))
        if maps.levels is not None:
            out["hist"][t] = joint_histogram(maps.levels[box], maps.hist_gt[box], maps.width)[0]
        gt = maps.gt[box]
        if maps.levels is None:
            out["fg"][t] = torch.count_nonzero(gt)
        if maps.pred is not None:
            pred = maps.pred[box]
            if maps.threshold is not None:
                positive = pred > maps.threshold
                out["bin_pos"][t], out["bin_tp"][t] = torch.count_nonzero(positive), torch.count_nonzero(positive & gt)
            if maps.adaptive:
                _view_adaptive(maps, t, pred, gt, pred.sum(dtype=torch.float64) / maps.n, out)
        if maps.error is not None:
            out["error"][t] = maps.error[box].sum(dtype=torch.float64)


def _view_adaptive(maps: _Maps, t: int, pred: Tensor, gt: Tensor, mean: Tensor, out: dict[str, Tensor],
                   flag_near: bool = True) -> None:
    """Adaptive counts of target ``t`` from a view of its box, at ``min(2 · mean, 1)``; flags a near tie."""
    cut = torch.clamp(2 * mean, max=1.0).to(pred.dtype)  # get_adaptive_threshold of the masked prediction
    positive = pred >= cut
    out["adp_pos"][t], out["adp_tp"][t] = torch.count_nonzero(positive), torch.count_nonzero(positive & gt)
    out["adp_zero"][t] = cut <= 0
    if flag_near:
        out["adp_near"][t] = bool(((pred - cut).abs() <= TIE).any()) or (bool(cut <= TIE) and pred.numel() < maps.n)


def _recount_adaptive(maps: _Maps, targets: Targets, chosen: Tensor, means: Tensor, out: dict[str, Tensor]) -> None:
    """The chosen targets' adaptive counts again at their reference means (CPU; a loop over the rare ties)."""
    assert maps.pred is not None, "called for a float prediction's adaptive counts only"
    columns = [x.index_select(0, chosen).tolist() for x in (targets.image, targets.top, targets.bottom, targets.left,
                                                             targets.right)]
    for t, mean, b, y0, y1, x0, x1 in zip(chosen.tolist(), means, *columns):
        box = (slice(b, b + 1), slice(y0, y1 + 1), slice(x0, x1 + 1))  # (y1, x1 inclusive)
        _view_adaptive(maps, t, maps.pred[box], maps.gt[box], mean, out, flag_near=False)


def _count_gathered(maps: _Maps, targets: Targets, chosen: Tensor, out: dict[str, Tensor]) -> None:
    """The chosen (small) targets' pixels gathered by flat index, counted by ``bincount`` / ``index_add``."""
    _, h, w = maps.gt.shape
    count = chosen.numel()
    top, left, image = (x.index_select(0, chosen) for x in (targets.top, targets.left, targets.image))
    heights = targets.bottom.index_select(0, chosen) - top + 1
    widths = targets.right.index_select(0, chosen) - left + 1
    rows = int(heights.sum())
    row_target = torch.arange(count).repeat_interleave(heights, output_size=rows)
    row_rank = torch.arange(rows) - (torch.cumsum(heights, 0) - heights).repeat_interleave(heights, output_size=rows)
    row_start = (image.index_select(0, row_target) * h + top.index_select(0, row_target) + row_rank) * w \
        + left.index_select(0, row_target)
    row_width = widths.index_select(0, row_target)
    pixels = int(row_width.sum())
    offset = torch.cumsum(row_width, 0) - row_width
    flat = (row_start - offset).repeat_interleave(row_width, output_size=pixels) + torch.arange(pixels)
    tid = row_target.repeat_interleave(row_width, output_size=pixels)
    gt = maps.gt.reshape(-1).index_select(0, flat).long()
    if maps.levels is not None:
        code = maps.levels.reshape(-1).index_select(0, flat).long() + gt * maps.width
        joint = torch.bincount(tid * (2 * maps.width) + code, minlength=count * 2 * maps.width)
        out["hist"].index_copy_(0, chosen, joint.view(count, 2, maps.width))
    else:
        out["fg"].index_copy_(0, chosen, torch.zeros(count, dtype=torch.int64).index_add_(0, tid, gt))

    def per_target(values: Tensor, dtype: torch.dtype = torch.int64) -> Tensor:
        return torch.zeros(count, dtype=dtype).index_add_(0, tid, values.to(dtype))

    if maps.pred is not None:
        pred = maps.pred.reshape(-1).index_select(0, flat)
        if maps.threshold is not None:
            positive = (pred > maps.threshold).long()
            out["bin_pos"].index_copy_(0, chosen, per_target(positive))
            out["bin_tp"].index_copy_(0, chosen, per_target(positive * gt))
        if maps.adaptive:
            cut = torch.clamp(2 * (per_target(pred, torch.float64) / maps.n), max=1.0).to(pred.dtype)
            per_pixel = cut.index_select(0, tid)
            positive = (pred >= per_pixel).long()  # get_adaptive_threshold of the masked prediction
            out["adp_pos"].index_copy_(0, chosen, per_target(positive))
            out["adp_tp"].index_copy_(0, chosen, per_target(positive * gt))
            out["adp_zero"].index_copy_(0, chosen, cut <= 0)
            near = per_target((pred - per_pixel).abs() <= TIE) > 0
            outside_near = (cut <= TIE) & (targets.area.index_select(0, chosen) < maps.n)  # the zeros outside
            out["adp_near"].index_copy_(0, chosen, near | outside_near)
    if maps.error is not None:
        out["error"].index_copy_(0, chosen, per_target(maps.error.reshape(-1).index_select(0, flat), torch.float64))


def _box_sums(planes: Tensor, corners: Tensor, signs: Tensor, bound: int = 1) -> Tensor:
    """Sum of each plane over each box from summed-area tables: :math:`(B, P, H, W)` -> :math:`(B, P, K)` int64.

    ``S(y1, x1) - S(y0 - 1, x1) - S(y1, x0 - 1) + S(y0 - 1, x0 - 1)``: the table at the four ``corners``
    (:math:`(B, 4K)` flat indices) times ``signs`` (:math:`(B, 4K)`, 0 for a corner outside the image or an unused
    slot). Exact integers: int32 tables while ``bound · H · W < 2^31`` (``bound``: the planes' largest value).
    """
    b, p, h, w = planes.shape
    dtype = torch.int32 if bound * h * w < 2**31 else torch.int64
    rows = torch.cumsum(planes, -1, dtype=dtype)
    if rows.device.type == "cpu":  # (tests of the fixed path) CPU cumsums are ~4x faster along the last dim
        table = torch.cumsum(rows.transpose(-1, -2).contiguous(), -1).view(b, p, h * w)  # (x, y) order
        corners = torch.div(corners, w, rounding_mode="floor") + (corners % w) * h
    else:
        table = torch.cumsum(rows, -2).view(b, p, h * w)
    read = table.gather(-1, corners[:, None].expand(b, p, corners.shape[1])) * signs[:, None]
    return read.view(b, p, -1, 4).sum(dim=-1, dtype=torch.int64)


def _corners(top: Tensor, bottom: Tensor, left: Tensor, right: Tensor, h: int, w: int) -> tuple[Tensor, Tensor]:
    """The four summed-area-table reads of each :math:`(B, K)` box: flat indices and signs, :math:`(B, 4K)` each."""
    used = (bottom >= top) & (right >= left)
    ys, xs = (bottom, top - 1, bottom, top - 1), (right, right, left - 1, left - 1)
    indices, signs = [], []
    for y, x, sign in zip(ys, xs, (1, -1, -1, 1)):
        inside = used & (y >= 0) & (x >= 0)
        indices.append(torch.where(inside, y.clamp_min(0) * w + x.clamp_min(0), 0))
        signs.append(inside.to(torch.int64) * sign)
    return torch.stack(indices, -1).flatten(1), torch.stack(signs, -1).flatten(1)


def _plane_stats(batch: SegBatch, targets: Targets, curve_levels: int | None, hist: bool, threshold: float | None,
                 adaptive: bool, mae: bool, low_high: tuple[Tensor, Tensor] | None) -> TargetStats:
    """Fixed sizes: box sums of planes over ``max_targets`` slots per image (no host read)."""
    b, h, w = batch.shape
    k = targets.slots
    assert k is not None, "targets found on the same device: the fixed-size layout"
    device = batch.gt_raw.device
    n = batch.num_pixels
    top, bottom, left, right = (x.view(b, k) for x in (targets.top, targets.bottom, targets.left, targets.right))
    index = torch.arange(max(h, w), device=device)
    rows = (index[:h].view(1, h, 1) >= top.view(b, 1, k)) & (index[:h].view(1, h, 1) <= bottom.view(b, 1, k))
    columns = (index[:w].view(1, 1, w) >= left.view(b, k, 1)) & (index[:w].view(1, 1, w) <= right.view(b, k, 1))
    gt = batch.gt
    per_chunk = max(1, PLANE_PIXELS // (b * h * w))
    corners, signs = _corners(top, bottom, left, right, h, w)

    def sums(planes: Tensor, bound: int = 1) -> Tensor:  # (B, P, H, W) -> (P, B·K)
        return _box_sums(planes, corners, signs, bound).permute(1, 0, 2).reshape(planes.shape[1], b * k)

    def float_sums(values: Tensor) -> Tensor:  # (B, H, W) float64 -> (B·K,): matrix product, float64 accuracy
        return (torch.matmul(values, columns.transpose(1, 2).double()) * rows).sum(dim=1).view(b * k)

    stats = TargetStats(sums(gt[:, None])[0])
    uint8 = batch.is_uint8
    if hist:
        width = NUM_LEVELS if uint8 else curve_levels
        assert width is not None, "a float prediction's histogram is asked for by its curve levels"
        levels = batch.pred_raw.to(torch.int32) if uint8 else (batch.pred * (width - 1)).to(torch.int32)
        code = levels + gt.to(torch.int32) * width
        joint = []
        for first in range(0, 2 * width, per_chunk):
            chosen = torch.arange(first, min(2 * width, first + per_chunk), device=device, dtype=torch.int32)
            joint.append(sums(code[:, None] == chosen.view(1, -1, 1, 1)))
        stats.hist = torch.cat(joint).view(2, width, b * k).permute(2, 0, 1)
    if threshold is not None and not (uint8 and hist):
        positive = batch.pred > threshold
        tp, pos = sums(torch.stack([positive & gt, positive], dim=1))
        stats.binary = (tp, pos)
    if adaptive and not uint8:
        pred = batch.pred
        fast = float_sums(pred.double()) / n
        mean = reference_means(batch, targets, fast, torch.ones_like(fast, dtype=torch.bool), engine="fixed")
        cut = torch.clamp(2 * mean, max=1.0).to(pred.dtype).view(b, k)
        tp, pos = [], []
        for first in range(0, k, per_chunk):
            box = rows[:, :, first:first + per_chunk].permute(0, 2, 1)[..., None] & columns[:, first:first + per_chunk,
                                                                                              None, :]
            positive = (pred[:, None] >= cut[:, first:first + per_chunk, None, None]) & box
            tp.append((positive & gt[:, None]).sum(dim=(2, 3)))
            pos.append(positive.sum(dim=(2, 3)))
        outside = torch.where(cut.view(-1) <= 0, n - targets.area, 0)
        stats.adaptive = (torch.cat(tp, 1).view(-1), torch.cat(pos, 1).view(-1) + outside)
    if mae:
        if uint8 and hist:
            assert stats.hist is not None  # set above
            stats.error = histogram_error(batch, targets, stats.hist, low_high)
        elif uint8:
            raw = batch.pred_raw.to(torch.int32)
            fg = gt.to(torch.int32)
            level_sum, fg_level_sum = sums(torch.stack([raw, raw * fg], dim=1), bound=NUM_LEVELS - 1)
            stats.error = uint8_error(batch, targets.image, targets.area, level_sum, fg_level_sum, stats.fg, low_high)
        else:
            stats.error = float_sums(error_map(batch).double())
    return stats
