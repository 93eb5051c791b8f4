"""Reference HQ-SAM evaluation (Ke et al., NeurIPS 2023; SysCV/sam-hq ``train/train.py`` ``compute_iou``,
``compute_boundary_iou`` and ``train/utils/misc.py`` ``mask_iou``, ``boundary_iou``), written from
docs/references.md ("HQ-SAM protocol"): torch for the mask IoU, OpenCV + numpy for the boundary, one image at a
time, validation batch size 1 (the dataset value is then the mean of per-image values).

- mask IoU: ``(pred > 0)`` of logits, or here ``pred > threshold`` of probabilities; ``gt > 128``;
  ``|I| / |U|`` as torch int64 tensors, whose true division is float32; 0/0 is NaN.
- boundary IoU: the boundary-iou-api band (:mod:`tests.reference.boundary_iou_ref`) of both masks,
  numpy ``|I| / |U|`` (float64, NaN for 0/0), then ``torch.tensor(...).float()``.

``float32=False`` keeps the float64 quotients (the definition without HQ-SAM's rounding).
"""

from __future__ import annotations

import numpy as np
import torch

from tests.reference.boundary_iou_ref import band_counts


def mask_iou(pred_mask: np.ndarray, gt_u8: np.ndarray, float32: bool = True) -> float:
    """Per-image mask IoU of a bool prediction against a uint8 gt (``> 128``)."""
    pred = torch.from_numpy(pred_mask).int()
    label = torch.from_numpy(gt_u8 > 128).int()
    intersection = ((label * pred) > 0).sum()
    union = ((label + pred) > 0).sum()
    if float32:
        return float(intersection / union)  # int64 / int64 -> float32, 0/0 -> nan
    return float(intersection.double() / union.double())


def boundary_iou(pred_mask: np.ndarray, gt_u8: np.ndarray, dilation_ratio: float = 0.02, float32: bool = True) -> float:
    """Per-image boundary IoU of a bool prediction against a uint8 gt (``> 128``)."""
    intersection, union = band_counts(gt_u8 > 128, pred_mask, dilation_ratio)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.int64(intersection) / np.int64(union)
    return float(torch.tensor(value).float()) if float32 else float(value)


def evaluate(preds: list[np.ndarray], gts_u8: list[np.ndarray], threshold: float = 0.5, dilation_ratio: float = 0.02,
             float32: bool = True) -> dict[str, object]:
    """``{"iou", "boundary_iou"}`` dataset means and ``{"ious", "boundary_ious"}`` per-image values.

    ``preds`` are float probabilities in [0, 1] (binarised ``> threshold``) or bool masks.
    """
    masks = [p if p.dtype == bool else p > threshold for p in preds]
    ious = [mask_iou(m, g, float32) for m, g in zip(masks, gts_u8)]
    bious = [boundary_iou(m, g, dilation_ratio, float32) for m, g in zip(masks, gts_u8)]
    total_iou = total_biou = 0.0
    for iou, biou in zip(ious, bious):  # MetricLogger: total += value (Python floats), / count
        total_iou, total_biou = total_iou + iou, total_biou + biou
    return {"iou": total_iou / len(ious), "boundary_iou": total_biou / len(bious), "ious": ious,
            "boundary_ious": bious}
