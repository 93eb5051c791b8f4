"""``HCE``: Human Correction Effort as a ``Metric`` (float64 sum of per-image counts + int64 image count)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional.sod.hce import (
    HceProtocol,
    _check_hce_args,
    _hce_compute,
    _hce_update,
)
from nobg_metrics.metrics.per_image import PerImageMean
from nobg_metrics.ops.host_reads import Engine, engine_option

__all__ = ["HCE"]


class HCE(PerImageMean):
    """Human Correction Effort (DIS5K), the mean of per-image click counts (see :func:`nobg_metrics.functional.hce`).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size. ``protocol="dis"``
      takes uint8 only.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).
    - ``gt_skeleton`` (:class:`~torch.Tensor`, optional): cached gt skeletons (the DIS tool's ``ske/`` images) of the
      same layout as ``gt``, bool or uint8 (``> 128``). ``None``: skeletonized from ``gt``.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``hce`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image click count, >= 0 (lower
      is better).

    Args:
        relax: rounds of the 3×3-cross relaxation (5).
        epsilon: Douglas–Peucker tolerance in pixels (2.0).
        protocol: ``"pysodmetrics"`` (``pred > 0.5``; PySODMetrics 1.6.2 ``HumanCorrectionEffortMeasure``) or
            ``"dis"`` (``pred_u8 > 128``, the DIS authors' tool and BiRefNet's tables; uint8 predictions).
        normalize: PySODMetrics' per-image min-max stretch first (not with ``"dis"``).
        allow_host_sync: deprecated alias of ``engine``: ``True`` is ``engine="data_sized"``, ``False`` ``"auto"``.
        validate_args: run the checks that force a device sync.
        engine: ``"data_sized"`` sizes the work by the data on every device (host reads); ``"fixed"`` runs the
            sync-free path, whose budget check is one read in ``compute()`` (raises ``RuntimeError`` when an image
            exceeded it; docs/hce.md); ``"auto"`` (default) is ``"data_sized"`` on CPU and ``"fixed"`` elsewhere.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(2, 30, 30, dtype=torch.bool); gt[:, 4:26, 4:26] = True
        >>> pred = gt.float(); pred[1, 12:15, 12:15] = 0.0
        >>> metric = HCE()
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(0.5000, dtype=torch.float64)
    """

    higher_is_better = False
    plot_upper_bound = None
    _state_prefix = "hce"

    def __init__(self, *, relax: int = 5, epsilon: float = 2.0, protocol: HceProtocol = "pysodmetrics",
                 normalize: bool = False, allow_host_sync: bool | None = None, validate_args: bool = True,
                 engine: Engine = "auto", **kwargs: Any) -> None:
        engine = engine_option(engine, allow_host_sync, "HCE")
        _check_hce_args(relax, epsilon, protocol, normalize, engine)
        super().__init__(options={"relax": int(relax), "epsilon": float(epsilon), "protocol": protocol,
                                  "normalize": normalize}, validate_args=validate_args, **kwargs)
        self.relax, self.epsilon, self.protocol, self.normalize = relax, epsilon, protocol, normalize
        self.engine: Engine = engine

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps, gt_skeleton: InputMaps | None = None
                        ) -> tuple[Tensor, Tensor]:
        return _hce_update(pred, gt, self.relax, self.epsilon, self.protocol, self.normalize, self.validate_args,
                           gt_skeleton, self.engine)

    def update(self, pred: InputMaps, gt: InputMaps, gt_skeleton: InputMaps | None = None) -> None:
        """Add a batch: ``pred``, ``gt`` (and optional ``gt_skeleton``) of shape :math:`(B, 1, H, W)`,
        :math:`(B, H, W)`, :math:`(H, W)` or lists."""
        self._accumulate(self._batch_statistics(pred, gt, gt_skeleton))

    def _value(self, states: Mapping[str, Any]) -> Tensor:
        """The mean per-image HCE (NaN, with torchmetrics' warning, before any image); raises ``RuntimeError`` if
        the sync-free path's budget was short for an image (its NaN reached the sum; one host read)."""
        return _hce_compute(states[self._sum_state], states[self._count_state])
