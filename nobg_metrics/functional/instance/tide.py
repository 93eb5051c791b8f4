r"""TIDE error analysis of instance detections (Bolya et al., "TIDE: A General Toolbox for Identifying Object
Detection Errors", ECCV 2020), equal to tidecv 1.0.1, with box, mask and Boundary IoU.

TIDE splits what keeps AP at one IoU threshold below 100 into six error types — Cls, Loc, Both, Dupe, Bkg, Miss —
each measured as the AP gained when only the errors of that type are fixed (dAP, in AP points), and two special
ones: FalsePos (the AP with every false positive scored below every true positive) and FalseNeg (the AP with
every missed gt removed). The stages, each a module:

- :mod:`~nobg_metrics.functional.instance.tide_match`: per image, IoU, greedy matching at every threshold and
  the error of each negative, kept as flat per-detection statistics (:class:`TideStatistics`);
- :mod:`~nobg_metrics.functional.instance.tide_ap`: TIDE's own 101-point AP and the fixes, from the statistics.

``tide_error_statistics`` returns the statistics of a batch (batches in image order concatenate with
``merge_statistics``); ``tide_error_values`` turns them into the values, so a metric class can keep the
statistics and never look at a mask twice. ``iou_type="boundary"`` is new: the pair IoU is Boundary AP's
``min(mask IoU, boundary IoU)`` (Cheng et al., CVPR 2021), so Loc then counts detections whose boundary, not only
their area, is off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import torch
from torch import Tensor

from nobg_metrics.functional.instance.tide_ap import tide_values
from nobg_metrics.functional.instance.tide_match import TideStatistics, image_statistics, merge_statistics

__all__ = ["tide_errors"]

IouType = Literal["bbox", "segm", "boundary"]
COCO_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
"""tidecv's ``TIDE.COCO_THRESHOLDS`` (``evaluate_range``'s default)."""


def _check_inputs(preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]], iou_type: str,
                  thresholds: Sequence[float], pos_threshold: float, background_threshold: float,
                  max_detections: int) -> None:
    if iou_type not in ("bbox", "segm", "boundary"):
        raise ValueError(f"`iou_type` must be 'bbox', 'segm' or 'boundary', got {iou_type!r}")
    if len(preds) != len(target):
        raise ValueError(f"`preds` and `target` must hold one dict per image each; got {len(preds)} and {len(target)}")
    if not 0 <= background_threshold <= pos_threshold <= 1:
        raise ValueError(f"expected 0 <= background_threshold <= pos_threshold <= 1, got {background_threshold} and "
                         f"{pos_threshold}")
    if pos_threshold not in thresholds:
        raise ValueError(f"`pos_threshold` {pos_threshold} must be one of `thresholds` {list(thresholds)}")
    if max_detections < 1:
        raise ValueError(f"`max_detections` must be at least 1, got {max_detections}")
    key = "boxes" if iou_type == "bbox" else "masks"
    for index, (det, gt) in enumerate(zip(preds, target)):
        for name, item, needed in (("preds", det, (key, "scores", "labels")), ("target", gt, (key, "labels"))):
            missing = [field for field in needed if field not in item]
            if missing:
                raise ValueError(f"`{name}[{index}]` misses {missing} (iou_type={iou_type!r})")
        if key == "masks" and det["masks"].shape[1:] != gt["masks"].shape[1:]:
            raise ValueError(f"image {index}: detection masks {tuple(det['masks'].shape[1:])} and gt masks "
                             f"{tuple(gt['masks'].shape[1:])} differ in size")


def tide_error_statistics(preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]], *,
                        iou_type: IouType, thresholds: Sequence[float], pos_threshold: float,
                        background_threshold: float, max_detections: int, dilation_ratio: float) -> TideStatistics:
    """The matching statistics of a batch of images (:class:`TideStatistics`, images in the given order)."""
    _check_inputs(preds, target, iou_type, thresholds, pos_threshold, background_threshold, max_detections)
    device = target[0]["labels"].device if len(target) else torch.device("cpu")
    steps = torch.tensor([float(value) for value in thresholds], dtype=torch.float64, device=device)
    positive = [float(value) for value in thresholds].index(pos_threshold)
    parts = [image_statistics(det, gt, iou_type=iou_type, thresholds=steps, positive=positive,
                              background=background_threshold, max_detections=max_detections,
                              dilation_ratio=dilation_ratio) for det, gt in zip(preds, target)]
    if not parts:
        raise ValueError("`preds` and `target` hold no image")
    return merge_statistics(parts)


def tide_error_values(stats: TideStatistics) -> dict[str, Tensor | dict[str, Tensor]]:
    """The values from the statistics of a whole dataset (in image order)."""
    if stats.labels.numel() == 0 and stats.gt_labels.numel() == 0:
        raise ValueError("TIDE needs at least one detection or one non-crowd gt (tidecv divides by zero classes)")
    return tide_values(stats)


def tide_errors(preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]], *,
                iou_type: IouType = "bbox", pos_threshold: float = 0.5, background_threshold: float = 0.1,
                max_detections: int = 100, dilation_ratio: float = 0.02,
                thresholds: Sequence[float] | Literal["coco"] | None = None) -> dict[str, Tensor | dict[str, Tensor]]:
    r"""TIDE's AP and error breakdown, as tidecv 1.0.1's ``TIDE(pos_threshold, background_threshold, mode)``.

    Args:
        preds: one dict per image: ``"boxes"`` :math:`(D, 4)` ``xyxy`` (``iou_type="bbox"``) or ``"masks"``
            :math:`(D, H, W)` bool, ``"scores"`` :math:`(D,)`, ``"labels"`` :math:`(D,)` int.
        target: one dict per image: ``"boxes"`` :math:`(G, 4)` or ``"masks"`` :math:`(G, H, W)`, ``"labels"``
            :math:`(G,)`, optional ``"iscrowd"`` :math:`(G,)` (crowd gts are tidecv's ignore regions).
        iou_type: ``"bbox"`` (``TIDE.BOX``), ``"segm"`` (``TIDE.MASK``) or ``"boundary"``: ``min(mask IoU,
            Boundary IoU)`` with the band ``max(1, round(dilation_ratio * image diagonal))``.
        pos_threshold: IoU at which a detection is a true positive (and at which errors are analysed).
        background_threshold: IoU at or below which a detection is background.
        max_detections: detections kept per image (highest scores, over all classes).
        dilation_ratio: the Boundary IoU band, as a fraction of the image diagonal (``"boundary"`` only).
        thresholds: IoU thresholds for ``evaluate_range`` (``"coco"``: 0.5, 0.55, ..., 0.95); ``None``: only
            ``pos_threshold``. ``pos_threshold`` must be one of them.

    Returns:
        ``"ap"``: TIDE's AP at ``pos_threshold`` (``TIDERun.ap``); ``"main"``: ``{"Cls", "Loc", "Both", "Dupe",
        "Bkg", "Miss"}`` dAP (``get_main_errors()``); ``"special"``: ``{"FalsePos", "FalseNeg"}`` dAP
        (``get_special_errors()``); ``"counts"``: errors of each main type (``count_errors()``);
        ``"thresholds"`` :math:`(T,)`, ``"ap_per_threshold"`` :math:`(T,)` and their mean ``"ap_range"``. All
        float64 tensors (counts int64), AP in points (0-100).

    Examples:
        >>> box = torch.tensor([[0.0, 0.0, 10.0, 10.0]])
        >>> target = [{"boxes": box, "labels": torch.tensor([1])}, {"boxes": box, "labels": torch.tensor([2])}]
        >>> preds = [{"boxes": box, "scores": torch.tensor([0.9]), "labels": torch.tensor([1])},
        ...          {"boxes": box + 4.0, "scores": torch.tensor([0.8]), "labels": torch.tensor([2])}]
        >>> out = tide_errors(preds, target)
        >>> round(float(out["ap"]), 2), round(float(out["main"]["Loc"]), 2), int(out["counts"]["Loc"])
        (50.0, 50.0, 1)
    """
    steps = COCO_THRESHOLDS if thresholds == "coco" else (pos_threshold,) if thresholds is None else thresholds
    stats = tide_error_statistics(preds, target, iou_type=iou_type, thresholds=tuple(steps),
                                  pos_threshold=pos_threshold, background_threshold=background_threshold,
                                  max_detections=max_detections, dilation_ratio=dilation_ratio)
    return tide_error_values(stats)
