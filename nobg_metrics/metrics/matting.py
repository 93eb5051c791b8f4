"""Matting ``Metric`` classes: the per-image-mean base (gradient, connectivity) and ``SAD`` / ``MSE``, which share
one statistic (sums of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.matting import _matting_update, _sad_mse_per_image
from nobg_metrics.metrics.base import NobgMetric


class PerImageMattingMetric(NobgMetric):
    """A matting metric whose dataset value is the mean of a per-image value over a trimap region.

    Args:
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        validate_args: run the checks that force a device sync.
    """

    higher_is_better = False
    plot_upper_bound = None
    _state_prefix: str

    def __init__(self, *, clamp_to_trimap: bool = False, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        self.clamp_to_trimap = clamp_to_trimap
        self._add_sum(f"{self._state_prefix}_sum")
        self._add_count(f"{self._state_prefix}_count")

    @staticmethod
    def _per_image(batch):  # pragma: no cover - defined by subclasses
        raise NotImplementedError

    def _statistics(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None) -> tuple[Tensor, Tensor]:
        """``(sum of per-image values, image count)`` of a batch; subclasses with options override it."""
        return _matting_update(self._per_image, pred, gt, trimap, self.clamp_to_trimap, self.validate_args)

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add a batch of mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists, with an optional trimap."""
        total, count = self._statistics(pred, gt, trimap)
        setattr(self, f"{self._state_prefix}_sum", getattr(self, f"{self._state_prefix}_sum") + total)
        setattr(self, f"{self._state_prefix}_count", getattr(self, f"{self._state_prefix}_count") + count)

    def compute(self) -> Tensor:
        """The dataset value: mean of per-image values, scalar float64."""
        return getattr(self, f"{self._state_prefix}_sum") / getattr(self, f"{self._state_prefix}_count")


class _PixelErrorMetric(NobgMetric):
    """SAD and MSE: one update adds both per-image sums (one difference map), so in a collection the two
    share one compute group. States: ``sad_sum``, ``mse_sum`` (float64), ``matte_count`` (int64)."""

    higher_is_better = False
    plot_upper_bound = None

    def __init__(self, *, clamp_to_trimap: bool = False, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        self.clamp_to_trimap = clamp_to_trimap
        self._add_sum("sad_sum")
        self._add_sum("mse_sum")
        self._add_count("matte_count")

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add a batch of mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists, with an optional trimap."""
        totals, count = _matting_update(_sad_mse_per_image, pred, gt, trimap, self.clamp_to_trimap,
                                        self.validate_args)
        self.sad_sum = self.sad_sum + totals[0]
        self.mse_sum = self.mse_sum + totals[1]
        self.matte_count = self.matte_count + count


class SAD(_PixelErrorMetric):
    """Sum of absolute differences per image, raw (papers report /1000); see :func:`nobg_metrics.functional.sad`.

    Example:
        >>> import torch
        >>> metric = SAD()
        >>> metric.update(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
        >>> metric.compute()
        tensor(1.1000, dtype=torch.float64)
    """

    def compute(self) -> Tensor:
        """The dataset value: mean of per-image SAD, scalar float64."""
        return self.sad_sum / self.matte_count


class MSE(_PixelErrorMetric):
    """Mean squared error per image over the region, raw (papers print x1e3); see :func:`nobg_metrics.functional.mse_metric`."""

    plot_upper_bound = 1.0

    def compute(self) -> Tensor:
        """The dataset value: mean of per-image MSE, scalar float64."""
        return self.mse_sum / self.matte_count
