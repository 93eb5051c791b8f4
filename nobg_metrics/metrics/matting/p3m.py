"""The P3M-10k / AM-2k / AIM-500 protocol as ``Metric`` classes (docs/matting_protocols.md).

- ``P3MSAD(region=...)``, ``P3MMSE(region=...)``, ``P3MMAD(region=...)``: one statistic for all of them, the 8
  summed per-image pixel errors of :data:`~nobg_metrics.functional.matting.p3m.ERROR_COLUMNS` (``p3m_error_sums``)
  with the image count and the count of images that came with a trimap. ``region`` only picks the column, so
  every instance shares one update in a collection (one compute group).
- ``P3MGradientError``, ``P3MConnectivityError``: per-image means (``p3m_grad_*``, ``p3m_conn_*``).

Every ``update(pred, gt, trimap=None)`` takes the trimap, so one collection call feeds the whole protocol; the
whole-image metrics ignore it. Values are raw (the scripts print SAD / 1000, Grad / 10, Conn / 1000).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch  # noqa: F401  (the examples)
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_number, check_option
from nobg_metrics.functional.matting.p3m import (
    P3MRegion,
    _p3m_error_compute,
    _p3m_errors_update,
    column_name,
)
from nobg_metrics.functional.matting.p3m_connectivity import _p3m_connectivity_update
from nobg_metrics.functional.matting.p3m_gradient import _p3m_gradient_update
from nobg_metrics.metrics.base import NobgMetric, Statistics
from nobg_metrics.metrics.per_image import PerImageMean
from nobg_metrics.ops.host_reads import Engine, engine_option

__all__ = ["P3MMAD", "P3MMSE", "P3MSAD", "P3MConnectivityError", "P3MGradientError"]


class _P3MPixelErrors(NobgMetric):
    """The shared statistic of P3MSAD, P3MMSE and P3MMAD.

    Args:
        region: ``"image"``, ``"trimap"`` (the reference's ``_trimap`` values: prediction forced to the trimap's
            known values), and for SAD ``"fg"`` / ``"bg"``.
        validate_args: run the checks that force a device sync.
    """

    higher_is_better = False
    plot_upper_bound: float | None = None
    _measure: str

    def __init__(self, region: P3MRegion = "image", *, validate_args: bool = True, **kwargs: Any) -> None:
        check_option("region", region, P3MRegion)
        self._column = column_name(self._measure, region)
        super().__init__(validate_args=validate_args, **kwargs)
        self.region = region
        self._add_sum("p3m_error_sums", (8,))
        self._add_count("p3m_error_image_count")
        self._add_count("p3m_error_trimap_count")

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add a batch of mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists, with the trimap
        (required unless ``region="image"``)."""
        self._accumulate(self._batch_statistics(pred, gt, trimap))

    def _statistics(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> Statistics:
        if self.region != "image" and trimap is None:
            raise ValueError(f"`trimap` is required by {type(self).__name__}(region={self.region!r}); got None")
        totals, count = _p3m_errors_update(pred, gt, trimap, self.validate_args)
        return {"p3m_error_sums": totals["errors"], "p3m_error_image_count": count,
                "p3m_error_trimap_count": totals["with_trimap"]}

    def _value(self, states: Mapping[str, Tensor]) -> Tensor:
        """The dataset value: the mean of the per-image values (trimap regions: over images with a trimap)."""
        return _p3m_error_compute(self._column, states["p3m_error_sums"], states["p3m_error_image_count"],
                                  states["p3m_error_trimap_count"])


class P3MSAD(_P3MPixelErrors):
    """P3M SAD, SAD-T, SAD-FG or SAD-BG per image, raw (printed / 1000); see
    :func:`nobg_metrics.functional.matting.p3m.p3m_sad`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``k / 255`` in float64, the scripts' reading) or bool; or a list of such tensors,
      which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool.
    - ``trimap`` (:class:`~torch.Tensor`, optional): the same layout, uint8 {0, 128, 255} or float {0, 0.5, 1}; required
      unless ``region="image"`` (a ``ValueError`` without it), ignored by ``"image"``.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``p3m_sad`` (:class:`~torch.Tensor`): scalar float64, the mean over images (over the images that came with a
      trimap for ``"trimap"``, ``"fg"``, ``"bg"``) of the per-image SAD, raw (the scripts print it / 1000), >= 0 (lower
      is better).

    Args:
        region: ``"image"`` (SAD), ``"trimap"`` (SAD-T: the prediction forced to the trimap's known values), ``"fg"``
            (SAD-FG) or ``"bg"`` (SAD-BG).
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Examples:
        >>> pred, gt = torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> metric = P3MSAD(region="trimap")
        >>> metric.update(pred, gt, torch.tensor([[1.0, 0.5], [0.0, 0.5]]))
        >>> round(float(metric.compute()), 4)
        0.8
    """

    _measure = "sad"


class P3MMSE(_P3MPixelErrors):
    """P3M MSE (``region="image"``) or MSE-T (``"trimap"``) per image, raw; see
    :func:`nobg_metrics.functional.matting.p3m.p3m_mse`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``k / 255`` in float64, the scripts' reading) or bool; or a list of such tensors,
      which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool.
    - ``trimap`` (:class:`~torch.Tensor`, optional): the same layout, uint8 {0, 128, 255} or float {0, 0.5, 1}; required
      unless ``region="image"`` (a ``ValueError`` without it), ignored by ``"image"``.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``p3m_mse`` (:class:`~torch.Tensor`): scalar float64, the mean over images (over the images that came with a
      trimap for ``"trimap"``) of the per-image MSE, raw, in [0, 1] (lower is better).

    Args:
        region: ``"image"`` (MSE over H·W) or ``"trimap"`` (MSE-T: the prediction forced, over the unknown count).
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Examples:
        >>> round(float(P3MMSE()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))), 4)
        0.1125
    """

    _measure = "mse"
    plot_upper_bound = 1.0


class P3MMAD(_P3MPixelErrors):
    """P3M MAD (``region="image"``) or MAD-T (``"trimap"``) per image, raw; see
    :func:`nobg_metrics.functional.matting.p3m.p3m_mad`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``k / 255`` in float64, the scripts' reading) or bool; or a list of such tensors,
      which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool.
    - ``trimap`` (:class:`~torch.Tensor`, optional): the same layout, uint8 {0, 128, 255} or float {0, 0.5, 1}; required
      unless ``region="image"`` (a ``ValueError`` without it), ignored by ``"image"``.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``p3m_mad`` (:class:`~torch.Tensor`): scalar float64, the mean over images (over the images that came with a
      trimap for ``"trimap"``) of the per-image MAD, raw, in [0, 1] (lower is better).

    Args:
        region: ``"image"`` (MAD over H·W) or ``"trimap"`` (MAD-T: the prediction forced, over the unknown count).
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Examples:
        >>> round(float(P3MMAD()(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))), 4)
        0.275
    """

    _measure = "mad"
    plot_upper_bound = 1.0


class _P3MWholeImageMean(PerImageMean):
    """A per-image mean over the whole image whose ``update`` takes the protocol's trimap: checked as every matting
    metric checks it (:func:`nobg_metrics._inputs.prepare`), then ignored."""

    higher_is_better = False
    plot_upper_bound = None

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add a batch of mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists (the trimap checked,
        not scored)."""
        self._accumulate(self._batch_statistics(pred, gt, trimap))


class P3MGradientError(_P3MWholeImageMean):
    """P3M gradient error per image, raw (printed / 10), averaged; see
    :func:`nobg_metrics.functional.matting.p3m_gradient.p3m_gradient_error`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``k / 255`` in float64, the scripts' reading) or bool; or a list of such tensors,
      which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool.
    - ``trimap`` (:class:`~torch.Tensor`, optional): accepted and ignored (the protocol scores the whole image), so that
      one collection call feeds the whole protocol.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``p3m_gradient`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image gradient error
      over the whole image, raw (the scripts print it / 10), >= 0 (lower is better).

    Args:
        validate_args: run the checks that force a device sync.
        engine: ``"data_sized"`` filters each map only where its windows vary (host reads), ``"fixed"`` the whole
            image (no host read); ``"auto"`` (default) is ``"data_sized"`` on CPU and ``"fixed"`` elsewhere. Same
            values.
        kwargs: passed to :class:`torchmetrics.Metric`.

    Examples:
        >>> gt = torch.zeros(8, 10, dtype=torch.float64); gt[2:6, 3:8] = 1.0
        >>> metric = P3MGradientError()
        >>> metric.update(gt.roll(1, 1), gt)
        >>> round(float(metric.compute()), 4)
        0.1719
    """

    _state_prefix = "p3m_grad"

    def __init__(self, *, validate_args: bool = True, engine: Engine = "auto", **kwargs: Any) -> None:
        check_option("engine", engine, Engine)
        super().__init__(options={}, validate_args=validate_args, **kwargs)
        self.engine: Engine = engine

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> tuple[Tensor, Tensor]:
        return _p3m_gradient_update(pred, gt, self.validate_args, trimap, self.engine)


class P3MConnectivityError(_P3MWholeImageMean):
    """P3M connectivity error per image, raw (printed / 1000), averaged; see
    :func:`nobg_metrics.functional.matting.p3m_connectivity.p3m_connectivity_error`.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``pred`` (:class:`~torch.Tensor`): predicted mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)` or :math:`(H, W)`,
      float in [0, 1], uint8 (read as ``k / 255`` in float64, the scripts' reading) or bool; or a list of such tensors,
      which may differ in size.
    - ``gt`` (:class:`~torch.Tensor`): gt mattes of the same layout, float in [0, 1], uint8 or bool.
    - ``trimap`` (:class:`~torch.Tensor`, optional): accepted and ignored (the protocol scores the whole image), so that
      one collection call feeds the whole protocol.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``p3m_connectivity`` (:class:`~torch.Tensor`): scalar float64, the mean over images of the per-image connectivity
      error over the whole image, raw (the scripts print it / 1000), >= 0 (lower is better).

    Args:
        step: the step of ``np.arange(0, 1.1, step)`` (the reference: 0.1).
        allow_host_sync: deprecated alias of ``engine``: ``True`` is ``engine="data_sized"``, ``False`` ``"auto"``.
        validate_args: run the checks that force a device sync.
        engine: the labelling's form: ``"data_sized"`` labels with lists sized by the data (host reads), ``"fixed"``
            with fixed sizes and no sync; ``"auto"`` (default) is ``"data_sized"`` on CPU and ``"fixed"`` elsewhere.

    Examples:
        >>> gt = torch.zeros(6, 8, dtype=torch.float64); gt[1:5, 1:6] = 1.0
        >>> pred = gt.clone(); pred[0, 7] = 1.0
        >>> P3MConnectivityError()(pred, gt)
        tensor(1., dtype=torch.float64)
    """

    _state_prefix = "p3m_conn"

    def __init__(self, *, step: float = 0.1, allow_host_sync: bool | None = None, validate_args: bool = True,
                 engine: Engine = "auto", **kwargs: Any) -> None:
        engine = engine_option(engine, allow_host_sync, "P3MConnectivityError")
        check_number("step", step, low=0.0, low_open=True, high=1.0)
        super().__init__(options={"step": float(step)}, validate_args=validate_args, **kwargs)
        self.step = step
        self.engine: Engine = engine

    def _per_image_sums(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> tuple[Tensor, Tensor]:
        return _p3m_connectivity_update(pred, gt, self.step, self.validate_args, trimap, self.engine)

