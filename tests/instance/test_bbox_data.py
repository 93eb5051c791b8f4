"""Generated box sets for the box AP tests (no test here): numpy boxes, their torch dicts and their COCO json.

:func:`run_bbox` scores them with ours through the functional's stages (the inputs' preparation with
``iou_types=("bbox",)``, the statistics, the compute).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

WIDTH, HEIGHT = 640, 480


@dataclass
class Image:
    """One image: ``xyxy`` float64 boxes, labels, scores and the gts' flags."""

    image_id: int
    gt_boxes: np.ndarray
    gt_labels: np.ndarray
    gt_crowd: np.ndarray
    dt_boxes: np.ndarray
    dt_labels: np.ndarray
    dt_scores: np.ndarray
    extra: dict[str, np.ndarray] = field(default_factory=dict)


def _random_boxes(rng: np.random.Generator, count: int, decimals: int | None) -> np.ndarray:
    """Log-uniform sizes (2 to 400 px: small, medium and large), some reaching past the image, some of width 0."""
    width = np.exp(rng.uniform(np.log(2.0), np.log(400.0), count))
    height = width * np.exp(rng.normal(0.0, 0.4, count))
    x1 = -0.1 * WIDTH + rng.random(count) * np.maximum(1.1 * WIDTH - 0.5 * width, 1.0)
    y1 = -0.1 * HEIGHT + rng.random(count) * np.maximum(1.1 * HEIGHT - 0.5 * height, 1.0)
    width[rng.random(count) < 0.04] = 0.0
    boxes = np.stack([x1, y1, x1 + width, y1 + height], axis=1)
    return np.round(boxes, decimals) if decimals is not None else boxes


def _jitter(rng: np.random.Generator, boxes: np.ndarray, scale: float, decimals: int | None) -> np.ndarray:
    size = np.maximum(boxes[:, 2:] - boxes[:, :2], 1.0)
    moved = boxes + rng.normal(0.0, scale, boxes.shape) * np.concatenate([size, size], axis=1)
    moved[:, 2:] = np.maximum(moved[:, 2:], moved[:, :2])
    return np.round(moved, decimals) if decimals is not None else moved


def make_box_images(count: int, seed: int = 0, categories: int = 5, instances: float = 6.0,
                    detections: float = 12.0, crowd_rate: float = 0.08, decimals: int | None = None,
                    with_area: bool = False, ignore_rate: float = 0.0, empty_rate: float = 0.1,
                    federated: bool = False) -> list[Image]:
    """``count`` images (module notes); ``image_id`` = index + 1."""
    rng = np.random.default_rng(seed)
    out = []
    for index in range(count):
        kind = rng.random()
        num_gt = 0 if kind < empty_rate else int(rng.poisson(instances))
        gt_boxes = _random_boxes(rng, num_gt, decimals)
        gt_labels = rng.integers(0, categories, num_gt)
        crowd = rng.random(num_gt) < crowd_rate
        num_dt = 0 if empty_rate / 2 <= kind < empty_rate * 1.5 else int(rng.poisson(detections))
        source = rng.integers(0, max(num_gt, 1), num_dt)
        matched = (rng.random(num_dt) < 0.7) & (num_gt > 0)
        dt_boxes = _random_boxes(rng, num_dt, decimals)
        dt_labels = rng.integers(0, categories, num_dt)
        if num_gt:
            near = _jitter(rng, gt_boxes[source], rng.choice([0.02, 0.08, 0.2]), decimals)
            dt_boxes = np.where(matched[:, None], near, dt_boxes)
            dt_labels = np.where(matched & (rng.random(num_dt) < 0.9), gt_labels[source], dt_labels)
        scores = np.round(rng.random(num_dt), 2)
        image = Image(index + 1, gt_boxes, gt_labels, crowd, dt_boxes, dt_labels, scores)
        if with_area:
            areas = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
            areas = areas * rng.uniform(0.5, 1.0, num_gt)
            areas[::4] = 0.0  # not given: w * h
            image.extra["area"] = areas
        if ignore_rate:
            image.extra["ignore"] = rng.random(num_gt) < ignore_rate
        if federated:
            present = sorted(set(gt_labels.tolist()))
            absent = [c for c in range(categories) if c not in present]
            image.extra["neg_category_ids"] = np.array(
                sorted(rng.choice(absent, size=min(2, len(absent)), replace=False)) if absent else [], np.int64)
            image.extra["not_exhaustive_category_ids"] = np.array(
                present[:1] if present and rng.random() < 0.5 else [], np.int64)
        out.append(image)
    return out


def to_torch(data: list[Image], dtype: torch.dtype = torch.float64, device: str = "cpu"
             ) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, Any]]]:
    """torchmetrics' dicts (``xyxy`` boxes, ``image_id``, the extra fields)."""
    preds, target = [], []
    for image in data:
        preds.append({"boxes": torch.tensor(image.dt_boxes, dtype=dtype, device=device).reshape(-1, 4),
                      "scores": torch.tensor(image.dt_scores, dtype=torch.float64, device=device),
                      "labels": torch.tensor(image.dt_labels, dtype=torch.int64, device=device)})
        gt: dict[str, Any] = {"boxes": torch.tensor(image.gt_boxes, dtype=dtype, device=device).reshape(-1, 4),
                              "labels": torch.tensor(image.gt_labels, dtype=torch.int64, device=device),
                              "iscrowd": torch.tensor(image.gt_crowd, device=device),
                              "image_id": image.image_id}
        for key, value in image.extra.items():
            gt[key] = torch.tensor(value, device=device)
        target.append(gt)
    return preds, target


def _xywh(box: np.ndarray) -> list[float]:
    return [float(box[0]), float(box[1]), float(box[2] - box[0]), float(box[3] - box[1])]


def to_coco(data: list[Image], lvis: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The gt dataset and the results list pycocotools / lvis read (``xywh`` as torchmetrics converts)."""
    categories = sorted({int(c) for image in data for c in (*image.gt_labels, *image.dt_labels)})
    top = max(categories, default=0)
    images, annotations, results = [], [], []
    for image in data:
        entry: dict[str, Any] = {"id": image.image_id, "height": HEIGHT, "width": WIDTH}
        if lvis:
            entry["neg_category_ids"] = image.extra["neg_category_ids"].tolist()
            entry["not_exhaustive_category_ids"] = image.extra["not_exhaustive_category_ids"].tolist()
        images.append(entry)
        for k, box in enumerate(image.gt_boxes):
            xywh = _xywh(box)
            area = float(image.extra["area"][k]) if "area" in image.extra else 0.0
            ann = {"id": len(annotations) + 1, "image_id": image.image_id, "category_id": int(image.gt_labels[k]),
                   "bbox": xywh, "area": area if area > 0 else xywh[2] * xywh[3],
                   "iscrowd": int(image.gt_crowd[k])}
            if "ignore" in image.extra:
                ann["ignore_flag"] = int(image.extra["ignore"][k])
            annotations.append(ann)
        for k, box in enumerate(image.dt_boxes):
            results.append({"image_id": image.image_id, "category_id": int(image.dt_labels[k]), "bbox": _xywh(box),
                            "score": float(image.dt_scores[k])})
    return ({"images": images, "annotations": annotations,
             "categories": [{"id": c, "name": str(c)} for c in range(top + 1)]}, results)


def run_bbox(data: list[Image], dtype: torch.dtype = torch.float64, engine: str = "auto",
             **options: Any) -> dict[str, torch.Tensor]:
    """Ours on the generated set (:func:`run_prepared`)."""
    preds, target = to_torch(data, dtype)
    return run_prepared(preds, target, engine=engine, **options)


def run_prepared(preds: list[dict[str, Any]], target: list[dict[str, Any]], engine: str = "auto",
                 box_format: str = "xyxy", **options: Any) -> dict[str, torch.Tensor]:
    """Ours through the functional's stages: the inputs' preparation with ``iou_types=("bbox",)``, the statistics,
    the compute."""
    from nobg_metrics.functional.instance import inputs
    from nobg_metrics.functional.instance.mean_average_precision import _mean_average_precision_compute
    from nobg_metrics.functional.instance.options import make_options
    from nobg_metrics.functional.instance.statistics import instance_update

    options = {key: value for key, value in options.items() if value is not None}
    images = inputs.prepare_instances(preds, target, True, iou_types=("bbox",), box_format=box_format)
    settings = make_options("bbox", **options)
    states = instance_update(images, settings, torch.zeros((), dtype=torch.int64), 0, engine)  # type: ignore[arg-type]
    return _mean_average_precision_compute(states, settings, len(images))
