"""Mean absolute error between a prediction and its gt mask (PySODMetrics ``MAE``).

Reference (PySODMetrics 1.6.2 ``MAE.cal_mae``): ``mae = np.mean(np.abs(pred - gt))`` per image on the
prepared data (``pred / 255`` with the optional min-max stretch, ``gt > 128``), then the mean over images.
For uint8 predictions the per-image sum is taken over a 256-level joint histogram whose level values
are the reference's per-pixel values bit for bit; only the summation order differs.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, SegBatch, prepare_segmentation
from nobg_metrics.ops.histogram import joint_histogram, level_values


def _mae_per_image(batch: SegBatch) -> Tensor:
    """Per-image mean absolute error.

    Args:
        batch: equal-size images.

    Returns:
        :math:`(B,)` float64.
    """
    if batch.is_uint8:
        hist = joint_histogram(batch.pred_raw, batch.histogram_gt).double()
        values = level_values(hist, batch.normalize)
        error = (hist[:, 0] * values).sum(dim=1) + (hist[:, 1] * (1 - values)).sum(dim=1)
        return error / batch.num_pixels
    pred = batch.pred
    return (pred - batch.gt.to(pred.dtype)).abs().sum(dim=(-2, -1), dtype=torch.float64) / batch.num_pixels


def _mae_update(pred: InputMaps, gt: InputMaps, normalize: bool, validate_args: bool) -> tuple[Tensor, Tensor]:
    """Sum of per-image MAE and the number of images of a batch: ``(float64 scalar, int64 scalar)``."""
    totals, count = [], 0
    for batch in prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args):
        totals.append(_mae_per_image(batch).sum())
        count += batch.gt.shape[0]
    total = torch.stack(totals).sum()
    return total, torch.tensor(count, dtype=torch.int64, device=total.device)


def _mae_compute(total: Tensor, count: Tensor) -> Tensor:
    """Dataset MAE: the mean of per-image values."""
    return total / count


def mae(pred: InputMaps, gt: InputMaps, *, normalize: bool = False, validate_args: bool = True) -> Tensor:
    r"""Mean absolute error :math:`\frac{1}{N}\sum |pred - gt|` per image, averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor (lower is better).

    Example:
        >>> mae(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.2750, dtype=torch.float64)
    """
    return _mae_compute(*_mae_update(pred, gt, normalize, validate_args))
