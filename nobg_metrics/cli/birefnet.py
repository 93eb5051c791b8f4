"""BiRefNet's reading for the one column no collection metric reads that way: its MSE.

BiRefNet ``evaluation/metrics.py`` (ZhengPeng7/BiRefNet), per image::

    gt = gt > 128;  pred = pred / 255;  if pred.max() != pred.min(): pred = (pred - min) / (max - min)
    MSE = np.mean((pred - gt) ** 2)                       # against the *binarised* gt; dataset: mean over images

Its MAE is PySODMetrics' MAE (the same reading), and every other column reads uint8 maps itself; only the MSE
needs the stretched prediction and the binarised gt as a matte pair, so :class:`BinarisedGtMSE` prepares them
and feeds :class:`~nobg_metrics.metrics.matting.MSE` (whole image, float64 sums).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.metrics.matting import MSE
from nobg_metrics.ops.arith import divide
from nobg_metrics.ops.levels import GT_CUT


def birefnet_inputs(pred: Tensor, gt: Tensor) -> tuple[Tensor, Tensor]:
    """``(stretched float64 pred, float64 {0, 1} gt)`` of :math:`(B, H, W)` uint8 maps, as BiRefNet's
    ``_prepare_data`` (float64 arithmetic: the same IEEE operations as numpy, so the same bits).

    Example:
        >>> p, g = birefnet_inputs(torch.tensor([[[51, 102]]], dtype=torch.uint8), torch.tensor([[[0, 200]]], dtype=torch.uint8))
        >>> p.tolist(), g.tolist()
        ([[[0.0, 1.0]]], [[[0.0, 1.0]]])
    """
    values = divide(pred.double(), 255)
    low = values.amin(dim=(-2, -1), keepdim=True)
    high = values.amax(dim=(-2, -1), keepdim=True)
    stretched = torch.where(high != low, (values - low) / (high - low), values)
    binary = (gt > GT_CUT if gt.dtype == torch.uint8 else gt > 0.5).double()
    return stretched, binary


class BinarisedGtMSE(MSE):
    """BiRefNet's MSE column: :class:`~nobg_metrics.metrics.matting.MSE` of the stretched prediction against the
    binarised gt (:func:`birefnet_inputs`), uint8 :math:`(B, H, W)` inputs.

    Example:
        >>> metric = BinarisedGtMSE()
        >>> metric.update(torch.tensor([[[51, 102]]], dtype=torch.uint8), torch.tensor([[[200, 200]]], dtype=torch.uint8))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    def update(self, pred: Tensor, gt: Tensor, trimap: Tensor | None = None) -> None:
        """Add a batch of uint8 maps (the trimap is not part of BiRefNet's protocol and is ignored)."""
        super().update(*birefnet_inputs(pred, gt))
