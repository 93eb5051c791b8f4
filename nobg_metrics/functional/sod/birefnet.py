"""BiRefNet's MSE column: the MSE of the stretched prediction against the *binarised* gt.

Reference (ZhengPeng7/BiRefNet ``evaluation/metrics.py``), per image::

    gt = gt > 128;  pred = pred / 255;  if pred.max() != pred.min(): pred = (pred - min) / (max - min)
    MSE = np.mean((pred - gt) ** 2)                       # dataset: mean over images

Its MAE is PySODMetrics' MAE (the same reading, :func:`nobg_metrics.functional.mae` with ``normalize=True``); only
the MSE needs the stretched prediction and the binarised gt as a matte pair, which :func:`birefnet_inputs` forms and
:func:`nobg_metrics.functional.mse_metric`'s statistic scores (whole image, float64 sums).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.matting.sad_mse import matting_update, mse_compute, sad_mse_per_image
from nobg_metrics.ops.arith import divide
from nobg_metrics.ops.levels import GT_CUT

__all__ = ["binarised_gt_mse", "birefnet_inputs"]


def _birefnet_pair(pred: Tensor, gt: Tensor, index: str) -> tuple[Tensor, Tensor]:
    if pred.dtype != torch.uint8 or gt.dtype != torch.uint8:
        raise TypeError(f"`pred{index}` and `gt{index}` must be uint8 maps (BiRefNet reads PNG bytes); got "
                        f"{pred.dtype} and {gt.dtype}")
    values = divide(pred.double(), 255)
    low = values.amin(dim=(-2, -1), keepdim=True)
    high = values.amax(dim=(-2, -1), keepdim=True)
    stretched = torch.where(high != low, (values - low) / (high - low), values)
    return stretched, (gt > GT_CUT).double()


def birefnet_inputs(pred: InputMaps, gt: InputMaps) -> tuple[InputMaps, InputMaps]:
    """``(stretched float64 pred, float64 {0, 1} gt)`` of uint8 maps, as BiRefNet's ``_prepare_data`` forms them
    (float64 arithmetic: the same IEEE operations as numpy, so the same bits); lists map image by image.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` uint8, or a list of such tensors.
        gt: the same layout, uint8 (foreground ``> 128``).

    Returns:
        the pair in the same layout, float64.

    Examples:
        >>> p, g = birefnet_inputs(torch.tensor([[[51, 102]]], dtype=torch.uint8),
        ...                        torch.tensor([[[0, 200]]], dtype=torch.uint8))
        >>> p.tolist(), g.tolist()
        ([[[0.0, 1.0]]], [[[0.0, 1.0]]])
    """
    if isinstance(pred, Tensor) and isinstance(gt, Tensor):
        return _birefnet_pair(pred, gt, "")
    if isinstance(pred, Tensor) or isinstance(gt, Tensor) or len(pred) != len(gt):
        raise ValueError("`pred` and `gt` must both be tensors or lists of the same length")
    pairs = [_birefnet_pair(p, g, f"[{i}]") for i, (p, g) in enumerate(zip(pred, gt))]
    return [p for p, _ in pairs], [g for _, g in pairs]


def _binarised_gt_mse_update(pred: InputMaps, gt: InputMaps, validate_args: bool) -> tuple[Tensor, Tensor]:
    """``((SAD, MSE) sums over images, image count)`` of BiRefNet's pair (the MSE class's statistic)."""
    return matting_update(sad_mse_per_image, *birefnet_inputs(pred, gt), None, False, validate_args)


def binarised_gt_mse(pred: InputMaps, gt: InputMaps, *, validate_args: bool = True) -> Tensor:
    """BiRefNet's MSE: ``mean((stretch(pred / 255) - (gt > 128))²)`` per image, averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` uint8, or a list.
        gt: the same layout, uint8.
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 (lower is better).

    Examples:
        >>> binarised_gt_mse(torch.tensor([[[51, 102]]], dtype=torch.uint8),
        ...                  torch.tensor([[[200, 200]]], dtype=torch.uint8))
        tensor(0.5000, dtype=torch.float64)
    """
    return mse_compute(*_binarised_gt_mse_update(pred, gt, validate_args))
