"""``ConnectivityError``: the DIM matting connectivity error as a ``Metric`` (sum of per-image values + count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_number
from nobg_metrics.functional.matting.connectivity import _connectivity_update
from nobg_metrics.metrics.per_image import PerImageMattingMean
from nobg_metrics.ops.host_reads import Engine, engine_option

__all__ = ["ConnectivityError"]


class ConnectivityError(PerImageMattingMean):
    """Connectivity error per image, raw (papers print /1000), averaged; see
    :func:`nobg_metrics.functional.connectivity_error`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``single(pred) / 255``) or bool; or a list of such tensors, which may differ in
      size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool (soft values, not
      binarised).
    - ``trimap`` (:class:`~torch.Tensor`, optional): the same layout, uint8 {0, 128, 255} or float {0, 0.5, 1}; only its
      unknown region (128 / 0.5) is scored. ``None``: the whole image.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``connectivity_error`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image
      connectivity error, raw (papers print it / 1000), >= 0 (lower is better).

    Args:
        step: the threshold step of the sweep ``0:step:1`` (DIM: 0.1).
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        allow_host_sync: deprecated alias of ``engine``: ``True`` is ``engine="data_sized"``, ``False`` ``"auto"``.
        validate_args: run the checks that force a device sync.
        engine: the labelling's form: ``"data_sized"`` sizes its lists by the data (faster off CPU; the host reads
            counts back), ``"fixed"`` uses fixed sizes and no sync; ``"auto"`` (default) is ``"data_sized"`` on CPU
            and ``"fixed"`` elsewhere. Same values. See :func:`nobg_metrics.functional.connectivity_error`.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(6, 8); gt[1:5, 1:6] = 1.0
        >>> pred = gt.clone(); pred[0, 7] = 1.0
        >>> metric = ConnectivityError()
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """

    _state_prefix = "conn"

    def __init__(self, *, step: float = 0.1, clamp_to_trimap: bool = False, allow_host_sync: bool | None = None,
                 validate_args: bool = True, engine: Engine = "auto", **kwargs: Any) -> None:
        engine = engine_option(engine, allow_host_sync, "ConnectivityError")
        check_number("step", step, low=0.0, low_open=True, high=1.0)
        super().__init__(clamp_to_trimap=clamp_to_trimap, options={"step": float(step)}, validate_args=validate_args,
                         **kwargs)
        self.step = step
        self.engine: Engine = engine

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> tuple[Tensor, Tensor]:
        return _connectivity_update(pred, gt, trimap, self.step, self.clamp_to_trimap, self.validate_args,
                                    self.engine)
