"""The ``instances`` command's mask codec vs pycocotools: one image's detections (compressed RLE strings, as
detectron2 writes them) and ground truths (polygons traced from real shapes, several parts per object) decoded to
``(N, H, W)`` masks. pycocotools' side includes turning its ``(H, W, N)`` Fortran-order array into the same
``(N, H, W)`` torch tensor (what the metric takes). The ``transposed`` case is what ``nobg-metrics instances``
runs: masks ``(N, W, H)``, the column-major layout, without the transposing copy."""

from __future__ import annotations

import cv2
import numpy as np
import pycocotools.mask as mask_utils
import torch
from harness import Case
from shapes import KINDS, make_gt

from nobg_metrics.io.coco.masks import segmentation_masks

DETECTIONS = 20
"""Detections per image (COCO val with a Mask R-CNN: ~20 above the usual 0.05 score threshold)."""


def _objects(size: int, count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    masks = []
    for i in range(count):
        side = int(size * rng.uniform(0.1, 0.6))
        patch = make_gt(KINDS[(seed + i) % len(KINDS)], (side, max(3, int(side * rng.uniform(0.6, 1.4)))), rng,
                        antialiased=False) > 128
        mask = np.zeros((size, size), bool)
        top, left = rng.integers(0, size - patch.shape[0] + 1), rng.integers(0, max(1, size - patch.shape[1] + 1))
        mask[top:top + patch.shape[0], left:left + patch.shape[1]] = patch[:, : size - left]
        masks.append(mask)
    return masks


def _polygons(mask: np.ndarray) -> list[list[float]]:
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    polygons = [c.reshape(-1).astype(float).tolist() for c in contours if len(c) >= 3]
    return polygons or [[0.0, 0.0, 1.0, 0.0, 1.0, 1.0]]


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    masks = _objects(size, DETECTIONS, seed)
    rles = [mask_utils.encode(np.asfortranarray(m.astype(np.uint8))) for m in masks]
    strings = [{"size": r["size"], "counts": r["counts"].decode()} for r in rles]
    gts = [_polygons(m) for m in masks[: max(1, DETECTIONS // 3)]]  # ~7 gts per image

    def reference_rle() -> torch.Tensor:
        return torch.from_numpy(mask_utils.decode(rles)).permute(2, 0, 1).contiguous().bool()

    def reference_polygons() -> torch.Tensor:
        decoded = [mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(p, size, size))) for p in gts]
        return torch.from_numpy(np.stack(decoded)).bool()

    return [
        Case(f"coco rle decode x{DETECTIONS}", size, "cpu", lambda: segmentation_masks(strings, size, size),
             reference_rle, "pycocotools decode", 1),
        Case(f"coco polygons x{len(gts)}", size, "cpu", lambda: segmentation_masks(gts, size, size),
             reference_polygons, "pycocotools frPyObjects+merge+decode", 1),
        Case(f"coco rle decode x{DETECTIONS} transposed", size, "cpu",
             lambda: segmentation_masks(strings, size, size, transposed=True), reference_rle, "pycocotools decode", 1),
    ]
