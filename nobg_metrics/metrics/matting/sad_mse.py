"""``SAD`` and ``MSE``: one update adds both per-image sums (one difference map), so in a collection the two share
one compute group. States: ``sad_sum``, ``mse_sum`` (float64), ``matte_count`` (int64) and the options'
fingerprint. The per-image-mean matting base (gradient, connectivity) is :mod:`nobg_metrics.metrics.per_image`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.matting.sad_mse import matting_update, mse_compute, sad_compute, sad_mse_per_image
from nobg_metrics.metrics.base import NobgMetric, Statistics

__all__ = ["MSE", "SAD"]


class _PixelErrorMetric(NobgMetric):
    """SAD and MSE's shared statistic.

    Args:
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        validate_args: run the checks that force a device sync.
    """

    higher_is_better = False
    plot_upper_bound: float | None = None

    def __init__(self, *, clamp_to_trimap: bool = False, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        self.clamp_to_trimap = clamp_to_trimap
        self._add_fingerprint({"clamp_to_trimap": clamp_to_trimap})
        self._add_sum("sad_sum")
        self._add_sum("mse_sum")
        self._add_count("matte_count")

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add a batch of mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists, with an optional
        trimap."""
        self._accumulate(self._batch_statistics(pred, gt, trimap))

    def _statistics(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> Statistics:
        totals, count = matting_update(sad_mse_per_image, pred, gt, trimap, self.clamp_to_trimap,
                                        self.validate_args)
        return {"sad_sum": totals[0], "mse_sum": totals[1], "matte_count": count}


class SAD(_PixelErrorMetric):
    """Sum of absolute differences per image, raw (papers report /1000); see :func:`nobg_metrics.functional.sad`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``single(pred) / 255``) or bool; or a list of such tensors, which may differ in
      size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool (soft values, not
      binarised).
    - ``trimap`` (:class:`~torch.Tensor`, optional): the same layout, uint8 {0, 128, 255} or float {0, 0.5, 1}; only its
      unknown region (128 / 0.5) is scored. ``None``: the whole image.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``sad`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image sum of absolute
      differences, raw (papers print it / 1000), >= 0 (lower is better).

    Args:
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Examples:
        >>> import torch
        >>> metric = SAD()
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(1.1000, dtype=torch.float64)
    """

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: mean of per-image SAD, scalar float64."""
        return sad_compute(torch.stack([states["sad_sum"], states["mse_sum"]]), states["matte_count"])


class MSE(_PixelErrorMetric):
    """Mean squared error per image over the region, raw (papers print x1e3); see
    :func:`nobg_metrics.functional.mse_metric`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``single(pred) / 255``) or bool; or a list of such tensors, which may differ in
      size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool (soft values, not
      binarised).
    - ``trimap`` (:class:`~torch.Tensor`, optional): the same layout, uint8 {0, 128, 255} or float {0, 0.5, 1}; only its
      unknown region (128 / 0.5) is scored. ``None``: the whole image.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``mse`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image mean squared error over
      the region, raw (papers print it x 1e3), in [0, 1] (lower is better).

    Args:
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Examples:
        >>> import torch
        >>> MSE()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        tensor(0.1125, dtype=torch.float64)
    """

    plot_upper_bound = 1.0

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: mean of per-image MSE, scalar float64."""
        return mse_compute(torch.stack([states["sad_sum"], states["mse_sum"]]), states["matte_count"])
