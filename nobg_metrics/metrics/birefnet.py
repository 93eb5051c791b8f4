"""``BinarisedGtMSE``: BiRefNet's MSE column as a ``Metric`` (the states of :class:`~nobg_metrics.metrics.matting.MSE`)."""

from __future__ import annotations

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.birefnet import birefnet_inputs
from nobg_metrics.metrics.base import Statistics
from nobg_metrics.metrics.matting import MSE

__all__ = ["BinarisedGtMSE"]


class BinarisedGtMSE(MSE):
    """BiRefNet's MSE: :class:`~nobg_metrics.metrics.matting.MSE` of the stretched prediction against the
    binarised gt (:func:`nobg_metrics.functional.birefnet.binarised_gt_mse`).

    As input to ``update``:
        - ``pred``: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` uint8 or a list of them;
        - ``gt``: the same layout, uint8 (foreground ``> 128``);
        - ``trimap``: accepted for a matting collection and ignored (not part of BiRefNet's protocol).

    As output of ``compute``: a scalar float64, the mean per-image MSE.

    Example:
        >>> import torch
        >>> metric = BinarisedGtMSE()
        >>> metric.update(torch.tensor([[[51, 102]]], dtype=torch.uint8), torch.tensor([[[200, 200]]], dtype=torch.uint8))
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    def _statistics(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> Statistics:
        return super()._statistics(*birefnet_inputs(pred, gt))
