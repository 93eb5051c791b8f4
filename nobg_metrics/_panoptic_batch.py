"""The panoptic input as the metric path reads it: equal-size images as slot maps and per-slot tables
(:class:`SegmentBatch`), built from torchmetrics' ``(category, instance)`` tensors
(:mod:`nobg_metrics.functional.panoptic.inputs`) or from COCO panoptic PNG + JSON files
(:mod:`nobg_metrics.io.panoptic`).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

__all__ = ["SegmentBatch"]


@dataclass
class SegmentBatch:
    """Equal-size images as slot maps and per-slot tables; slot ``0`` is gt void / no predicted segment.

    Attributes:
        gt: :math:`(B, H, W)` integer gt slot of each pixel, in ``[0, S_g)``.
        pred: :math:`(B, H, W)` integer predicted slot, in ``[0, S_p)``.
        gt_category: :math:`(B, S_g)` int64 category index of each slot (``-1``: slot 0 and unused slots).
        gt_crowd: :math:`(B, S_g)` bool crowd segments.
        pred_category: :math:`(B, S_p)` int64.
        gt_marker: :math:`(B,)` int64 slot holding the reference's marker id (``-1``: none), or ``None``.
        pred_marker: the same for the predictions.

    The slot order is the segments' order (``segments_info``): the last crowd segment of a category is its
    crowd region, and a marker slot's band takes the interiors of the slots before it.
    """

    gt: Tensor
    pred: Tensor
    gt_category: Tensor
    gt_crowd: Tensor
    pred_category: Tensor
    gt_marker: Tensor | None = None
    pred_marker: Tensor | None = None
