"""Cityscapes instance-level AP — mask AP and the Boundary IoU paper's Boundary AP (Cheng et al., CVPR 2021) — as
boundary-iou-api's ``tools/cityscapes_instance_evaluation.py`` computes it on cityscapesScripts'
``evalInstanceLevelSemanticLabeling.py``.

The rules (every one from the reference's code; docs/cityscapes_instances.md has the mapping table):

- classes: person, rider, car, truck, bus, train, motorcycle, bicycle (:mod:`.cityscapes_labels`); gts are the
  instances (``value >= 1000``) of at least ``min_region_size`` pixels; group regions (``value < 1000``), smaller
  instances and void pixels are *ignore* regions for unmatched predictions;
- overlap: mask IoU (``iou_type="segm"``) or ``min(mask IoU, boundary IoU)`` (``"boundary"``), compared **strictly**
  (``> t``) with each ``t`` of ``np.arange(0.5, 1., 0.05)``; in boundary mode a (prediction, gt) pair exists only when
  its band intersection is > 0 too;
- bands: ``mask_to_boundary`` of each full-resolution mask, ``d = max(1, int(round(dilation_ratio * diagonal)))``
  (Python's round, half to even; ``d = 11`` at 2048x1024 with the Cityscapes ratio 0.005), the image border counted
  as contour;
- AP: the reference's own precision-recall construction and step integration (:mod:`.cityscapes_ap`); ``AP`` is the
  mean over the ten thresholds, ``AP50`` the value at 0.5; the averages are ``nanmean`` over classes.

Edge values (named policies): a class without gts is NaN (as the reference) and left out of the averages (``ap`` is
NaN only when no class has a gt); a class with gts but no predictions is 0; a threshold at which a class has
predictions but every one is ignored is 0 where the reference raises ``IndexError``.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import check_number, check_option
from nobg_metrics.functional.instance.cityscapes_ap import class_average_precision
from nobg_metrics.functional.instance.cityscapes_inputs import (
    InstanceIds,
    Predictions,
    size_groups,
)
from nobg_metrics.functional.instance.cityscapes_labels import EVAL_LABEL_IDS
from nobg_metrics.functional.instance.cityscapes_matching import OVERLAPS, group_statistics
from nobg_metrics.ops.band_width import dilation_radius
from nobg_metrics.ops.numpy_sum import pairwise_sum

__all__ = ["cityscapes_instance_ap"]

IouType = Literal["segm", "boundary"]
DETECTION_STATES = {"detection_scores": (torch.float64, ()), "detection_classes": (torch.int64, ()),
                    "detection_true": (torch.int64, (len(OVERLAPS),)),
                    "detection_false": (torch.int64, (len(OVERLAPS),))}
"""Per-detection statistics (they grow with the detections): name -> (dtype, trailing shape)."""
COUNT_STATES = ("gt_instance_count", "prediction_count")
"""Fixed-size int64 :math:`(C,)` counts per evaluated class."""


def _check_cityscapes_args(iou_type: str, dilation_ratio: float, min_region_size: int) -> None:
    check_option("iou_type", iou_type, IouType)
    check_number("dilation_ratio", dilation_ratio, low=0.0)
    check_number("min_region_size", min_region_size, low=0, integer=True)


def _cityscapes_update(preds: Predictions, target: InstanceIds, iou_type: IouType, dilation_ratio: float,
                       min_region_size: int, validate_args: bool = True) -> dict[str, Tensor]:
    """The batch's statistics: :data:`DETECTION_STATES` (one row per detection) and :data:`COUNT_STATES`.

    Images of one size are scored together; a batch of several sizes loops over its sizes.
    """
    groups = size_groups(preds, target, validate_args)
    device = groups[0].gts.device if groups else torch.device("cpu")
    parts = []
    for group in groups:
        height, width = group.gts.shape[-2:]
        radius = dilation_radius(height, width, dilation_ratio)  # the full-resolution map's diagonal
        parts.append(group_statistics(group, iou_type == "boundary", radius, min_region_size))
    stats: dict[str, Tensor] = {}
    for name, (dtype, trailing) in DETECTION_STATES.items():
        stats[name] = torch.cat([part[name] for part in parts]) if parts else \
            torch.zeros((0, *trailing), dtype=dtype, device=device)
    for name in COUNT_STATES:
        stats[name] = sum((part[name] for part in parts), torch.zeros(len(EVAL_LABEL_IDS), dtype=torch.int64,
                                                                       device=device))
    return stats


def _nanmean(values: Tensor) -> Tensor:
    """``np.nanmean`` of a vector bit for bit: NaN replaced by 0, numpy's pairwise sum, over the non-NaN count (0/0:
    NaN when every value is NaN, as numpy returns with its warning)."""
    valid = ~torch.isnan(values)
    return pairwise_sum(torch.where(valid, values, 0.0).view(1, -1))[0] / valid.sum()


def _cityscapes_compute(detection_scores: Tensor, detection_classes: Tensor, detection_true: Tensor,
                        detection_false: Tensor, gt_instance_count: Tensor,
                        prediction_count: Tensor) -> dict[str, Tensor]:
    """The result from accumulated statistics (:func:`cityscapes_instance_ap` lists the keys)."""
    matrix = class_average_precision(detection_scores, detection_classes, detection_true, detection_false,
                                     gt_instance_count, prediction_count)
    # numpy's pairwise summation order, so the averages are the reference's to the last bit (given its matrix)
    return {
        "ap": _nanmean(matrix.flatten()),  # np.nanmean(aps[dInf, :, :])
        "ap_50": _nanmean(matrix[:, 0]),  # np.nanmean(aps[dInf, :, o50])
        "ap_per_class": pairwise_sum(matrix) / matrix.shape[1],  # np.average(aps[dInf, lI, :])
        "ap_50_per_class": matrix[:, 0],
        "ap_matrix": matrix,
        "classes": torch.tensor(EVAL_LABEL_IDS, dtype=torch.int64, device=matrix.device),
    }


def cityscapes_instance_ap(preds: Predictions, target: InstanceIds, iou_type: IouType = "segm",
                           dilation_ratio: float = 0.005, *, min_region_size: int = 100,
                           validate_args: bool = True) -> dict[str, Tensor]:
    r"""Cityscapes instance AP (``iou_type="segm"``) or Boundary AP (``"boundary"``) of a batch of images.

    Args:
        preds: one dict per image: ``masks`` :math:`(N, H, W)` bool, ``scores`` :math:`(N,)` float, ``labels``
            :math:`(N,)` Cityscapes label ids (24-28, 31-33 are evaluated; others are dropped).
        target: ``*_instanceIds`` maps, :math:`(B, H, W)` or a list of :math:`(H, W)` integer tensors
            (``label id * 1000 + instance``; bare label ids for stuff, void and group regions).
        iou_type: ``"segm"`` (mask IoU) or ``"boundary"`` (``min(mask IoU, boundary IoU)``).
        dilation_ratio: band width as a fraction of each map's diagonal (Cityscapes: 0.005).
        min_region_size: gts under this many pixels are ignore regions (the reference's ``minRegionSizes[0]``).
        validate_args: check values (NaN scores, unknown label ids, the map encoding) on the host.

    Returns:
        ``ap`` (mean over classes with gts and the ten thresholds; the printed "average" AP), ``ap_50``,
        ``ap_per_class`` :math:`(8,)`, ``ap_50_per_class`` :math:`(8,)`, ``ap_matrix`` :math:`(8, 10)` (class x
        threshold 0.5:0.05:0.95) — float64, NaN for classes without gts — and ``classes`` :math:`(8,)` label ids.

    Examples:
        >>> gt = torch.full((40, 60), 7)                    # road
        >>> gt[5:25, 5:25] = 26000                          # car instance 0: 400 pixels
        >>> gt[10:30, 35:55] = 24001                        # person instance 1
        >>> masks = torch.zeros(3, 40, 60, dtype=torch.bool)
        >>> masks[0, 5:25, 5:24] = True                     # the car, one column short: IoU 0.95
        >>> masks[1, 10:30, 35:55] = True                   # the person, exact
        >>> masks[2, 0:4, 0:4] = True                       # a false car, scored higher than the true one
        >>> pred = {"masks": masks, "scores": torch.tensor([0.9, 0.8, 0.95]), "labels": torch.tensor([26, 24, 26])}
        >>> result = cityscapes_instance_ap([pred], [gt])
        >>> result["ap_50_per_class"][:3]                   # person, rider (no gt: NaN), car: p = 1/2 at r = 1
        tensor([1.0000,    nan, 0.2500], dtype=torch.float64)
        >>> result["ap_per_class"][2]                       # the car matches at 0.5 .. 0.9, not at 0.95
        tensor(0.2250, dtype=torch.float64)
        >>> result["ap"], result["ap_50"]                   # over the classes with gts
        (tensor(0.6125, dtype=torch.float64), tensor(0.6250, dtype=torch.float64))
    """
    _check_cityscapes_args(iou_type, dilation_ratio, min_region_size)
    stats = _cityscapes_update(preds, target, iou_type, dilation_ratio, min_region_size, validate_args)
    return _cityscapes_compute(*(stats[name] for name in (*DETECTION_STATES, *COUNT_STATES)))
