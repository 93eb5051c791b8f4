r"""TIDE's errors as a state of :class:`~nobg_metrics.MeanAveragePrecision` (``errors="tide"``): the matching
statistics of :mod:`~nobg_metrics.functional.instance.tide_match` taken from the IoU matrices the AP update has
already computed, kept as list states, and turned into :func:`~nobg_metrics.functional.tide_errors`' values.

tidecv 1.0.1's defaults, fixed: ``TIDE(pos_threshold=0.5, background_threshold=0.1)``, 100 detections per image
(the highest scores over all classes), ``evaluate_range`` over COCO's thresholds 0.5, 0.55, ..., 0.95.

One update: the AP statistics are asked for the IoU of every (detection, gt) pair of each image, categories
crossed (``instance_update(..., with_ious=True)``; TIDE's Cls and Both errors read the pairs of different
classes); each image's rows of its kept detections, in score order, are matched and classified there. No mask
or box is read again. The records (``D`` kept detections, ``G`` non-crowd gts, ``T`` = 10 thresholds):

- ``tide_det_scores`` :math:`(D,)` float64, ``tide_det_labels`` :math:`(D,)` int64;
- ``tide_det_keys`` :math:`(D, 3)` int64 = (image key, DDP rank, the gt of its image a Cls / Loc fix aims at, -1
  for none);
- ``tide_det_status`` :math:`(D, T)` int8 (1 matched, 0 unmatched, -1 ignored) and ``tide_det_error`` :math:`(D,)`
  int8 (the :data:`~nobg_metrics.functional.instance.tide_match.ERROR_NAMES` index, -1 matched);
- ``tide_gt_labels`` :math:`(G,)` int64, ``tide_gt_keys`` :math:`(G, 2)` int64 = (image key, DDP rank) and
  ``tide_gt_flags`` :math:`(G, 2)` bool = (matched, missed) at the positive threshold.

The image key is AP's (``image_id``, else the arrival index): images are put in (key, rank) order before the
values are taken, as AP orders them, so 1 and N ranks agree; within an image the records keep their order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from nobg_metrics.functional.instance.inputs import ImageInstances
from nobg_metrics.functional.instance.statistics import constant
from nobg_metrics.functional.instance.tide import COCO_THRESHOLDS, tide_error_values
from nobg_metrics.functional.instance.tide_match import TideStatistics, match_and_classify
from nobg_metrics.ops.threads import one_thread_if_small

__all__: list[str] = []  # the TIDE state's helpers: used by MeanAveragePrecision, not public

POS_THRESHOLD, BACKGROUND_THRESHOLD, MAX_DETECTIONS = 0.5, 0.1, 100
"""tidecv's ``TIDE()`` defaults and ``max_dets``."""
TIDE_RECORDS = ("tide_det_scores", "tide_det_labels", "tide_det_keys", "tide_det_status", "tide_det_error",
                "tide_gt_labels", "tide_gt_keys", "tide_gt_flags")
"""The list states, in this order (module notes)."""


def tide_layouts() -> dict[str, tuple[torch.dtype, tuple[int, ...]]]:
    """``{record name: (dtype, shape of one row)}`` of :data:`TIDE_RECORDS`."""
    levels = len(COCO_THRESHOLDS)
    return {"tide_det_scores": (torch.float64, ()), "tide_det_labels": (torch.int64, ()),
            "tide_det_keys": (torch.int64, (3,)), "tide_det_status": (torch.int8, (levels,)),
            "tide_det_error": (torch.int8, ()), "tide_gt_labels": (torch.int64, ()),
            "tide_gt_keys": (torch.int64, (2,)), "tide_gt_flags": (torch.bool, (2,))}


def tide_records(images: Sequence[ImageInstances], ious: Tensor, image_keys: Tensor) -> dict[str, Tensor]:
    """The TIDE records of one batch (module notes).

    Args:
        images: the batch (:func:`~nobg_metrics.functional.instance.inputs.prepare_instances`).
        ious: :math:`(B, D, G)` float64, each image's detections (input order) against all its gts, padded: the
            ``"ious"`` of :func:`~nobg_metrics.functional.instance.statistics.instance_update`.
        image_keys: :math:`(B, 2)` int64 (image key, DDP rank): its ``"image_keys"``.

    Returns:
        ``{record name: tensor}``, one row per kept detection / non-crowd gt.
    """
    device = image_keys.device
    thresholds = constant(COCO_THRESHOLDS, device)
    positive = COCO_THRESHOLDS.index(POS_THRESHOLD)
    parts, det_images, gt_images = [], [], []
    for index, image in enumerate(images):
        count, gts = image.det_scores.shape[0], image.gt_labels.shape[0]
        keep = torch.sort(image.det_scores, descending=True, stable=True).indices[:MAX_DETECTIONS]
        iou_all = ious[index, :count, :gts][keep]
        with one_thread_if_small(iou_all.numel() * thresholds.shape[0], device):  # many tiny ops: one thread
            part = match_and_classify(iou_all, image.det_labels[keep], image.det_scores[keep], image.gt_labels,
                                      image.gt_crowd, thresholds, positive, BACKGROUND_THRESHOLD)
        parts.append(part)
        det_images.append(torch.full_like(part.labels, index))
        gt_images.append(torch.full_like(part.gt_labels, index))
    layouts = tide_layouts()
    if not parts:
        return {name: torch.zeros((0, *shape), dtype=dtype, device=device) for name, (dtype, shape) in layouts.items()}
    det_image, gt_image = torch.cat(det_images), torch.cat(gt_images)
    return {
        "tide_det_scores": torch.cat([part.scores for part in parts]),
        "tide_det_labels": torch.cat([part.labels for part in parts]),
        "tide_det_keys": torch.cat([image_keys[det_image], torch.cat([part.target for part in parts])[:, None]], 1),
        "tide_det_status": torch.cat([part.status.T for part in parts]),
        "tide_det_error": torch.cat([part.error for part in parts]),
        "tide_gt_labels": torch.cat([part.gt_labels for part in parts]),
        "tide_gt_keys": image_keys[gt_image],
        "tide_gt_flags": torch.stack([torch.cat([part.gt_matched for part in parts]),
                                      torch.cat([part.gt_missed for part in parts])], dim=1),
    }


def tide_state_values(records: Mapping[str, Tensor]) -> dict[str, Tensor | dict[str, Tensor]]:
    """:func:`~nobg_metrics.functional.tide_errors`' values (``thresholds="coco"``) from the records of a whole
    dataset, in any order of ranks and batches (images ordered by (key, rank) here; the class checks beforehand
    that no ``image_id`` repeats, as for AP).

    Raises:
        ValueError: no detection and no non-crowd gt was recorded.
    """
    det_keys, gt_keys = records["tide_det_keys"], records["tide_gt_keys"]
    count, device = det_keys.shape[0], det_keys.device
    pairs = torch.cat([det_keys[:, :2], gt_keys])
    image = torch.unique(pairs, dim=0, return_inverse=True)[1] if pairs.shape[0] else pairs[:, 0]
    det_image, gt_image = image[:count], image[count:]
    det_order = torch.sort(det_image, stable=True).indices
    gt_order = torch.sort(gt_image, stable=True).indices
    per_image = torch.bincount(gt_image, minlength=int(image.max()) + 1 if image.numel() else 0)
    gt_start = per_image.cumsum(0) - per_image  # each image's first gt in (key, rank) order
    local = det_keys[:, 2]
    target = torch.where(local >= 0, gt_start[det_image] + local, local)
    flags = records["tide_gt_flags"][gt_order]
    stats = TideStatistics(records["tide_det_labels"][det_order], records["tide_det_scores"][det_order],
                           records["tide_det_status"][det_order].T, records["tide_det_error"][det_order],
                           target[det_order], records["tide_gt_labels"][gt_order], flags[:, 0], flags[:, 1],
                           constant(COCO_THRESHOLDS, device), COCO_THRESHOLDS.index(POS_THRESHOLD))
    return tide_error_values(stats)
