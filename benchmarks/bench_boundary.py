"""Boundary IoU vs the boundary-iou-api reference (cv2 port, one image at a time), and the erosion op
alone vs ``cv2.erode`` with a (2d+1)² kernel and a zero border — uint8 inputs, d = round(0.02 · diagonal)."""

from __future__ import annotations

import cv2
import numpy as np
import torch
from harness import Case, sample_uint8

import nobg_metrics as nm
from nobg_metrics.ops.band_width import dilation_radius
from nobg_metrics.ops.morphology import erode


def _mask_to_boundary(mask: np.ndarray, dilation: int) -> np.ndarray:
    """The reference's band: pad 1 with zeros, erode d times by 3x3, crop, subtract (docs/references.md)."""
    height, width = mask.shape
    padded = cv2.copyMakeBorder(mask, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=dilation)
    return mask - eroded[1:height + 1, 1:width + 1]


def reference_boundary_iou(preds: np.ndarray, gts: np.ndarray, dilation_ratio: float = 0.02) -> float:
    """mBIoU the HQ-SAM way: binarise (> 128 on 0..255), bands, IoU per image, plain mean."""
    values = []
    for pred, gt in zip(preds, gts):
        height, width = gt.shape
        dilation = max(1, round(dilation_ratio * np.sqrt(height**2 + width**2)))
        gt_band = _mask_to_boundary((gt > 128).astype(np.uint8), dilation)
        dt_band = _mask_to_boundary((pred > 128).astype(np.uint8), dilation)
        values.append(((gt_band * dt_band) > 0).sum() / ((gt_band + dt_band) > 0).sum())
    return float(np.mean(values))


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    pred_t = torch.from_numpy(preds).to(device)
    gt_t = torch.from_numpy(gts).to(device)
    metric = nm.BoundaryIoU(threshold=128 / 255, validate_args=False).to(device)
    radius = dilation_radius(size, size, 0.02)
    masks = gt_t > 128
    kernel = np.ones((2 * radius + 1, 2 * radius + 1), np.uint8)
    masks_np = [(gt > 128).astype(np.uint8) for gt in gts]

    def ours():
        metric.reset()
        metric.update(pred_t, gt_t)
        return metric.compute()

    def ref_erode():
        return [cv2.erode(m, kernel, borderType=cv2.BORDER_CONSTANT, borderValue=0) for m in masks_np]

    return [
        Case("boundary_iou", size, device, ours, lambda: reference_boundary_iou(preds, gts),
             "boundary-iou-api (cv2)", batch),
        Case(f"erode d={radius}", size, device, lambda: erode(masks, radius), ref_erode,
             f"cv2.erode {2 * radius + 1}² zero border", batch),
    ]
