"""Mean absolute error between a prediction and its gt mask (PySODMetrics ``MAE``).

Reference (PySODMetrics 1.6.2 ``MAE.cal_mae``): ``mae = np.mean(np.abs(pred - gt))`` per image on the
prepared data (``pred / 255`` with the optional min-max stretch, ``gt > 128``), then the mean over images.
For uint8 predictions the per-image value comes from exact integer sums (all levels, foreground levels,
foreground count): the reference's level map is affine in the level, so only the final division rounds.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.ops import uint8_stats
from nobg_metrics.ops.arith import divide

__all__ = ["mae"]


def _mae_per_image(batch: SegBatch) -> Tensor:
    """Per-image mean absolute error.

    Args:
        batch: equal-size images.

    Returns:
        :math:`(B,)` float64.
    """
    if batch.is_uint8:
        # sum_bg f(v) + sum_fg (1 - f(v)), f(v) = v / 255 or, stretched, (v - min) / (max - min):
        # exact integer sums, one float64 division per image
        mask = uint8_stats.foreground(batch.histogram_gt)
        low, high = (level.long() for level in uint8_stats.level_range(batch.pred_raw))
        total, masked = uint8_stats.level_sums(batch.pred_raw, mask)
        count = uint8_stats.count(mask)
        sum_all, sum_fg = divide(total.double(), 255), divide(masked.double(), 255)
        if batch.normalize:
            span = high - low
            divisor = span.clamp_min(1).double()
            sum_all = torch.where(span > 0, (total - low * batch.num_pixels).double() / divisor, sum_all)
            sum_fg = torch.where(span > 0, (masked - low * count).double() / divisor, sum_fg)
        return (sum_all - 2 * sum_fg + count.double()) / batch.num_pixels
    pred = batch.pred
    return (pred - batch.gt.to(pred.dtype)).abs().sum(dim=(-2, -1), dtype=torch.float64) / batch.num_pixels


def _mae_update(pred: InputMaps, gt: InputMaps, normalize: bool, validate_args: bool) -> tuple[Tensor, Tensor]:
    """Sum of per-image MAE and the number of images of a batch: ``(float64 scalar, int64 scalar)``."""
    return sum_per_image(_mae_per_image, prepare_segmentation(pred, gt, normalize=normalize,
                                                              validate_args=validate_args))


def _mae_compute(total: Tensor, count: Tensor) -> Tensor:
    """Dataset MAE: the mean of per-image values."""
    return mean_over_images(total, count)


def mae(pred: InputMaps, gt: InputMaps, *, normalize: bool = False, validate_args: bool = True) -> Tensor:
    r"""Mean absolute error :math:`\frac{1}{N}\sum |pred - gt|` per image, averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor (lower is better).

    Examples:
        >>> mae(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.2750, dtype=torch.float64)
    """
    return _mae_compute(*_mae_update(pred, gt, normalize, validate_args))
