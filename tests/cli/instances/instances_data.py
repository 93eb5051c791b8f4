"""Generated COCO / LVIS annotation and results files for the ``instances`` command's tests (numpy + pycocotools).

:func:`make_dataset` draws images of odd sizes (45 x 60, 105 x 140: 0.02 * diagonal = 1.5 and 3.5, the .5 roundings)
with polygon ground truths (star-like outlines, objects in several parts, vertices outside the image), crowd
regions as uncompressed RLE, an image without annotations, and detections as an instance model writes them:
compressed RLEs of shifted / grown / shrunk copies of the ground truths, exact duplicates with the same score,
tied scores, false positives, optionally with ``bbox`` (detectron2 writes one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

SIZES = ((45, 60), (37, 53), (105, 140), (64, 48), (30, 31))


def _mask_utils() -> Any:
    import pycocotools.mask as mask_utils

    return mask_utils


def _star(rng: np.random.Generator, cx: float, cy: float, radius: float) -> list[float]:
    k = int(rng.integers(5, 16))
    angles = np.sort(rng.uniform(0, 2 * np.pi, k))
    radii = radius * rng.uniform(0.5, 1.0, k)
    return np.round(np.stack([cx + radii * np.cos(angles), cy + radii * np.sin(angles)], 1), 2).ravel().tolist()


def _decode(segmentation: Any, h: int, w: int) -> np.ndarray:
    mask_utils = _mask_utils()
    if isinstance(segmentation, list):
        rle = mask_utils.merge(mask_utils.frPyObjects(segmentation, h, w))
    elif isinstance(segmentation["counts"], list):
        rle = mask_utils.frPyObjects(segmentation, h, w)
    else:
        rle = segmentation
    return mask_utils.decode(rle).astype(bool)


def _rle(mask: np.ndarray) -> dict:
    rle = _mask_utils().encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": rle["size"], "counts": rle["counts"].decode()}


def _uncompressed(mask: np.ndarray) -> dict:
    flat = mask.T.ravel()
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    edges = np.concatenate([[0], change, [flat.size]])
    counts = np.diff(edges).tolist()
    return {"size": list(mask.shape), "counts": ([0, *counts]) if flat[0] else counts}


def _variant(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    out = np.roll(mask, (int(rng.integers(-2, 3)), int(rng.integers(-2, 3))), (0, 1))
    if rng.random() < 0.3:
        out = out | np.roll(out, 1, 0) | np.roll(out, 1, 1)
    elif rng.random() < 0.3:
        out = out & np.roll(out, 1, 0) & np.roll(out, 1, 1)
    return out


def make_dataset(seed: int = 0, *, sizes: tuple[tuple[int, int], ...] = SIZES, categories: int = 3,
                 with_bbox: bool = True, lvis: bool = False, ignore: bool = False) -> tuple[dict, list[dict]]:
    """A ``(gt, results)`` pair as JSON-ready Python objects (image ids are not in file order; ``ignore``: some
    non-crowd gts carry ``"ignore": 1``)."""
    rng = np.random.default_rng(seed)
    images, annotations, results = [], [], []
    ids = rng.permutation(len(sizes)) * 7 + 3  # ids out of order and not 1..n
    for (h, w), image_id in zip(sizes, ids.tolist()):
        image: dict[str, Any] = {"id": image_id, "height": h, "width": w, "file_name": f"{image_id}.jpg"}
        objects = [] if image_id == ids[1] else range(int(rng.integers(2, 6)))  # one image without annotations
        for _ in objects:
            category = int(rng.integers(1, categories + 1))
            crowd = rng.random() < 0.15
            if crowd:
                mask = np.zeros((h, w), bool)
                y, x = int(rng.integers(0, max(1, h - 4))), int(rng.integers(0, max(1, w - 4)))
                mask[y:y + int(rng.integers(4, h // 2 + 5)), x:x + int(rng.integers(4, w // 2 + 5))] = True
                segmentation: Any = _uncompressed(mask)
            else:
                parts = int(rng.choice([1, 1, 1, 2, 3]))
                radius = float(rng.uniform(3, max(4.0, min(h, w) / 2)))
                cx, cy = float(rng.uniform(-2, w + 2)), float(rng.uniform(-2, h + 2))
                segmentation = [_star(rng, cx + 1.5 * radius * p, cy, radius / (1 + p)) for p in range(parts)]
                mask = _decode(segmentation, h, w)
            area = float(mask.sum()) + (0.25 if rng.random() < 0.5 else 0.0)  # COCO's areas are not pixel counts
            annotations.append({"id": len(annotations) + 101, "image_id": image_id, "category_id": category,
                                "segmentation": segmentation, "area": area, "iscrowd": int(crowd),
                                "bbox": [0, 0, 1, 1]})
            if ignore and not crowd and rng.random() < 0.3:
                annotations[-1]["ignore"] = 1
            for _ in range(int(rng.integers(0, 3))):
                det = _variant(rng, mask)
                results.append({"image_id": image_id, "category_id": category, "mask": det,
                                "score": float(np.round(rng.uniform(0.05, 1.0), 1))})  # tied scores
                if rng.random() < 0.2:  # an exact duplicate with the same score
                    results.append(dict(results[-1]))
        for _ in range(int(rng.integers(1, 4))):  # false positives
            det = np.zeros((h, w), bool)
            y, x = int(rng.integers(0, max(1, h - 2))), int(rng.integers(0, max(1, w - 2)))
            det[y:y + int(rng.integers(1, h // 3 + 2)), x:x + int(rng.integers(1, w // 3 + 2))] = True
            results.append({"image_id": image_id, "category_id": int(rng.integers(1, categories + 1)), "mask": det,
                            "score": float(np.round(rng.uniform(0.05, 1.0), 2))})
        if lvis:
            image["neg_category_ids"] = [c for c in range(1, categories + 1) if rng.random() < 0.3]
            image["not_exhaustive_category_ids"] = [c for c in range(1, categories + 1) if rng.random() < 0.2]
        images.append(image)
    order = rng.permutation(len(results))  # results in no particular image order
    shuffled = []
    for index in order.tolist():
        entry = dict(results[index])
        mask = entry.pop("mask")
        entry["segmentation"] = _rle(mask)
        if with_bbox:
            box = _mask_utils().toBbox(entry["segmentation"]).tolist()
            entry["bbox"] = [box[0] - 0.5, box[1] + 0.25, box[2] + float(rng.uniform(-1, 2)), box[3] + 0.5]
        shuffled.append(entry)
    cats: list[dict[str, Any]] = [{"id": c, "name": f"class{c}", "supercategory": "thing"}
                                  for c in range(categories, 0, -1)]
    if lvis:
        for c in cats:
            c["frequency"] = "rcf"[c["id"] % 3]
    return {"images": images, "annotations": annotations, "categories": cats}, shuffled


def write_dataset(folder: Path, gt: dict, results: list[dict]) -> tuple[Path, Path]:
    """``folder/gt.json`` and ``folder/dt.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    gt_path.write_text(json.dumps(gt), encoding="utf-8")
    dt_path.write_text(json.dumps(results), encoding="utf-8")
    return gt_path, dt_path
