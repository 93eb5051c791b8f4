"""``ConnectivityError``: the DIM matting connectivity error as a ``Metric`` (sum of per-image values + count)."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_number
from nobg_metrics.functional.connectivity import _connectivity_update
from nobg_metrics.metrics.base import NobgMetric, mean_of


class ConnectivityError(NobgMetric):
    """Connectivity error per image, raw (papers print /1000), averaged; see
    :func:`nobg_metrics.functional.connectivity_error`.

    Args:
        step: the threshold step of the sweep ``0:step:1`` (DIM: 0.1).
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        validate_args: run the checks that force a device sync.

    Example:
        >>> import torch
        >>> gt = torch.zeros(6, 8); gt[1:5, 1:6] = 1.0
        >>> pred = gt.clone(); pred[0, 7] = 1.0
        >>> metric = ConnectivityError()
        >>> metric.update(pred, gt)
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """

    higher_is_better = False
    plot_upper_bound = None

    def __init__(self, *, step: float = 0.1, clamp_to_trimap: bool = False, validate_args: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        check_number("step", step, low=0.0, low_open=True, high=1.0)
        self.step = step
        self.clamp_to_trimap = clamp_to_trimap
        self._add_sum("conn_sum")
        self._add_count("conn_count")

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists, with an optional trimap."""
        total, count = _connectivity_update(pred, gt, trimap, self.step, self.clamp_to_trimap, self.validate_args)
        self.conn_sum = self.conn_sum + total
        self.conn_count = self.conn_count + count

    def compute(self) -> Tensor:
        """The dataset value: mean of per-image values, scalar float64."""
        return mean_of(self.conn_sum, self.conn_count)
