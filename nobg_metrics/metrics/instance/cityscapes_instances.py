"""Cityscapes instance AP / Boundary AP as a ``Metric``: the state of
:func:`nobg_metrics.functional.cityscapes_instance_ap`.

States: per detection (they grow with the detections, never with pixels; ``dist_reduce_fx="cat"``) its score
(float64), evaluated class (int64, ``-1`` when dropped) and its true / false entries per overlap threshold
(:math:`(N, 10)` int64); per class (fixed size, summed) the gts and the kept predictions; and the fingerprint of the
options. Integer entries and a sort by (class, score) make the value independent of batching, image order and the
number of DDP ranks, bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

from nobg_metrics.functional.instance.cityscapes_inputs import InstanceIds, Predictions
from nobg_metrics.functional.instance.cityscapes_instances import (
    COUNT_STATES,
    DETECTION_STATES,
    IouType,
    _check_cityscapes_args,
    _cityscapes_compute,
    _cityscapes_update,
)
from nobg_metrics.functional.instance.cityscapes_labels import EVAL_LABEL_IDS
from nobg_metrics.metrics.base import NobgMetric, Statistics

__all__ = ["CityscapesInstanceAP"]


class CityscapesInstanceAP(NobgMetric):
    """Cityscapes instance-level AP (``iou_type="segm"``) or Boundary AP (``"boundary"``), as boundary-iou-api's
    ``tools/cityscapes_instance_evaluation.py`` computes it.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``preds`` (:class:`list` of :class:`dict`): one dict per image, with the keys:

        - ``masks`` (:class:`~torch.Tensor`): :math:`(N, H, W)` bool, the predicted instances' masks.
        - ``scores`` (:class:`~torch.Tensor`): :math:`(N,)` float, their scores.
        - ``labels`` (:class:`~torch.Tensor`): :math:`(N,)` integer Cityscapes label ids (24-28, 31-33 are evaluated;
          others are dropped).

    - ``target`` (:class:`~torch.Tensor`): the ``*_instanceIds`` maps, :math:`(B, H, W)` or a list of :math:`(H, W)`
      integer tensors (``label id * 1000 + instance``; bare label ids for stuff, void and groups).

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``ap_dict`` (:class:`dict`): float64 tensors by name (``classes``: int64):

        - ``ap``: scalar, the mean over the classes with gts and the ten overlap thresholds 0.5:0.05:0.95.
        - ``ap_50``: scalar, the mean over the classes with gts at overlap 0.5.
        - ``ap_per_class``, ``ap_50_per_class``: :math:`(8,)`, NaN for a class without gts.
        - ``ap_matrix``: :math:`(8, 10)`, class x overlap threshold.
        - ``classes``: :math:`(8,)` int64, the evaluated label ids, in the order of the per-class values.

    See :func:`nobg_metrics.functional.cityscapes_instance_ap`.

    Args:
        iou_type: ``"segm"`` (mask IoU, the reference tool's default) or ``"boundary"`` (``min(mask IoU, boundary
            IoU)``).
        dilation_ratio: band width as a fraction of each instanceIds map's diagonal (Cityscapes: 0.005).
        min_region_size: gts under this many pixels are ignore regions (the reference's 100).
        validate_args: check values (NaN scores, unknown label ids, the map encoding) on the host.

    Examples:
        >>> gt = torch.full((40, 60), 7)
        >>> gt[5:25, 5:25] = 26000
        >>> masks = torch.zeros(2, 40, 60, dtype=torch.bool)
        >>> masks[0, 5:25, 5:24] = True
        >>> masks[1, 0:4, 0:4] = True
        >>> metric = CityscapesInstanceAP(iou_type="boundary")
        >>> metric.update([{"masks": masks, "scores": torch.tensor([0.95, 0.9]), "labels": torch.tensor([26, 26])}],
        ...               [gt])
        >>> result = metric.compute()
        >>> result["ap_50"], result["ap"]  # mask IoU 0.95, band IoU 56/94 = 0.60: a match at 0.5 and 0.55 only
        (tensor(1., dtype=torch.float64), tensor(0.2000, dtype=torch.float64))
    """

    detection_scores: list[Tensor]
    detection_classes: list[Tensor]
    detection_true: list[Tensor]
    detection_false: list[Tensor]
    gt_instance_count: Tensor
    prediction_count: Tensor
    full_state_update = False
    is_differentiable = False
    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(self, iou_type: IouType = "segm", dilation_ratio: float = 0.005, *, min_region_size: int = 100,
                 validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        _check_cityscapes_args(iou_type, dilation_ratio, min_region_size)
        self.iou_type, self.dilation_ratio, self.min_region_size = iou_type, dilation_ratio, min_region_size
        self._add_fingerprint({"iou_type": iou_type, "dilation_ratio": float(dilation_ratio),
                               "min_region_size": min_region_size})
        for name, (dtype, trailing) in DETECTION_STATES.items():  # per-detection records: list states
            self._add_list(name, dtype, trailing)
        for name in COUNT_STATES:
            self._add_count(name, (len(EVAL_LABEL_IDS),))

    def _statistics(self, preds: Predictions, target: InstanceIds) -> Statistics:
        """The batch's statistics: one row per detection for the lists, per-class counts for the sums."""
        return _cityscapes_update(preds, target, self.iou_type, self.dilation_ratio, self.min_region_size,
                                  self.validate_args)

    def _value(self, states: Mapping[str, Any]) -> dict[str, Tensor]:
        """The result dict (class doc) from states: per-detection lists (or, after a DDP sync, tensors) and counts."""
        def rows(name: str) -> Tensor:
            dtype, trailing = DETECTION_STATES[name]
            value = states[name]
            if isinstance(value, Tensor):  # after a DDP sync torchmetrics holds the gathered tensor
                return value
            return torch.cat(value) if value else torch.zeros((0, *trailing), dtype=dtype, device=self.device)

        scores, classes, true, false = (rows(name) for name in DETECTION_STATES)
        return _cityscapes_compute(scores, classes, true, false, states["gt_instance_count"],
                                   states["prediction_count"])

    def update(self, preds: Predictions, target: InstanceIds) -> None:  # type: ignore[override]  # not maps
        """Add a batch: one prediction dict per image and the images' instanceIds maps."""
        self._accumulate(self._batch_statistics(preds, target))
