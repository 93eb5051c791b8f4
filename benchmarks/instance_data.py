"""COCO-val-like instance segmentation data (seeded, no files): real-looking object masks, detections of them.

:func:`make_images` draws images of given sizes, each holding ~``instances`` ground-truth objects of a few
categories and ~``detections`` detections. Objects are the shapes of :mod:`benchmarks.shapes` (person, animal,
text, blobs, large) drawn into a box whose side is log-uniform between a few pixels and most of the image (so the
COCO small / medium / large ranges are all populated) and pasted at a random position (boxes may leave the image:
the object is cut by the border). A few gts are crowd regions. Detections are what an instance segmentation
model outputs: a degraded copy of a gt (the prediction of :func:`benchmarks.shapes.make_prediction` at its box,
binarised; sometimes shifted), exact duplicates with the same score, near-duplicates, false positives of other
categories or at empty places, and scores with ties (some are rounded to two decimals).

:func:`to_coco` turns the images into what pycocotools, faster-coco-eval and boundary-iou-api read: a gt dataset
``dict`` (RLE segmentations, ``area``, ``iscrowd``) and a results ``list`` (``segmentation`` RLE, ``score``,
``category_id``, ``image_id``; optionally ``bbox``). :func:`to_torch` gives the ``update`` dicts of
``nobg_metrics.MeanAveragePrecision`` in the same order, so image ``i`` has ``image_id = i + 1`` in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from benchmarks.shapes import KINDS, make_gt, make_prediction


@dataclass
class InstanceImage:
    """One image: gt and detection masks as ``(N, H, W)`` bool arrays with their per-object fields."""

    height: int
    width: int
    gt_masks: np.ndarray
    gt_labels: np.ndarray
    gt_crowd: np.ndarray
    dt_masks: np.ndarray
    dt_scores: np.ndarray
    dt_labels: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)


def _object(rng: np.random.Generator, height: int, width: int, max_side: float) -> tuple[np.ndarray, tuple[int, int]]:
    """A real-shape object in a box of log-uniform size and its top-left corner (may lie outside the image)."""
    side_h = int(np.exp(rng.uniform(np.log(4), np.log(max(5.0, max_side * height)))))
    side_w = int(np.clip(side_h * np.exp(rng.uniform(-0.6, 0.6)), 3, 2 * width))
    kind = KINDS[int(rng.integers(len(KINDS) - 1))] if rng.random() < 0.9 else "large"  # text/blobs/... all kinds
    gt = make_gt(kind, (max(side_h, 3), side_w), rng, antialiased=False)
    top = int(rng.integers(-side_h // 4, max(1, height - 3 * side_h // 4)))
    left = int(rng.integers(-side_w // 4, max(1, width - 3 * side_w // 4)))
    return gt, (top, left)


def _paste(
    patch: np.ndarray, corner: tuple[int, int], height: int, width: int, shift: tuple[int, int] = (0, 0)
) -> np.ndarray:
    """The ``patch > 128`` pixels placed at ``corner + shift`` in an ``H x W`` frame, cut by the border."""
    out = np.zeros((height, width), bool)
    top, left = corner[0] + shift[0], corner[1] + shift[1]
    ph, pw = patch.shape
    y0, x0, y1, x1 = max(0, top), max(0, left), min(height, top + ph), min(width, left + pw)
    if y1 > y0 and x1 > x0:
        out[y0:y1, x0:x1] = patch[y0 - top:y1 - top, x0 - left:x1 - left] > 128
    return out


def _degrade_simply(patch: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A cheap stand-in for a model's mask of ``patch``: grown or shrunk by one pixel here and there (tests)."""
    mask = patch > 128
    padded = np.pad(mask, 1)
    grown = padded[1:-1, 1:-1] | padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]
    shrunk = padded[1:-1, 1:-1] & padded[:-2, 1:-1] & padded[2:, 1:-1] & padded[1:-1, :-2] & padded[1:-1, 2:]
    noise = rng.random(mask.shape)
    out = np.where(noise < 0.3, grown, np.where(noise > 0.8, shrunk, mask))
    return np.where(out, 255, 0).astype(np.uint8)


def make_image(rng: np.random.Generator, height: int, width: int, instances: float = 7.0, detections: float = 20.0,
               categories: int = 80, crowd_rate: float = 0.03, max_side: float = 0.7,
               degrade: str = "model") -> InstanceImage:
    """One COCO-like image (see the module notes); ``degrade="simple"`` makes detections cheaply (tests)."""
    n_gt = int(rng.poisson(instances))
    present = rng.choice(categories, size=max(1, min(categories, int(rng.integers(1, 5)))), replace=False)
    gt_masks, gt_labels, gt_crowd, sources = [], [], [], []
    for _ in range(n_gt):
        patch, corner = _object(rng, height, width, max_side)
        mask = _paste(patch, corner, height, width)
        gt_masks.append(mask)
        gt_labels.append(int(rng.choice(present)))
        gt_crowd.append(bool(rng.random() < crowd_rate))
        sources.append((patch, corner))
    dt_masks, dt_scores, dt_labels = [], [], []
    n_dt = max(0, int(rng.poisson(detections)))
    while len(dt_masks) < n_dt:
        choice = rng.random()
        if sources and choice < 0.6:  # a detection of a gt: degraded, sometimes shifted, sometimes duplicated
            index = int(rng.integers(len(sources)))
            patch, corner = sources[index]
            if degrade == "simple" or min(patch.shape) < 4:
                pred = _degrade_simply(patch, rng)
            else:
                pred = make_prediction(patch, rng)
            shift = (int(rng.integers(-2, 3)), int(rng.integers(-2, 3))) if rng.random() < 0.3 else (0, 0)
            mask = _paste(pred, corner, height, width, shift)
            label = gt_labels[index] if rng.random() < 0.9 else int(rng.integers(categories))
            score = float(rng.uniform(0.3, 1.0))
            copies = 2 if rng.random() < 0.1 else 1  # an exact duplicate with the same score
        else:  # a false positive: another object somewhere, of a present or a random category
            patch, corner = _object(rng, height, width, max_side * 0.6)
            mask = _paste(patch, corner, height, width)
            label = int(rng.choice(present)) if rng.random() < 0.7 else int(rng.integers(categories))
            score = float(rng.uniform(0.0, 0.8))
            copies = 1
        if rng.random() < 0.3:
            score = round(score, 2)  # ties between detections, within and across images
        for _ in range(copies):
            dt_masks.append(mask)
            dt_scores.append(score)
            dt_labels.append(label)
    empty = np.zeros((0, height, width), bool)
    return InstanceImage(
        height, width,
        np.stack(gt_masks) if gt_masks else empty, np.array(gt_labels, np.int64), np.array(gt_crowd, bool),
        np.stack(dt_masks) if dt_masks else empty, np.array(dt_scores, np.float64), np.array(dt_labels, np.int64),
    )


def make_images(count: int, sizes: list[tuple[int, int]], seed: int = 0, **options: Any) -> list[InstanceImage]:
    """``count`` images; image ``i`` has size ``sizes[i % len(sizes)]`` and randomness ``default_rng([seed, i])``."""
    return [make_image(np.random.default_rng([seed, i]), *sizes[i % len(sizes)], **options) for i in range(count)]


def to_torch(images: list[InstanceImage], device: str = "cpu", image_ids: bool = False,
             keys: tuple[str, ...] = ()) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, torch.Tensor]]]:
    """``(preds, target)`` lists for ``MeanAveragePrecision.update``; ``keys`` adds entries of ``image.extra``."""
    preds, target = [], []
    for index, image in enumerate(images):
        pred = {"masks": torch.from_numpy(image.dt_masks).to(device),
                "scores": torch.from_numpy(image.dt_scores).to(device),
                "labels": torch.from_numpy(image.dt_labels).to(device)}
        gt = {"masks": torch.from_numpy(image.gt_masks).to(device),
              "labels": torch.from_numpy(image.gt_labels).to(device),
              "iscrowd": torch.from_numpy(image.gt_crowd).to(device)}
        if image_ids:
            gt["image_id"] = torch.tensor(index + 1, device=device)
        for key in keys:
            if key in image.extra:
                (pred if key.startswith("dt_") else gt)[key.removeprefix("dt_")] = torch.as_tensor(
                    image.extra[key], device=device)
        preds.append(pred)
        target.append(gt)
    return preds, target


def to_coco(images: list[InstanceImage], categories: int = 80, with_bbox: bool = False,
            gt_area: str = "mask") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The gt dataset and results list of ``images`` in COCO JSON form (image ``i`` has id ``i + 1``).

    Args:
        images: from :func:`make_images`.
        categories: ids ``0 .. categories - 1`` are listed (plus any label the images use).
        with_bbox: give every result the ``bbox`` of its mask (pycocotools ``loadRes`` then takes the result's
            area from the box, ``w * h``); ``image.extra["dt_area"]`` must then hold those areas for our side.
        gt_area: ``"mask"`` (the RLE area) or ``"extra"`` (``image.extra["area"]``).
    """
    import pycocotools.mask as mask_utils

    def rle(mask: np.ndarray) -> dict[str, Any]:
        encoded = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
        encoded["counts"] = encoded["counts"].decode("ascii")
        return encoded

    labels = set(range(categories))
    gt_anns: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for index, image in enumerate(images):
        image_id = index + 1
        labels |= set(image.gt_labels.tolist()) | set(image.dt_labels.tolist())
        for k in range(len(image.gt_labels)):
            segmentation = rle(image.gt_masks[k])
            area = float(mask_utils.area(segmentation)) if gt_area == "mask" else float(image.extra["area"][k])
            gt_anns.append({"id": len(gt_anns) + 1, "image_id": image_id, "category_id": int(image.gt_labels[k]),
                            "segmentation": segmentation, "area": area, "iscrowd": int(image.gt_crowd[k]),
                            "bbox": list(mask_utils.toBbox(segmentation))})
            if "ignore" in image.extra:
                gt_anns[-1]["ignore"] = int(image.extra["ignore"][k])
        for k in range(len(image.dt_labels)):
            segmentation = rle(image.dt_masks[k])
            result = {"image_id": image_id, "category_id": int(image.dt_labels[k]), "segmentation": segmentation,
                      "score": float(image.dt_scores[k])}
            if with_bbox:
                result["bbox"] = [float(v) for v in mask_utils.toBbox(segmentation)]
            results.append(result)
    imgs = []
    for index, image in enumerate(images):
        entry: dict[str, Any] = {"id": index + 1, "height": image.height, "width": image.width}
        for key in ("neg_category_ids", "not_exhaustive_category_ids"):
            if key in image.extra:
                entry[key] = [int(v) for v in image.extra[key]]
        imgs.append(entry)
    dataset = {"images": imgs, "annotations": gt_anns,
               "categories": [{"id": c, "name": str(c)} for c in sorted(labels)]}
    return dataset, results


def box_areas(masks: np.ndarray) -> np.ndarray:
    """``w * h`` of each mask's bounding box (pycocotools ``toBbox``; 0 for an empty mask): :math:`(N,)` float64."""
    areas = np.zeros(len(masks), np.float64)
    for index, mask in enumerate(masks):
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        if rows.size:
            areas[index] = float(rows[-1] - rows[0] + 1) * float(cols[-1] - cols[0] + 1)
    return areas
