"""Panoptic quality as a ``Metric``: the state of :func:`nobg_metrics.functional.panoptic_quality`.

States (fixed size, one entry per category, int64, summed over batches and DDP ranks):
``iou_sum_high`` / ``iou_sum_low`` (the exact limbs of the matched IoUs' sum, see
:mod:`nobg_metrics.functional.panoptic.segments`), ``true_positives``, ``false_positives``,
``false_negatives``, and the fingerprint of the options. Integer states make any split over batches and
ranks give bit-identical values.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from nobg_metrics.functional.panoptic.inputs import Categories, PanopticMaps
from nobg_metrics.functional.panoptic.panoptic_quality import (
    PanopticIouType,
    PanopticOutput,
    _check_panoptic_args,
    _panoptic_compute,
    _panoptic_update,
    tensor_layout,
)
from nobg_metrics.functional.panoptic.segments import STAT_NAMES
from nobg_metrics.metrics.base import NobgMetric
from nobg_metrics.ops.host_reads import Engine

__all__ = ["PanopticQuality"]

class PanopticQuality(NobgMetric):
    """PQ or Boundary PQ as panopticapi / boundary-iou-api compute them, with torchmetrics' input convention.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``preds`` (:class:`~torch.Tensor`): :math:`(B, H, W, 2)` integer ``(category_id, instance_id)`` per pixel, or a
      list of :math:`(H, W, 2)` tensors of any sizes.
    - ``target`` (:class:`~torch.Tensor`): the same layout; pixels of categories that are neither things nor stuffs are
      void.
    - ``iscrowd`` (:class:`~torch.Tensor`, optional): :math:`(B, H, W)` bool marks of the crowd gt segments' pixels (or
      a list of :math:`(H, W)`).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``pq_dict`` (:class:`dict`, ``output="dict"``): float64 tensors by name, panopticapi's numbers:

        - ``pq``, ``sq``, ``rq``: scalar, the means over the classes that occur (in a prediction or a gt).
        - ``n``: scalar int64, the number of those classes.
        - ``pq_things``, ``sq_things``, ``rq_things``, ``n_things``: the same over the things.
        - ``pq_stuff``, ``sq_stuff``, ``rq_stuff``, ``n_stuff``: the same over the stuffs.
        - ``pq_per_class``, ``sq_per_class``, ``rq_per_class``: :math:`(C,)`, 0 for a class that does not occur.
        - ``classes``: :math:`(C,)` int64, the category ids in that order (``category_order``; by default things sorted,
          then stuffs sorted).

    - ``quality`` (:class:`~torch.Tensor`, ``output="tensor"``): torchmetrics' ``PanopticQuality`` layout, float64:
      scalar PQ; ``[pq, sq, rq]`` :math:`(3,)` with ``return_sq_and_rq``; :math:`(1, C)` per-class PQ with
      ``return_per_class``; :math:`(C, 3)` with both.

    Args:
        things: category ids of the things.
        stuffs: category ids of the stuffs (their instance ids are ignored).
        iou_type: ``"segm"`` (mask IoU) or ``"boundary"`` (``min(mask IoU, boundary IoU)``).
        dilation_ratio: band width as a fraction of the image diagonal (0.02 COCO, 0.005 Cityscapes).
        allow_unknown_preds_category: read prediction pixels of unknown categories as no segment (else an error).
        output: ``"dict"`` (every value) or ``"tensor"`` (torchmetrics' layout, chosen by the two flags below).
        return_sq_and_rq: with ``output="tensor"``: ``[pq, sq, rq]``.
        return_per_class: with ``output="tensor"``: per-class values.
        category_order: every category id of ``things`` and ``stuffs`` once, in the order of the per-class values
            and states (e.g. a dataset's own order); default: the things sorted, then the stuffs sorted
            (torchmetrics' order).
        validate_args: run the checks that read the data back (unknown categories, instance ids, crowd marks).
        engine: ``"auto"`` (data-sized tables on CPU, sync-free elsewhere), ``"data_sized"`` (host reads size the
            tables) or ``"fixed"`` (no host read: what a GPU runs by default); the values are the same.

    Examples:
        >>> import torch
        >>> target = torch.zeros(1, 4, 6, 2, dtype=torch.long)
        >>> target[0, :, :3, 0] = 1                     # a thing of category 1 on the left, stuff 7 elsewhere
        >>> target[0, :, 3:, 0] = 7
        >>> preds = target.clone()
        >>> preds[0, 0, 3, 0] = 1
        >>> metric = PanopticQuality(things={1}, stuffs={7})
        >>> metric.update(preds, target)
        >>> result = metric.compute()
        >>> round(float(result["pq"]), 4), int(result["n"])
        (0.9199, 2)
    """

    iou_sum_high: Tensor
    iou_sum_low: Tensor
    true_positives: Tensor
    false_positives: Tensor
    false_negatives: Tensor
    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self, things: Collection[int], stuffs: Collection[int], iou_type: PanopticIouType = "segm",
        dilation_ratio: float = 0.02, *, allow_unknown_preds_category: bool = False, output: PanopticOutput = "dict",
        return_sq_and_rq: bool = False, return_per_class: bool = False, category_order: Sequence[int] | None = None,
        validate_args: bool = True, engine: Engine = "auto", **kwargs: Any,
    ) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_panoptic_args(iou_type, dilation_ratio, output, return_sq_and_rq, return_per_class,
                             allow_unknown_preds_category, engine)
        self.engine = engine
        self.categories = Categories.from_sets(things, stuffs, category_order)
        self.things, self.stuffs = set(things), set(stuffs)
        self.iou_type, self.dilation_ratio = iou_type, dilation_ratio
        self.allow_unknown_preds_category = allow_unknown_preds_category
        self.output, self.return_sq_and_rq, self.return_per_class = output, return_sq_and_rq, return_per_class
        self._add_fingerprint({"categories": self.categories.ids, "isthing": self.categories.isthing,
                               "iou_type": iou_type, "dilation_ratio": float(dilation_ratio),
                               "allow_unknown_preds_category": allow_unknown_preds_category})
        for name in STAT_NAMES:  # iou_sum_high, iou_sum_low, true_positives, false_positives, false_negatives
            self._add_count(name, (len(self.categories.ids),))

    def _statistics(self, preds: PanopticMaps, target: PanopticMaps, iscrowd: PanopticMaps | None = None
                    ) -> dict[str, Tensor]:
        """The batch's per-category sums (``{state name: (C,) int64}``); raises on bad input before any state moves."""
        return _panoptic_update(preds, target, iscrowd, self.categories, self.iou_type, self.dilation_ratio,
                                self.allow_unknown_preds_category, self.validate_args, self.engine)

    def _value(self, states: Mapping[str, Tensor]) -> dict[str, Tensor] | Tensor:
        """The dataset values of ``states`` (class notes)."""
        device = states["true_positives"].device
        values = _panoptic_compute(states["iou_sum_high"], states["iou_sum_low"], states["true_positives"],
                                   states["false_positives"], states["false_negatives"],
                                   self.categories.thing_mask(device),
                                   torch.tensor(self.categories.ids, dtype=torch.int64, device=device))
        if self.output == "dict":
            return values
        return tensor_layout(values, self.return_sq_and_rq, self.return_per_class)

    def update(self, preds: PanopticMaps, target: PanopticMaps, iscrowd: PanopticMaps | None = None) -> None:
        """Add a batch (shapes in the class notes)."""
        self._accumulate(self._batch_statistics(preds, target, iscrowd))
