"""Segmentation batches: the equal-size groups of :func:`nobg_metrics._inputs.prepare` read as masks.

The reading rules (docs/inputs.md): ``pred`` float in [0, 1] as given, ``uint8`` read as ``pred / 255`` in float64
exactly as PySODMetrics computes it (one 256-entry table per image, ``ops/levels.py``), optionally min-max
stretched (``normalize``); ``gt`` binarised by the reference rules (bool; uint8 ``> 128``; float ``> 0.5``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from nobg_metrics._inputs import InputGroup, InputMaps, prepare
from nobg_metrics.ops.levels import binarize_gt, lookup_levels, range_level_values


@dataclass
class SegBatch:
    """Equal-size images of a segmentation batch in canonical form.

    Attributes:
        pred_raw: :math:`(B, H, W)` the prediction as given: ``uint8`` levels, or float32/float64 values
            (half precision is upcast to float32, ``bool`` to float32).
        gt_raw: :math:`(B, H, W)` the gt as given (bool, uint8 or float); read it through :attr:`gt`.
        normalize: whether the per-image min-max stretch applies.
    """

    pred_raw: Tensor
    gt_raw: Tensor
    normalize: bool
    _pred: Tensor | None = field(default=None, repr=False)
    _gt: Tensor | None = field(default=None, repr=False)
    _level_values: Tensor | None = field(default=None, repr=False)

    @property
    def gt(self) -> Tensor:
        """:math:`(B, H, W)` bool foreground mask by the reference rules (see :func:`binarize_gt`)."""
        if self._gt is None:
            self._gt = binarize_gt(self.gt_raw)
        return self._gt

    @property
    def histogram_gt(self) -> Tensor:
        """:math:`(B, H, W)` the gt in a form :func:`~nobg_metrics.ops.histogram.joint_histogram` reads
        without a separate binarisation pass: raw ``uint8`` (class ``> 128``) or bool."""
        return self.gt_raw if self.gt_raw.dtype == torch.uint8 and self._gt is None else self.gt

    @property
    def is_uint8(self) -> bool:
        """True when the prediction arrived as ``uint8`` levels (the PNG protocol)."""
        return self.pred_raw.dtype == torch.uint8

    @property
    def pred(self) -> Tensor:
        """:math:`(B, H, W)` prediction in [0, 1] after the optional stretch.

        ``uint8`` input becomes float64 ``pred / 255`` exactly as PySODMetrics computes it; float input
        keeps its dtype (float32 or float64).
        """
        if self._pred is None:
            if self.is_uint8:  # 256 values per image, each computed as the reference computes it; one gather
                self._pred = lookup_levels(self.level_values, self.pred_raw)
            else:
                self._pred = min_max_stretch(self.pred_raw) if self.normalize else self.pred_raw
        return self._pred

    @property
    def level_values(self) -> Tensor:
        """:math:`(B, 256)` float64: the value :attr:`pred` gives each uint8 level (uint8 input only)."""
        if self._level_values is None:
            levels = self.pred_raw.flatten(1)
            self._level_values = range_level_values(levels.amin(dim=1), levels.amax(dim=1), self.normalize)
        return self._level_values

    @property
    def num_pixels(self) -> int:
        """Pixels per image, ``H * W``."""
        return self.gt_raw.shape[-1] * self.gt_raw.shape[-2]

    @property
    def shape(self) -> torch.Size:
        """``(B, H, W)`` (reading it does not binarise the gt)."""
        return self.gt_raw.shape


def min_max_stretch(pred: Tensor) -> Tensor:
    """PySODMetrics' per-image ``mapminmax``: ``(p - min) / (max - min)`` where ``max != min``.

    Args:
        pred: :math:`(B, H, W)` float.

    Returns:
        :math:`(B, H, W)` the stretched maps, same dtype.

    Examples:
        >>> min_max_stretch(torch.tensor([[[0.2, 0.6]], [[0.5, 0.5]]]))
        tensor([[[0.0000, 1.0000]],
        <BLANKLINE>
                [[0.5000, 0.5000]]])
    """
    low = pred.amin(dim=(-2, -1), keepdim=True)
    high = pred.amax(dim=(-2, -1), keepdim=True)
    span = high - low
    stretched = (pred - low) / torch.where(span == 0, torch.ones_like(span), span)
    return torch.where(span == 0, pred, stretched)


def prediction_values(pred: Tensor) -> Tensor:
    """A prediction in the dtype the metrics compute in: half precision and bool upcast to float32."""
    if pred.dtype in (torch.float16, torch.bfloat16, torch.bool):
        return pred.float()
    return pred


def segmentation_batch(group: InputGroup, normalize: bool) -> SegBatch:
    """The :class:`SegBatch` view of a prepared group."""
    return SegBatch(prediction_values(group.pred), group.gt, normalize)


def prepare_segmentation(
    pred: InputMaps,
    gt: InputMaps,
    *,
    normalize: bool = False,
    validate_args: bool = True,
) -> list[SegBatch]:
    """Validate segmentation inputs and return them as equal-size groups.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list of those.
        gt: same layout as ``pred``; bool, uint8 (``> 128``) or float (``> 0.5``).
        normalize: apply the per-image min-max stretch to ``pred``.
        validate_args: run the checks that force a device sync (NaN, inf, range).

    Returns:
        One :class:`SegBatch` per distinct image size (a tensor input gives exactly one).

    Examples:
        >>> groups = prepare_segmentation(torch.rand(2, 1, 4, 6), torch.rand(2, 1, 4, 6) > 0.5)
        >>> len(groups), tuple(groups[0].gt.shape)
        (1, (2, 4, 6))
    """
    return [segmentation_batch(group, normalize) for group in prepare(pred, gt, validate_args=validate_args)]


