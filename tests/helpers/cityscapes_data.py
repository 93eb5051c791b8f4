"""Generated Cityscapes-like instance data: ``*_instanceIds`` maps and model-like predictions (numpy, seeded).

A gt map holds Cityscapes label ids (``labels.py``) in the Cityscapes encoding: ``label id * 1000 + instance``
for instances (instance numbers start at 0), the bare label id elsewhere — stuff (road, sky, ...), void
(unlabeled, ego vehicle, static, ...) and *group* regions of instance classes (``26`` = a car group). Objects are
unions of ellipses and polygons painted back to front, so later ones occlude earlier ones (visible parts are
non-convex, sometimes split); some touch the border, some are under the 100-pixel ``minRegionSizes`` cut,
caravans and trailers are instances of ``ignoreInEval`` classes.

Predictions (:func:`cityscapes_predictions`) copy gt segments with their boundary moved (grown, shrunk, shifted,
a blob added or cut out), sometimes with the wrong class, twice for one object (duplicates), on group regions,
on void; plus false positives, empty masks, masks of classes that are not evaluated (road, caravan, license
plate ``-1``) and scores drawn from a coarse grid (ties) or uniformly.
"""

from __future__ import annotations

import cv2
import numpy as np

EVAL_LABELS = (24, 25, 26, 27, 28, 31, 32, 33)
"""person, rider, car, truck, bus, train, motorcycle, bicycle: the evaluated classes."""
INSTANCE_LABELS = (*EVAL_LABELS, 29, 30)
"""With caravan and trailer (instances of ``ignoreInEval`` classes)."""
STUFF_LABELS = (7, 8, 11, 12, 13, 17, 19, 20, 21, 22, 23)
VOID_LABELS = (0, 1, 2, 3, 4, 5, 6, 9, 10, 14, 15, 16, 18, 29, 30)

Prediction = tuple[np.ndarray, int, float]
"""``(mask (H, W) bool, label id, score)``."""


def _shape(rng: np.random.Generator, height: int, width: int, size: float) -> np.ndarray:
    """A bool union of 1-3 ellipses / polygons around a random centre, ``size`` pixels across."""
    mask = np.zeros((height, width), np.uint8)
    cy, cx = rng.uniform(-0.05, 1.05) * height, rng.uniform(-0.05, 1.05) * width
    for _ in range(rng.integers(1, 4)):
        oy, ox = rng.normal(0, size / 4, 2)
        centre = (round(cx + ox), round(cy + oy))
        if rng.random() < 0.5:
            axes = (max(1, int(rng.uniform(0.2, 0.6) * size)), max(1, int(rng.uniform(0.2, 0.6) * size)))
            cv2.ellipse(mask, centre, axes, float(rng.uniform(0, 180)), 0, 360, 1, -1)
        else:
            count = int(rng.integers(3, 8))
            angles = np.sort(rng.uniform(0, 2 * np.pi, count))
            radii = rng.uniform(0.2, 0.6, count) * size
            points = np.stack([centre[0] + radii * np.cos(angles), centre[1] + radii * np.sin(angles)], 1)
            cv2.fillPoly(mask, [np.round(points).astype(np.int32)], 1)
    return mask.astype(bool)


def cityscapes_image(rng: np.random.Generator, height: int, width: int, *, instances: int = 12, groups: int = 2,
                     small: int = 2, void: bool = True) -> np.ndarray:
    """An ``(H, W)`` int32 instanceIds map with stuff, void, ``instances`` objects, group regions and small ones."""
    gt = np.full((height, width), 7, np.int32)  # road
    rows = np.arange(height)[:, None]
    horizon = rng.uniform(0.3, 0.5) * height
    gt[np.broadcast_to(rows < horizon, gt.shape)] = 23  # sky
    band = (rows >= horizon * 0.6) & (rows < horizon * 1.1)
    gt[np.broadcast_to(band, gt.shape) & (np.arange(width)[None] % 97 < 60)] = 11  # buildings
    for label in rng.choice(STUFF_LABELS, 4):
        gt[_shape(rng, height, width, rng.uniform(0.05, 0.3) * min(height, width))] = label
    if void:
        for label in rng.choice(VOID_LABELS, 3):
            gt[_shape(rng, height, width, rng.uniform(0.03, 0.2) * min(height, width))] = label
        if rng.random() < 0.5:
            gt[int(height * 0.9):] = 1  # ego vehicle
    next_instance: dict[int, int] = {}
    objects = [("instance", s) for s in range(instances)] + [("group", s) for s in range(groups)] + \
              [("small", s) for s in range(small)]
    for kind, _ in [objects[i] for i in rng.permutation(len(objects))]:
        label = int(rng.choice(INSTANCE_LABELS if kind != "group" else EVAL_LABELS))
        if kind == "small":
            size = rng.uniform(3, 8)
        else:
            size = np.exp(rng.uniform(np.log(10), np.log(0.5 * min(height, width) + 11)))
        mask = _shape(rng, height, width, size)
        if kind == "group":
            gt[mask] = label
        else:
            number = next_instance.get(label, 0)
            next_instance[label] = number + 1
            gt[mask] = label * 1000 + number
    return gt


def _moved(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """``mask`` with its boundary moved: half the time by at most a pixel (good predictions), else grown or shrunk
    0-3 px, shifted 0-3 px, a blob added or cut out."""
    good = rng.random() < 0.5
    moved = mask.astype(np.uint8)
    radius = int(rng.integers(0, 2 if good else 4))
    if radius:
        kernel = np.ones((2 * radius + 1, 2 * radius + 1), np.uint8)
        moved = cv2.dilate(moved, kernel) if rng.random() < 0.5 else cv2.erode(moved, kernel)
    dy, dx = rng.integers(-1, 2, 2) if good else rng.integers(-3, 4, 2)
    moved = np.roll(moved, (int(dy), int(dx)), axis=(0, 1))
    if not good and rng.random() < 0.4 and mask.any():
        ys, xs = np.nonzero(mask)
        pick = rng.integers(len(ys))
        blob = np.zeros_like(moved)
        cv2.circle(blob, (int(xs[pick]), int(ys[pick])), int(rng.integers(2, 12)), 1, -1)
        moved = np.maximum(moved, blob) if rng.random() < 0.5 else moved * (1 - blob)
    return moved.astype(bool)


def _score(rng: np.random.Generator, coarse: bool) -> float:
    return float(rng.integers(1, 10)) / 10 if coarse else float(rng.uniform(0.05, 1.0))


def cityscapes_predictions(rng: np.random.Generator, gt: np.ndarray, *, found: float = 0.8, duplicates: float = 0.25,
                           false_positives: int = 4, coarse_scores: bool = True) -> list[Prediction]:
    """Model-like predictions for one instanceIds map (see the module doc)."""
    height, width = gt.shape
    preds: list[Prediction] = []
    for value in np.unique(gt):
        label = int(value // 1000 if value >= 1000 else value)
        if label not in INSTANCE_LABELS or rng.random() > found:
            continue
        segment = gt == value
        for _ in range(1 + int(rng.random() < duplicates)):
            guess = label if rng.random() < 0.85 else int(rng.choice(EVAL_LABELS))
            preds.append((_moved(rng, segment), guess, _score(rng, coarse_scores)))
    for _ in range(false_positives):
        label = int(rng.choice([*EVAL_LABELS, 7, 29, -1]))
        size = rng.uniform(4, 0.3 * min(height, width) + 5)
        preds.append((_shape(rng, height, width, size), label, _score(rng, coarse_scores)))
    if rng.random() < 0.3:
        preds.append((np.zeros((height, width), bool), int(rng.choice(EVAL_LABELS)), _score(rng, coarse_scores)))
    void = np.isin(gt, VOID_LABELS)
    if void.any() and rng.random() < 0.5:
        preds.append((_moved(rng, void), int(rng.choice(EVAL_LABELS)), _score(rng, coarse_scores)))
    order = rng.permutation(len(preds))
    return [preds[i] for i in order]


def cityscapes_dataset(
    seed: int, sizes: list[tuple[int, int]], **image_options: int
) -> list[tuple[np.ndarray, list[Prediction]]]:
    """``[(gt, predictions), ...]`` for each ``(H, W)`` in ``sizes``."""
    rng = np.random.default_rng(seed)
    data = []
    for height, width in sizes:
        gt = cityscapes_image(rng, height, width, **image_options)
        data.append((gt, cityscapes_predictions(rng, gt)))
    return data


def write_cityscapes_folders(root, data: list[tuple[np.ndarray, list[Prediction]]], city: str = "testcity"):
    """Write ``data`` in the Cityscapes layout; returns ``(gt_dir, result_dir)``.

    ``gt_dir/CITY/CITY_000000_NNNNNN_gtFine_instanceIds.png`` (16-bit) and ``result_dir/CITY_000000_NNNNNN_pred.txt``
    listing ``masks/CITY_000000_NNNNNN_K.png LABEL SCORE`` (8-bit 0/255 masks; scores written with ``repr``).
    """
    from pathlib import Path

    from PIL import Image

    root = Path(root)
    gt_dir, result_dir = root / "gt", root / "results"
    (gt_dir / city).mkdir(parents=True, exist_ok=True)
    (result_dir / "masks").mkdir(parents=True, exist_ok=True)
    for frame, (gt, preds) in enumerate(data):
        stem = f"{city}_000000_{frame:06d}"
        Image.fromarray(gt.astype(np.uint16)).save(gt_dir / city / f"{stem}_gtFine_instanceIds.png")
        lines = []
        for k, (mask, label, score) in enumerate(preds):
            name = f"masks/{stem}_{k}.png"
            Image.fromarray(np.where(mask, 255, 0).astype(np.uint8)).save(result_dir / name)
            lines.append(f"{name} {label} {score!r}\n")
        (result_dir / f"{stem}_pred.txt").write_text("".join(lines))
    return gt_dir, result_dir


def as_torch(data: list[tuple[np.ndarray, list[Prediction]]]):
    """``(preds, target)`` in the library's input format: one ``{"masks", "scores", "labels"}`` dict per image and
    the list of (H, W) int64 maps."""
    import torch

    preds, target = [], []
    for gt, image_preds in data:
        target.append(torch.from_numpy(np.asarray(gt, np.int64)))
        masks = np.stack([m for m, _, _ in image_preds]) if image_preds else np.zeros((0, *gt.shape), bool)
        preds.append({"masks": torch.from_numpy(masks),
                      "labels": torch.tensor([label for _, label, _ in image_preds], dtype=torch.int64),
                      "scores": torch.tensor([score for _, _, score in image_preds], dtype=torch.float64)})
    return preds, target
