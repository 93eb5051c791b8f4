r"""TIDE's per-image stage: IoU matrices, greedy matching at every threshold, and the error of each negative.

The reference is tidecv 1.0.1 (Bolya et al., ECCV 2020), ``quantify.py``: ``TIDEExample._run`` and
``TIDERun._eval_image``. Per image:

1. detections sorted by descending score (a stable sort: ties keep their input order), the first
   ``max_detections`` kept (over all classes, not per class);
2. IoU of each detection with each non-crowd gt (``mask_utils.iou(..., iscrowd=False)``) and with each crowd gt
   (``iscrowd=True``: ``|d ∩ g| / |d|``);
3. greedy matching in score order: a detection takes the same-class gt of highest remaining IoU (the first on a
   tie) when that IoU is ``>= t``, and the gt leaves the pool;
4. an unmatched detection whose crowd IoU with a crowd gt of its class is ``> t`` (strict) is ignored;
5. at the positive threshold only, each unmatched or ignored detection gets one error, tested in this order
   (``TIDERun._eval_image``): no non-crowd gt in the image → Bkg; ``bg <= max same-class IoU <= pos`` → Loc;
   ``max other-class IoU >= pos`` → Cls; ``max IoU with a matched same-class gt >= pos`` → Dupe;
   ``max IoU <= bg`` → Bkg; else Both. A Cls / Loc error aimed at an unmatched gt (the argmax of the IoU row it
   was tested on) makes that gt "usable" (``BestGTMatch``); unmatched gts that are not usable are Missed.

Matching is sequential by nature (a gt taken by one detection is gone for the next), so it keeps a Python loop over
the detections of an image that can match at all, each step handling every threshold at once; everything else is
tensor operations. Crowd gts here are tidecv's ignore regions (``datasets.COCO`` turns ``iscrowd`` into one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.functional.instance.iou import image_ious, instance_boundaries, mask_counts
from nobg_metrics.ops.threads import one_thread_if_small

ERROR_NAMES = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")
"""tidecv's ``TIDE._error_types`` order (``ClassError, BoxError, OtherError, DuplicateError, BackgroundError,
MissedError``); a detection's ``error`` code is its index here, ``-1`` for a true positive."""
CLS, LOC, BOTH, DUPE, BKG = range(5)


class TideStatistics(NamedTuple):
    """What TIDE needs of a dataset, after matching: flat over the kept detections ``D`` and non-crowd gts ``G``
    of all images, in image order, detections of an image in score order (ties between equal scores are broken
    by this order, as tidecv's insertion order).

    ``status`` :math:`(T, D)` int8 per threshold: 1 matched, 0 unmatched, -1 ignored (crowd);
    ``error`` :math:`(D,)` int8 at the positive threshold (:data:`ERROR_NAMES` index, -1 matched);
    ``target`` :math:`(D,)` int64 the gt (index into the ``gt_*`` rows) a Cls / Loc error could fix, -1 for none;
    ``gt_matched`` / ``gt_missed`` :math:`(G,)` bool at the positive threshold;
    ``thresholds`` :math:`(T,)` float64 and ``positive`` the index of the positive threshold in it.
    """

    labels: Tensor
    scores: Tensor
    status: Tensor
    error: Tensor
    target: Tensor
    gt_labels: Tensor
    gt_matched: Tensor
    gt_missed: Tensor
    thresholds: Tensor
    positive: int


def box_ious(det: Tensor, gt: Tensor, crowd: Tensor) -> Tensor:
    """pycocotools' ``bbIou`` on float64 ``xyxy`` boxes turned into its ``xywh`` (``w = x2 - x1``).

    Args:
        det: :math:`(D, 4)` float64. gt: :math:`(G, 4)` float64. crowd: :math:`(G,)` bool.

    Returns:
        :math:`(D, G)` float64: ``iw * ih / (w_d h_d + w_g h_g - iw * ih)`` (crowd: ``/ (w_d h_d)``), 0 where
        ``iw <= 0`` or ``ih <= 0``.

    Examples:
        >>> d = torch.tensor([[0.0, 0.0, 4.0, 4.0]], dtype=torch.float64)
        >>> g = torch.tensor([[2.0, 0.0, 6.0, 4.0], [0.0, 0.0, 2.0, 2.0]], dtype=torch.float64)
        >>> box_ious(d, g, torch.tensor([False, True]))  # 8 / 24, crowd 4 / 16
        tensor([[0.3333, 0.2500]], dtype=torch.float64)
    """
    dx, dy = det[:, 0, None], det[:, 1, None]
    dw, dh = (det[:, 2] - det[:, 0])[:, None], (det[:, 3] - det[:, 1])[:, None]
    gx, gy, gw, gh = gt[:, 0], gt[:, 1], gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    iw = torch.minimum(dw + dx, gw + gx) - torch.maximum(dx, gx)  # w = fmin(D[2]+D[0], G[2]+G[0]) - fmax(D[0], G[0])
    ih = torch.minimum(dh + dy, gh + gy) - torch.maximum(dy, gy)
    inter = iw * ih
    det_area = dw * dh
    union = torch.where(crowd[None, :], det_area, det_area + gw * gh - inter)  # u = crowd ? da : da + ga - i
    return torch.where((iw > 0) & (ih > 0), inter / union, torch.zeros_like(inter))


def image_iou_matrix(det: Mapping[str, Tensor], gt: Mapping[str, Tensor], keep: Tensor, crowd: Tensor,
                     iou_type: str, dilation_ratio: float) -> Tensor:
    """IoU of the kept detections (``keep``: indices in score order) against all gts of one image.

    Returns:
        :math:`(D, G_{all})` float64; crowd columns hold the crowd IoU ``|d ∩ g| / |d|`` (of the masks in
        ``"boundary"`` mode; non-crowd columns there are ``min(mask IoU, boundary IoU)``).
    """
    if iou_type == "bbox":
        return box_ious(det["boxes"][keep].double(), gt["boxes"].double(), crowd)
    det_masks, gt_masks = det["masks"][keep].bool(), gt["masks"].bool()
    det_flat, gt_flat = det_masks.flatten(1), gt_masks.flatten(1)
    if iou_type == "segm":
        return image_ious(det_flat, gt_flat, mask_counts(det_flat), mask_counts(gt_flat), crowd)
    det_bands, det_area = instance_boundaries(det_masks, dilation_ratio)
    gt_bands, gt_area = instance_boundaries(gt_masks, dilation_ratio)
    return image_ious(det_flat, gt_flat, det_area, gt_area, crowd, det_bands, gt_bands)


def greedy_match(cls_iou: Tensor, thresholds: Tensor) -> tuple[Tensor, Tensor]:
    """tidecv's matching at every threshold: in row (score) order, a detection takes the column of highest
    remaining IoU (the first on a tie) when it is ``>= t``; that column is then zeroed for every later row.

    Args:
        cls_iou: :math:`(D, G)` float64 IoU, 0 between different classes. thresholds: :math:`(T,)` float64.

    Returns:
        ``(matched, gt_matched)``: :math:`(T, D)` and :math:`(T, G)` bool.

    Examples:
        >>> iou = torch.tensor([[0.6, 0.7], [0.0, 0.65]], dtype=torch.float64)
        >>> greedy_match(iou, torch.tensor([0.5, 0.68], dtype=torch.float64))[0]
        tensor([[ True, False],
                [ True, False]])
    """
    count, gts = cls_iou.shape
    steps = thresholds.shape[0]
    matched = torch.zeros((steps, count), dtype=torch.bool, device=cls_iou.device)
    gt_matched = torch.zeros((steps, gts), dtype=torch.bool, device=cls_iou.device)
    if count == 0 or gts == 0:
        return matched, gt_matched
    pool = cls_iou.unsqueeze(0).repeat(steps, 1, 1)  # iou_buffer, one per threshold
    rows = torch.arange(steps, device=cls_iou.device)
    can_match = (cls_iou.amax(dim=1) >= thresholds.min()).nonzero().flatten().tolist()
    for det in can_match:  # sequential: each match removes a gt from the pool of the next detections
        best = pool[:, det, :].argmax(dim=1)  # np.argmax: the first maximum
        hit = pool[rows, det, best] >= thresholds
        matched[:, det] = hit
        gt_matched[rows[hit], best[hit]] = True
        pool[rows[hit], :, best[hit]] = 0.0
    return matched, gt_matched


def classify_errors(iou: Tensor, same: Tensor, status: Tensor, gt_matched: Tensor, positive: float,
                    background: float) -> tuple[Tensor, Tensor]:
    """The error of each unmatched or ignored detection of one image (``TIDERun._eval_image``'s tests in order).

    Args:
        iou: :math:`(D, G)` float64 non-crowd IoU. same: :math:`(D, G)` bool same class. status: :math:`(D,)` int8.
        gt_matched: :math:`(G,)` bool. positive, background: tidecv's ``pos_thresh`` and ``bg_thresh``.

    Returns:
        ``(error, target)``: :math:`(D,)` int8 (-1 matched) and :math:`(D,)` int64 the unmatched gt a Cls / Loc
        error points at (``BestGTMatch``), else -1.
    """
    count, gts = iou.shape
    none = torch.full((count,), -1, dtype=torch.int64, device=iou.device)
    if gts == 0:  # no non-crowd gt in the image: every negative is background
        error = torch.full((count,), BKG, dtype=torch.int8, device=iou.device)
        return torch.where(status == 1, torch.full_like(error, -1), error), none
    zero = torch.zeros_like(iou)
    cls_iou = torch.where(same, iou, zero)
    loc_value, loc_gt = cls_iou.max(dim=1)  # gt_cls_iou[pred_idx, :].argmax()
    cls_value, cls_gt = torch.where(same, zero, iou).max(dim=1)  # gt_noncls_iou
    dupe_value = torch.where(same & gt_matched[None, :], iou, zero).amax(dim=1)  # gt_used_cls
    any_value = iou.amax(dim=1)
    is_loc = (background <= loc_value) & (loc_value <= positive)
    error = torch.full((count,), BOTH, dtype=torch.int64, device=iou.device)
    error = torch.where(any_value <= background, BKG, error)
    error = torch.where(dupe_value >= positive, DUPE, error)
    error = torch.where(cls_value >= positive, CLS, error)
    error = torch.where(is_loc, LOC, error)
    error = torch.where(status == 1, -1, error)
    aim = torch.where(is_loc, loc_gt, cls_gt)
    fixable = ((error == LOC) | (error == CLS)) & ~gt_matched[aim]  # BestGTMatch only for a gt not in use
    return error.to(torch.int8), torch.where(fixable, aim, none)


def _sorted_kept(det: Mapping[str, Tensor], max_detections: int) -> Tensor:
    """Indices of the kept detections: a stable sort by descending score, the first ``max_detections``."""
    order = torch.sort(det["scores"].double(), descending=True, stable=True).indices
    return order[:max_detections]


def image_statistics(det: Mapping[str, Tensor], gt: Mapping[str, Tensor], *, iou_type: str, thresholds: Tensor,
                     positive: int, background: float, max_detections: int, dilation_ratio: float
                     ) -> TideStatistics:
    """:class:`TideStatistics` of one image (``det`` / ``gt``: torchmetrics' detection dicts)."""
    device = gt["labels"].device
    keep = _sorted_kept(det, max_detections)
    labels = det["labels"][keep].long()
    gt_labels_all = gt["labels"].long()
    crowd = gt.get("iscrowd")
    crowd = torch.zeros_like(gt_labels_all, dtype=torch.bool) if crowd is None else crowd.bool()
    pixels = 0 if iou_type == "bbox" else gt["masks"].shape[-2] * gt["masks"].shape[-1]
    with one_thread_if_small(pixels, device):
        iou_all = image_iou_matrix(det, gt, keep, crowd, iou_type, dilation_ratio)
    with one_thread_if_small(iou_all.numel() * thresholds.shape[0], device):  # many tiny ops: one thread
        return match_and_classify(iou_all, labels, det["scores"][keep].double(), gt_labels_all, crowd, thresholds,
                                  positive, background)


def match_and_classify(iou_all: Tensor, labels: Tensor, scores: Tensor, gt_labels_all: Tensor, crowd: Tensor,
                       thresholds: Tensor, positive: int, background: float) -> TideStatistics:
    """:class:`TideStatistics` of one image from its IoU matrix (steps 3-5 of the module notes).

    Args:
        iou_all: :math:`(D, G_{all})` float64, the kept detections (score order) against every gt, crowd columns
            ``|d ∩ g| / |d|``. labels, scores: :math:`(D,)` int64 / float64. gt_labels_all, crowd: :math:`(G_{all},)`.
        thresholds: :math:`(T,)` float64; positive: the index of the positive threshold; background: ``bg_thresh``.
    """
    iou, crowd_iou = iou_all[:, ~crowd], iou_all[:, crowd]
    gt_labels, crowd_labels = gt_labels_all[~crowd], gt_labels_all[crowd]
    same = labels[:, None] == gt_labels[None, :]
    matched, gt_matched = greedy_match(torch.where(same, iou, torch.zeros_like(iou)), thresholds)
    crowd_same = labels[:, None] == crowd_labels[None, :]
    inside_crowd = ((crowd_iou[None] > thresholds[:, None, None]) & crowd_same[None]).any(dim=2)  # strict >
    status = matched.to(torch.int8) - (~matched & inside_crowd).to(torch.int8)
    error, target = classify_errors(iou, same, status[positive], gt_matched[positive], float(thresholds[positive]),
                                    background)
    usable = torch.zeros_like(gt_labels, dtype=torch.bool)
    usable[target[target >= 0]] = True
    return TideStatistics(labels, scores, status, error, target, gt_labels, gt_matched[positive],
                          ~gt_matched[positive] & ~usable, thresholds, positive)


def merge_statistics(parts: Sequence[TideStatistics]) -> TideStatistics:
    """Concatenate the statistics of consecutive images (or batches), in order; gt indices are shifted."""
    first = parts[0]
    offsets = torch.tensor([0] + [part.gt_labels.shape[0] for part in parts[:-1]]).cumsum(0).tolist()
    targets = [torch.where(part.target >= 0, part.target + offset, part.target) for part, offset in zip(parts, offsets)]
    return TideStatistics(torch.cat([part.labels for part in parts]), torch.cat([part.scores for part in parts]),
                          torch.cat([part.status for part in parts], dim=1), torch.cat([part.error for part in parts]),
                          torch.cat(targets), torch.cat([part.gt_labels for part in parts]),
                          torch.cat([part.gt_matched for part in parts]), torch.cat([part.gt_missed for part in parts]),
                          first.thresholds, first.positive)
