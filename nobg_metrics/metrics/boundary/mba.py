"""``MBA``: mean boundary accuracy (CascadePSP; BiRefNet's ``mBA``) as a ``Metric``.

States (:class:`~nobg_metrics.metrics.per_image.PerImageMean`): ``mba_sum`` (float64 sum of per-image
boundary accuracies), ``mba_count`` (images) and the options' fingerprint. The maths is
:mod:`nobg_metrics.functional.boundary.mba`.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.boundary.mba import _check_mba_args, _mba_update
from nobg_metrics.metrics.per_image import PerImageMean

__all__ = ["MBA"]


class MBA(PerImageMean):
    """Mean boundary accuracy over 5 elliptic gt bands of radii ``1 + int(((H + W) / 300 - 1) / 5 * i)``.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``mba`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image boundary accuracy, in
      [0, 1] (NaN with ``empty_gt="reference"`` once an all-background or all-foreground gt was scored).

    Args:
        threshold: ``None`` for the references' rule (uint8 ``pred > 128``, float ``> 0.5``), or a strict
            threshold on the [0, 1] scale.
        normalize: per-image min-max stretch of ``pred`` before binarising (the references do not stretch).
        empty_gt: ``"agreement"`` (pixel agreement over the image) or ``"reference"`` (NaN, as CascadePSP)
            for all-background/all-foreground gts, whose band is empty.
        validate_args: run the checks that force a device sync.

    See :func:`nobg_metrics.functional.boundary.mba.mean_boundary_accuracy`.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 8, 10, dtype=torch.bool)
        >>> gt[0, 2:6, 2:7] = True
        >>> metric = MBA()
        >>> metric.update(gt.float(), gt)
        >>> metric.compute()
        tensor(1., dtype=torch.float64)
    """

    higher_is_better = True
    _state_prefix = "mba"

    def __init__(self, threshold: float | None = None, *, normalize: bool = False,
                 empty_gt: EmptyGt = "agreement", validate_args: bool = True, **kwargs: Any) -> None:
        _check_mba_args(threshold, empty_gt)
        super().__init__(options={"threshold": threshold, "normalize": normalize, "empty_gt": empty_gt},
                         validate_args=validate_args, **kwargs)
        self.threshold, self.normalize, self.empty_gt = threshold, normalize, empty_gt

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps) -> tuple[Tensor, Tensor]:
        return _mba_update(pred, gt, self.threshold, self.normalize, self.empty_gt, self.validate_args)
