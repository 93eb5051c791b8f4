"""The one pattern of every "mean of per-image values" metric: a float64 sum, an int64 image count.

A subclass names its states (``_state_prefix``: ``<prefix>_sum``, ``<prefix>_count``), fingerprints the
options that change its values (:meth:`NobgMetric._add_fingerprint`), and says how a batch becomes
``(sum of per-image values, image count)`` in ``_per_image_sums`` — a call of its functional module's ``_x_update``,
so the maths lives once, in :mod:`nobg_metrics.functional`. ``compute()`` is the functional module's
``mean_over_images``. MAE, S-measure, weighted F, the context measures, HCE, mBA, HQ-SAM's IoU and Boundary IoU,
gradient and connectivity errors follow it; SAD and MSE share one statistic
(:mod:`nobg_metrics.metrics.matting.sad_mse`). It is the one way to write a per-image metric: a subclass
(docs/adding_a_metric.md shows one, end to end).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import Tensor

from nobg_metrics._inputs import InputMaps
from nobg_metrics.functional._per_image import mean_over_images
from nobg_metrics.metrics.base import NobgMetric, Statistics


class PerImageMean(NobgMetric):
    """Base of the per-image-mean segmentation metrics: ``update(pred, gt)``.

    Args:
        options: the options that change the per-image values (fingerprinted into a state name).
        validate_args: run the checks that force a device sync.
        kwargs: passed to :class:`torchmetrics.Metric`.
    """

    _state_prefix: str

    def __init__(self, *, options: Mapping[str, object], validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        self._add_fingerprint(options)
        self._sum_state, self._count_state = f"{self._state_prefix}_sum", f"{self._state_prefix}_count"
        self._add_sum(self._sum_state)
        self._add_count(self._count_state)

    def _per_image_sums(self, *inputs: Any, **named: Any) -> tuple[Tensor, Tensor]:  # pragma: no cover - abstract
        """``(float64 sum of per-image values, int64 image count)`` of a batch."""
        raise NotImplementedError

    def _statistics(self, *inputs: Any, **named: Any) -> Statistics:
        total, count = self._per_image_sums(*inputs, **named)
        return {self._sum_state: total, self._count_state: count}

    def _value(self, states: Mapping[str, Any]) -> Tensor:
        """The dataset value: the mean of per-image values, scalar float64."""
        return mean_over_images(states[self._sum_state], states[self._count_state])


class PerImageMattingMean(PerImageMean):
    """Base of the per-image-mean matting metrics: ``update(pred, gt, trimap=None)`` over a trimap region.

    Args:
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        options: further options that change the values; validate_args, kwargs: as :class:`PerImageMean`.
    """

    higher_is_better = False
    plot_upper_bound = None

    def __init__(self, *, clamp_to_trimap: bool = False, options: Mapping[str, object] | None = None,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(options={"clamp_to_trimap": clamp_to_trimap, **(options or {})},
                         validate_args=validate_args, **kwargs)
        self.clamp_to_trimap = clamp_to_trimap

    def update(self, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None) -> None:
        """Add a batch of mattes :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists, with an optional
        trimap."""
        self._accumulate(self._batch_statistics(pred, gt, trimap))
