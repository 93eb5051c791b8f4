"""The context measures as ``Metric`` classes: ``ContextMeasure`` (Cm) and ``CamouflageContextMeasure`` (CCm,
``update(pred, gt, image)``), both :class:`~nobg_metrics.metrics.per_image.PerImageMean` (float64 sum of per-image
values and an int64 image count: ``context_measure_sum`` / ``_count``, ``camouflage_context_measure_sum`` /
``_count``), the states of :func:`nobg_metrics.functional.context_measure` and
:func:`nobg_metrics.functional.sod.context_measure.camouflage_context_measure`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps
from nobg_metrics.functional.sod.ccm_inputs import InputImages
from nobg_metrics.functional.sod.context_measure import (
    _camouflage_context_measure_compute,
    _camouflage_context_measure_update,
    _check_camouflage_args,
    _check_context_measure_args,
    _context_measure_update,
)
from nobg_metrics.metrics.per_image import PerImageMean
from nobg_metrics.ops.host_reads import Engine, engine_option

__all__ = ["CamouflageContextMeasure", "ContextMeasure"]


class ContextMeasure(PerImageMean):
    """Context measure Cm (Wang et al., 2025), the mean of per-image values; see
    :func:`nobg_metrics.functional.context_measure` (the camouflage variant: :class:`CamouflageContextMeasure`).

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``context_measure`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image Cm, in [0, 1].

    Args:
        beta2: β², the weight of the forward inference.
        alpha: the spatial context scale α, in (0, 64].
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background / all-foreground gts.
        validate_args: run the checks that force a device sync.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(12, 16, dtype=torch.bool); gt[3:9, 4:11] = True
        >>> metric = ContextMeasure()
        >>> metric.update(gt.float(), gt)
        >>> round(metric.compute().item(), 4)
        0.3583
    """

    higher_is_better = True
    _state_prefix = "context_measure"

    def __init__(self, beta2: float = 1.0, alpha: float = 6.0, *, normalize: bool = False,
                 empty_gt: EmptyGt = "agreement", validate_args: bool = True, **kwargs: Any) -> None:
        _check_context_measure_args(beta2, alpha, empty_gt)
        super().__init__(options={"beta2": float(beta2), "alpha": float(alpha), "normalize": normalize,
                                  "empty_gt": empty_gt}, validate_args=validate_args, **kwargs)
        self.beta2, self.alpha, self.normalize, self.empty_gt = beta2, alpha, normalize, empty_gt

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps) -> tuple[Tensor, Tensor]:
        return _context_measure_update(pred, gt, self.beta2, self.alpha, self.normalize, self.empty_gt,
                                       self.validate_args)


class CamouflageContextMeasure(PerImageMean):
    """Camouflage context measure CCm (Wang et al., 2025), the mean of per-image values; see
    :func:`nobg_metrics.functional.sod.context_measure.camouflage_context_measure`; ``update(pred, gt, image)``
    also takes
    the RGB images.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`, float in [0, 1],
      uint8 (read as ``pred / 255``) or bool; or a list of such tensors, which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): the same layout as ``pred``; bool, uint8 (foreground ``> 128``) or float in
      [0, 1] (foreground ``> 0.5``).
    - ``image`` (:class:`~torch.Tensor`): the RGB images, :math:`(B, 3, H, W)` or :math:`(3, H, W)` uint8 (a list beside
      list ``pred`` / ``gt``); required (``None`` is a ``ValueError``).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``camouflage_context_measure`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image
      CCm, in [0, 1].

    Args:
        beta2: β², the weight of the forward inference (1.2 for camouflage).
        alpha: the spatial context scale α, in (0, 64].
        gamma: γ, the sharpness of the camouflage degree.
        lambda_spatial: λ, the weight of the patch positions in the 1-NN search.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background / all-foreground gts.
        allow_host_sync: deprecated alias of ``engine``: ``True`` is ``engine="data_sized"``, ``False`` ``"auto"``.
        validate_args: run the checks that force a device sync.
        engine: ``"data_sized"`` runs the 1-NN search on the data-sized patch sets on every device (host reads in
            every update); ``"fixed"`` the sync-free search over every grid position, whose overflow check is one
            read in ``compute()`` (raises ``RuntimeError`` when a query had more near candidates than it
            recomputes); ``"auto"`` (default) is ``"data_sized"`` on CPU and ``"fixed"`` elsewhere.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(40, 40, dtype=torch.bool); gt[10:30, 12:28] = True
        >>> image = torch.full((3, 40, 40), 90, dtype=torch.uint8); image[:, gt] = 100
        >>> metric = CamouflageContextMeasure()
        >>> metric.update(gt.float(), gt, image)
        >>> round(metric.compute().item(), 4)
        0.7182
    """

    higher_is_better = True
    _state_prefix = "camouflage_context_measure"

    def __init__(self, beta2: float = 1.2, alpha: float = 6.0, gamma: float = 8.0, lambda_spatial: float = 20.0, *,
                 normalize: bool = False, empty_gt: EmptyGt = "agreement", allow_host_sync: bool | None = None,
                 validate_args: bool = True, engine: Engine = "auto", **kwargs: Any) -> None:
        engine = engine_option(engine, allow_host_sync, "CamouflageContextMeasure")
        _check_camouflage_args(beta2, alpha, gamma, lambda_spatial, empty_gt, engine)
        super().__init__(options={"beta2": float(beta2), "alpha": float(alpha), "gamma": float(gamma),
                                  "lambda_spatial": float(lambda_spatial), "normalize": normalize,
                                  "empty_gt": empty_gt}, validate_args=validate_args, **kwargs)
        self.beta2, self.alpha, self.gamma, self.lambda_spatial = beta2, alpha, gamma, lambda_spatial
        self.normalize, self.empty_gt = normalize, empty_gt
        self.engine: Engine = engine

    def update(self, pred: InputMaps, gt: InputMaps, image: InputImages | None = None) -> None:
        """Add a batch: ``pred``, ``gt`` as every segmentation metric takes them and the RGB ``image``
        :math:`(B, 3, H, W)` uint8 (or lists of each). ``image`` is required (``None``, as a collection passes when
        it got none, is a ``ValueError``); it is keyword-optional only so collections can omit it for others."""
        self._accumulate(self._batch_statistics(pred, gt, image))

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps, image: InputImages | None = None
                        ) -> tuple[Tensor, Tensor]:
        if image is None:
            raise ValueError("`image` is required by camouflage_context_measure (CCm): pass the RGB images, "
                             "update(pred, gt, image=image) with image a (B, 3, H, W) uint8 tensor")
        return _camouflage_context_measure_update(pred, gt, image, self.beta2, self.alpha, self.gamma,
                                                  self.lambda_spatial, self.normalize, self.empty_gt,
                                                  self.validate_args, self.engine)

    def _value(self, states: Mapping[str, Any]) -> Tensor:
        """The mean per-image CCm (NaN, with torchmetrics' warning, before any image); raises ``RuntimeError`` if the
        sync-free search overflowed for an image (its +inf reached the sum; one host read)."""
        return _camouflage_context_measure_compute(states[self._sum_state], states[self._count_state])
