"""``GradientError``: the DIM matting gradient error as a ``Metric`` (sum of per-image values + image count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_option
from nobg_metrics.functional.matting.gradient import GradientKernel, _gradient_update
from nobg_metrics.metrics.per_image import PerImageMattingMean
from nobg_metrics.ops.host_reads import Engine

__all__ = ["GradientError"]


class GradientError(PerImageMattingMean):
    """Gradient error per image, raw (papers print /1000), averaged; see :func:`nobg_metrics.functional.gradient_error`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``single(pred) / 255``) or bool; or a list of such tensors, which may differ in
      size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool (soft values, not
      binarised).
    - ``trimap`` (:class:`~torch.Tensor`, optional): the same layout, uint8 {0, 128, 255} or float {0, 0.5, 1}; only its
      unknown region (128 / 0.5) is scored. ``None``: the whole image.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``gradient_error`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image gradient error,
      raw (papers print it / 1000), >= 0 (lower is better).

    Args:
        kernel: ``"gaussian"`` (DIM's gaussgradient, default) or ``"sobel"`` (ZIM's variant).
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        validate_args: run the checks that force a device sync.
        engine: ``"data_sized"`` filters only where the maps vary (host reads), ``"fixed"`` the whole image (no
            host read); ``"auto"`` (default) is ``"data_sized"`` on CPU and ``"fixed"`` elsewhere. Same values.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(8, 10); gt[2:6, 3:8] = 1.0
        >>> metric = GradientError()
        >>> metric.update(gt.roll(1, 1), gt)
        >>> round(float(metric.compute()), 4)
        20.2133
    """

    _state_prefix = "grad"

    def __init__(self, *, kernel: GradientKernel = "gaussian", clamp_to_trimap: bool = False,
                 validate_args: bool = True, engine: Engine = "auto", **kwargs: Any) -> None:
        check_option("kernel", kernel, GradientKernel)
        check_option("engine", engine, Engine)
        super().__init__(clamp_to_trimap=clamp_to_trimap, options={"kernel": kernel}, validate_args=validate_args,
                         **kwargs)
        self.kernel = kernel
        self.engine: Engine = engine

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> tuple[Tensor, Tensor]:
        return _gradient_update(pred, gt, trimap, self.kernel, self.clamp_to_trimap, self.validate_args, self.engine)
