"""``BinarisedGtMSE``: BiRefNet's MSE column as a ``Metric`` (the states of
:class:`~nobg_metrics.metrics.matting.sad_mse.MSE`)."""

from __future__ import annotations

from nobg_metrics._inputs import InputMaps, prepare
from nobg_metrics.functional.sod.birefnet import birefnet_inputs
from nobg_metrics.metrics.base import Statistics
from nobg_metrics.metrics.matting.sad_mse import MSE

__all__ = ["BinarisedGtMSE"]


class BinarisedGtMSE(MSE):
    """BiRefNet's MSE: :class:`~nobg_metrics.metrics.matting.sad_mse.MSE` of the stretched prediction against the
    binarised gt (:func:`nobg_metrics.functional.sod.birefnet.binarised_gt_mse`).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)` uint8 (read as
      ``pred / 255``, then min-max stretched per image); or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``, uint8 (foreground ``> 128``).
    - ``trimap`` (:class:`~torch.Tensor`, optional): accepted for a matting collection, checked and not scored (not
      part of BiRefNet's protocol).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``birefnet_mse`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image MSE, in [0, 1]
      (lower is better).

    Args:
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Examples:
        >>> import torch
        >>> metric = BinarisedGtMSE()
        >>> pred, gt = torch.tensor([[[51, 102]]], dtype=torch.uint8), torch.tensor([[[200, 200]]], dtype=torch.uint8)
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    def _statistics(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> Statistics:
        if trimap is not None:  # a matting collection's trimap: checked as every member checks it, then not scored
            prepare(pred, gt, trimap=trimap, validate_args=self.validate_args)
        return super()._statistics(*birefnet_inputs(pred, gt))
