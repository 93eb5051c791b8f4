"""``GradientError``: the DIM matting gradient error as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_option
from nobg_metrics.functional.gradient import GradientKernel, _gradient_update
from nobg_metrics.metrics.base import NobgMetric, mean_of


class GradientError(NobgMetric):
    """Gradient error per image, raw (papers print /1000), averaged; see :func:`nobg_metrics.functional.gradient_error`.

    Args:
        kernel: ``"gaussian"`` (DIM's gaussgradient, default) or ``"sobel"`` (ZIM's variant).
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        validate_args: run the checks that force a device sync.

    Example:
        >>> import torch
        >>> gt = torch.zeros(8, 10); gt[2:6, 3:8] = 1.0
        >>> metric = GradientError()
        >>> metric.update(gt.roll(1, 1), gt)
        >>> round(float(metric.compute()), 4)
        20.2133
    """

    higher_is_better = False
    plot_upper_bound = None

    def __init__(self, *, kernel: GradientKernel = "gaussian", clamp_to_trimap: bool = False,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        check_option("kernel", kernel, GradientKernel)
        self.kernel = kernel
        self.clamp_to_trimap = clamp_to_trimap
        self._add_sum("grad_sum")
        self._add_count("grad_count")

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists, with an optional trimap."""
        total, count = _gradient_update(pred, gt, trimap, self.kernel, self.clamp_to_trimap, self.validate_args)
        self.grad_sum = self.grad_sum + total
        self.grad_count = self.grad_count + count

    def compute(self) -> Tensor:
        """The dataset value: mean of per-image values, scalar float64."""
        return mean_of(self.grad_sum, self.grad_count)
