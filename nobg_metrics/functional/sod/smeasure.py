"""S-measure (structure measure; Fan et al., ICCV 2017) as PySODMetrics 1.6.2 ``Smeasure``, batched over images.

Reference (``Smeasure.cal_sm``), per image, pred float in [0, 1], gt bool, y = mean(gt):

- y == 0: ``1 - mean(pred)``; y == 1: ``mean(pred)`` (already a pixel-agreement score, so
  ``empty_gt="agreement"`` and ``"reference"`` give the same value);
- else ``max(0, α S_object + (1 - α) S_region)``, with
  ``s_object(x) = 2 mean(x) / (mean(x)² + 1 + std(x, ddof=1) + eps)`` (std = 0 for one pixel),
  ``S_object = y s_object(pred[gt]) + (1 - y) s_object((1 - pred)[~gt])``;
  ``S_region``: split at the gt centroid ``round(mean(argwhere(gt))) + 1`` (half to even) into quadrants
  ``[:cy, :cx]``, ``[:cy, cx:]``, ``[cy:, :cx]``, ``[cy:, cx:]`` weighted by area (the last weight is
  ``1 - the other three``), each scored by the ssim with variances over ``N - 1 + eps``:
  ``a = 4 x y σxy``, ``b = (x² + y²)(σx² + σy²)``, score ``a / (b + eps)`` if a != 0, 1 if a = b = 0, else 0.

Vectorised: the four quadrants of every image are two masks (rows above cy, columns left of cx), and every
per-quadrant sum is ``rows_mask @ map @ cols_mask`` — batched matmuls over all images and quadrants.
Deviations are two-pass (quadrant means first, each quadrant shifted by its own corner pixel so a constant
quadrant has deviations exactly 0); sums involving the binary gt use closed forms. uint8 predictions are
read through a 256-entry table of the reference's float64 values (bit-identical, no float pass).

Defined where the reference is not:

- centroid rounding onto the last row/column leaves a quadrant empty; the reference returns NaN. Here an
  empty quadrant has weight 0 and contributes 0.
- a quadrant where both pred and gt are constant scores 1 in exact arithmetic (a = b = 0); the reference
  gets 1 or 0 depending on whether numpy's rounded mean of the constant equals it. Here it is always 1.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.ops.histogram import NUM_LEVELS, bincount_fixed, level_values

__all__ = ["s_measure"]

EPS = torch.finfo(torch.float64).eps
"""``np.spacing(1)``, the reference's epsilon."""


def _quadrant_sums(values: Tensor, top: Tensor, left: Tensor) -> Tensor:
    """Sums of a map over the four quadrants of each image: ``rows_mask @ map @ cols_mask`` (one read).

    Args:
        values: :math:`(B, H, W)` float64.
        top: :math:`(B, H)` bool, rows above the split; left: :math:`(B, W)` bool, columns left of it.

    Returns:
        :math:`(B, 4)` float64, quadrants ``[top-left, top-right, bottom-left, bottom-right]``.
    """
    rows = torch.stack([top, ~top], dim=1).to(values.dtype)  # (B, 2, H)
    cols = torch.stack([left, ~left], dim=2).to(values.dtype)  # (B, W, 2)
    return torch.bmm(torch.bmm(rows, values), cols).flatten(-2)


def _quadrant_map(values: Tensor, top: Tensor, left: Tensor) -> Tensor:
    """Broadcast per-quadrant values :math:`(B, 4)` to the pixels: :math:`(B, H, W)`."""
    upper = torch.where(left[:, None, :], values[:, 0, None, None], values[:, 1, None, None])
    lower = torch.where(left[:, None, :], values[:, 2, None, None], values[:, 3, None, None])
    return torch.where(top[:, :, None], upper, lower)


def _s_object(mean: Tensor, squared_deviation_sum: Tensor, count: Tensor) -> Tensor:
    """``2 mean / (mean² + 1 + std + eps)``, std with ddof=1 (0 for a single pixel); all :math:`(B,)`."""
    std = torch.sqrt(squared_deviation_sum / (count - 1).clamp(min=1))
    std = torch.where(count > 1, std, torch.zeros_like(std))
    return 2 * mean / (mean**2 + 1 + std + EPS)


def _ssim(x: Tensor, y: Tensor, sums: Tensor, count: Tensor) -> Tensor:
    """The reference's quadrant ssim.

    Args:
        x, y: :math:`(B, 4)` means of pred and gt per quadrant.
        sums: :math:`(B, 3, 4)` sums of ``dx²``, ``dy²``, ``dx dy`` per quadrant.
        count: :math:`(B, 4)` pixels per quadrant.

    Returns:
        :math:`(B, 4)` float64 scores (0 for an empty quadrant).
    """
    denominator = count - 1 + EPS
    sigma_x, sigma_y, sigma_xy = sums[:, 0] / denominator, sums[:, 1] / denominator, sums[:, 2] / denominator
    alpha = 4 * x * y * sigma_xy
    beta = (x**2 + y**2) * (sigma_x + sigma_y)
    score = torch.where(alpha != 0, alpha / (beta + EPS), (beta == 0).to(alpha.dtype))
    return torch.where(count > 0, score, torch.zeros_like(score))


class _Stats(NamedTuple):
    """Per-image statistics the S-measure needs; quadrant tensors are :math:`(B, 4)`, the rest :math:`(B,)`."""

    x: Tensor  # quadrant means of pred
    y: Tensor  # quadrant means of gt
    moments: Tensor  # (B, 3, 4): sums of dx², dy², dx·dy per quadrant
    fg_mean: Tensor  # mean(pred[gt])
    fg_dev: Tensor  # sum of (pred - fg_mean)² over gt
    bg_mean: Tensor  # mean((1 - pred)[~gt])
    bg_dev: Tensor  # sum of ((1 - pred) - bg_mean)² over ~gt
    pred_sum: Tensor  # sum of pred


def _stats_uint8(batch: SegBatch, top: Tensor, left: Tensor, counts: Tensor) -> _Stats:
    """Statistics of uint8 predictions from one (image, quadrant, gt, level) histogram.

    Each level's value is the reference's float64 pixel value bit for bit, so every per-pixel term
    (``p - x``, ``(p - x)(g - y)``, ...) is the reference's, summed with multiplicities.

    Args:
        batch: equal-size uint8 images; top: :math:`(B, H)`, left: :math:`(B, W)` bool quadrant masks;
        counts: :math:`(B, 4)` pixels per quadrant.
    """
    b = top.shape[0]
    # bin id = level + 256 gt + 512 right + 1024 bottom + 2048 image, built in place in int32
    ids = batch.pred_raw.to(torch.int32)
    ids.add_(batch.gt.view(torch.uint8), alpha=NUM_LEVELS)
    image_offset = torch.arange(b, device=ids.device, dtype=torch.int32)[:, None] * (8 * NUM_LEVELS)
    ids.add_(((~top).to(torch.int32) * (4 * NUM_LEVELS) + image_offset)[:, :, None])
    ids.add_(((~left).to(torch.int32) * (2 * NUM_LEVELS))[:, None, :])
    hist = bincount_fixed(ids.reshape(-1), b * 8 * NUM_LEVELS).reshape(b, 4, 2, NUM_LEVELS).double()  # no sync
    values = level_values(hist.sum(dim=(1, 2))[:, None], batch.normalize)[:, None, None, :]  # (B, 1, 1, L)
    present = hist.sum(dim=2) > 0  # (B, 4, L)
    low = torch.where(present, values[:, :, 0], torch.full_like(present, 2.0, dtype=torch.float64)).amin(dim=2)
    low = torch.where(counts > 0, low, torch.zeros_like(low))  # shift: the smallest value present (exact mean
    count_safe = counts.clamp(min=1).double()  # of a constant quadrant)
    x = low + (hist * (values - low[:, :, None, None])).sum(dim=(2, 3)) / count_safe
    fg_count = hist[:, :, 1].sum(dim=2)
    y = fg_count / count_safe
    dx = values - x[:, :, None, None]  # (B, 4, 1, L)
    dy = torch.stack([0 - y, 1 - y], dim=2)[..., None]  # (B, 4, 2, 1)
    moments = torch.stack([(hist * dx**2).sum(dim=(2, 3)), (hist * dy**2).sum(dim=(2, 3)),
                           (hist * dx * dy).sum(dim=(2, 3))], dim=1)
    per_class = hist.sum(dim=1)  # (B, 2, L)
    fg_total, bg_total = per_class[:, 1].sum(dim=1), per_class[:, 0].sum(dim=1)
    level = values[:, 0, 0]
    fg_mean = (per_class[:, 1] * level).sum(dim=1) / fg_total.clamp(min=1)
    bg_mean = (per_class[:, 0] * (1 - level)).sum(dim=1) / bg_total.clamp(min=1)
    fg_dev = (per_class[:, 1] * (level - fg_mean[:, None]) ** 2).sum(dim=1)
    bg_dev = (per_class[:, 0] * ((1 - level) - bg_mean[:, None]) ** 2).sum(dim=1)
    pred_sum = (per_class.sum(dim=1) * level).sum(dim=1)
    return _Stats(x, y, moments, fg_mean, fg_dev, bg_mean, bg_dev, pred_sum)


def _stats_float(pred: Tensor, gt: Tensor, top: Tensor, left: Tensor, cy: Tensor, cx: Tensor,
                 counts: Tensor) -> _Stats:
    """Statistics of float predictions :math:`(B, H, W)` by masked quadrant sums (two passes)."""
    b, h, w = gt.shape
    gt_values = gt.double()
    count_safe = counts.clamp(min=1).double()
    fg, bg = gt.sum(dim=(-2, -1)), gt.numel() // b - gt.sum(dim=(-2, -1))
    # pass 1: quadrant means, each quadrant shifted by its top-left pixel (clamped when the quadrant is empty)
    corner_rows = torch.stack([torch.zeros_like(cy), torch.zeros_like(cy), cy, cy], dim=1).clamp(max=h - 1)
    corner_cols = torch.stack([torch.zeros_like(cx), cx, torch.zeros_like(cx), cx], dim=1).clamp(max=w - 1)
    shift = pred.reshape(b, -1).gather(1, corner_rows * w + corner_cols)
    shifted = pred - _quadrant_map(shift, top, left)
    fg_count = _quadrant_sums(gt_values, top, left)  # exact integers
    x = shift + _quadrant_sums(shifted, top, left) / count_safe  # a constant quadrant's mean is exact
    y = fg_count / count_safe
    fg_pred_sum = (_quadrant_sums(shifted * gt_values, top, left) + shift * fg_count).sum(dim=1)
    pred_sum = pred.sum(dim=(-2, -1))
    fg_mean = fg_pred_sum / fg.clamp(min=1).double()  # mean(pred[gt])
    bg_mean = (bg.double() - (pred_sum - fg_pred_sum)) / bg.clamp(min=1).double()  # mean((1-pred)[~gt])
    # pass 2: deviations from the quadrant means
    dx = pred - _quadrant_map(x, top, left)
    dx_squared = dx * dx
    dx_sum = _quadrant_sums(dx, top, left)
    dx_squared_sum = _quadrant_sums(dx_squared, top, left)
    fg_dx_sum = _quadrant_sums(dx * gt_values, top, left)
    fg_dx_squared_sum = _quadrant_sums(dx_squared * gt_values, top, left)
    # gt is binary: sum (g - y)^2 = n_fg (1-y)^2 + n_bg y^2; sum dx (g - y) = sum_fg dx - y sum dx
    moments = torch.stack([dx_squared_sum, fg_count * (1 - y) ** 2 + (counts - fg_count) * y**2,
                           fg_dx_sum - y * dx_sum], dim=1)

    # object deviations: sum over a part of (dx + x_q - m)^2 = sum dx^2 + 2 (x_q - m) sum dx + n (x_q - m)^2
    def deviation(squares: Tensor, linear: Tensor, number: Tensor, center: Tensor) -> Tensor:
        offset = x - center[:, None]
        return (squares + 2 * offset * linear + number * offset**2).sum(dim=1).clamp(min=0)

    fg_dev = deviation(fg_dx_squared_sum, fg_dx_sum, fg_count, fg_mean)
    bg_dev = deviation(dx_squared_sum - fg_dx_squared_sum, dx_sum - fg_dx_sum, counts - fg_count, 1 - bg_mean)
    return _Stats(x, y, moments, fg_mean, fg_dev, bg_mean, bg_dev, pred_sum)


def _s_measure_per_image(batch: SegBatch, alpha: float) -> Tensor:
    """Per-image S-measure of an equal-size batch.

    Args:
        batch: equal-size images (pred in [0, 1] after the optional stretch, gt bool).
        alpha: weight of the object score.

    Returns:
        :math:`(B,)` float64.
    """
    gt = batch.gt
    _b, h, w = gt.shape
    area = h * w
    rows = torch.arange(h, device=gt.device)
    cols = torch.arange(w, device=gt.device)
    fg_per_row = gt.sum(dim=2)
    fg = fg_per_row.sum(dim=1)
    bg = area - fg
    fg_safe = fg.clamp(min=1).double()
    gt_mean = fg.double() / area

    # centroid: cy, cx = np.argwhere(gt).mean(axis=0).round(); cy, cx = int(cy) + 1, int(cx) + 1
    cy = torch.round((fg_per_row * rows).sum(dim=1).double() / fg_safe).long() + 1
    cx = torch.round((gt.sum(dim=1) * cols).sum(dim=1).double() / fg_safe).long() + 1
    top = rows[None] < cy[:, None]
    left = cols[None] < cx[:, None]
    counts = torch.stack([cy * cx, cy * (w - cx), (h - cy) * cx, (h - cy) * (w - cx)], dim=1)
    # w_lt = cx*cy/area, w_rt = cy*(w-cx)/area, w_lb = (h-cy)*cx/area, w_rb = 1 - w_lt - w_rt - w_lb
    weights = counts[:, :3].double() / area
    weights = torch.cat([weights, (1 - weights[:, 0] - weights[:, 1] - weights[:, 2])[:, None]], dim=1)
    if batch.is_uint8:
        stats = _stats_uint8(batch, top, left, counts)
    else:
        stats = _stats_float(batch.pred.double(), gt, top, left, cy, cx, counts)

    quadrant_scores = _ssim(stats.x, stats.y, stats.moments, counts) * weights
    region_score = quadrant_scores[:, 0] + quadrant_scores[:, 1] + quadrant_scores[:, 2] + quadrant_scores[:, 3]
    object_score = (_s_object(stats.fg_mean, stats.fg_dev, fg) * gt_mean
                    + _s_object(stats.bg_mean, stats.bg_dev, bg) * (1 - gt_mean))
    score = torch.clamp(object_score * alpha + region_score * (1 - alpha), min=0.0)
    pred_mean = stats.pred_sum / area
    score = torch.where(fg == 0, 1 - pred_mean, score)
    return torch.where(fg == area, pred_mean, score)


def _check_s_args(alpha: float, empty_gt: str) -> None:
    check_number("alpha", alpha, low=0.0, high=1.0)
    check_option("empty_gt", empty_gt, EmptyGt)


def _s_measure_update(pred: InputMaps, gt: InputMaps, alpha: float, normalize: bool,
                      validate_args: bool) -> tuple[Tensor, Tensor]:
    """Sum of per-image S-measures and the number of images of a batch: ``(float64 scalar, int64 scalar)``."""
    batches = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
    return sum_per_image(lambda batch: _s_measure_per_image(batch, alpha), batches)


def _s_measure_compute(total: Tensor, count: Tensor) -> Tensor:
    """Dataset S-measure: the mean of per-image values."""
    return mean_over_images(total, count)


def s_measure(
    pred: InputMaps, gt: InputMaps, alpha: float = 0.5, *, normalize: bool = False,
    empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    r"""Structure measure :math:`\max(0, \alpha S_o + (1 - \alpha) S_r)` per image, averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        alpha: weight of the object score, in [0, 1].
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: accepted for uniformity; both policies give the reference's ``1 - mean(pred)`` /
            ``mean(pred)`` for an all-background / all-foreground gt, which already is an agreement score.
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor (never NaN; see the module notes for the reference's NaN case).

    Examples:
        >>> pred = torch.tensor([[0.9, 0.8, 0.1], [0.2, 0.6, 0.0]])
        >>> gt = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
        >>> s_measure(pred, gt)
        tensor(0.7346, dtype=torch.float64)
    """
    _check_s_args(alpha, empty_gt)
    return _s_measure_compute(*_s_measure_update(pred, gt, alpha, normalize, validate_args))
