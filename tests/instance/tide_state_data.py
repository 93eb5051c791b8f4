"""Generated images for the TIDE state tests: every TIDE error case (good, duplicate, wrong class, poorly
localised, background, missed, inside a crowd gt), score ties, images without gts or detections, and one image with
more detections than TIDE's 100."""

from __future__ import annotations

import numpy as np
import torch

CATEGORIES = (1, 3, 7)
SIZES = ((30, 44), (40, 32), (36, 36))


def _box(rng: np.random.Generator, height: int, width: int) -> list[int]:
    w, h = int(rng.integers(4, width // 2 + 1)), int(rng.integers(4, height // 2 + 1))
    x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
    return [x, y, x + w, y + h]


def _moved(box: list[int], rng: np.random.Generator, shift: float, height: int, width: int) -> list[int]:
    w, h = box[2] - box[0], box[3] - box[1]
    dx, dy = round(float(rng.uniform(-shift, shift)) * w), round(float(rng.uniform(-shift, shift)) * h)
    x1, y1 = min(max(box[0] + dx, 0), width - 1), min(max(box[1] + dy, 0), height - 1)
    return [x1, y1, max(x1 + 1, min(x1 + w, width)), max(y1 + 1, min(y1 + h, height))]


def _masks(boxes: list[list[int]], height: int, width: int, ellipse: bool) -> torch.Tensor:
    masks = np.zeros((len(boxes), height, width), dtype=bool)
    yy, xx = np.mgrid[0:height, 0:width]
    for index, (x1, y1, x2, y2) in enumerate(boxes):
        masks[index, y1:y2, x1:x2] = True
        if ellipse and x2 - x1 > 4 and y2 - y1 > 4:
            cy, cx, ry, rx = (y1 + y2 - 1) / 2, (x1 + x2 - 1) / 2, (y2 - y1) / 2, (x2 - x1) / 2
            masks[index] &= ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0
    return torch.from_numpy(masks)


def tide_images(seed: int, count: int = 12, crowded: int = 110, image_ids: bool = True
                ) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, torch.Tensor]]]:
    """``(preds, target)`` with ``boxes`` (float64 ``xyxy``) and ``masks`` in every dict."""
    rng = np.random.default_rng(seed)
    preds, target = [], []
    for index in range(count):
        height, width = SIZES[index % len(SIZES)]
        gts: list[tuple[list[int], int, int]] = []
        dets: list[tuple[list[int], int, float]] = []
        for _ in range(0 if index in (2, 7) else int(rng.integers(1, 6))):
            box, label = _box(rng, height, width), int(rng.choice(CATEGORIES))
            gts.append((box, label, int(rng.random() < 0.12)))
            for kind in rng.choice(["good", "dupe", "cls", "loc", "miss"], size=int(rng.integers(1, 4))):
                other = int(rng.choice([c for c in CATEGORIES if c != label]))
                if kind != "miss":
                    moved = _moved(box, rng, 0.08 if kind in ("good", "dupe", "cls") else 0.6, height, width)
                    dets.append((moved, other if kind == "cls" else label, round(float(rng.random()), 1)))
        for _ in range(int(rng.integers(0, 3)) if index != 9 else 0):  # background
            dets.append((_box(rng, height, width), int(rng.choice(CATEGORIES)), round(float(rng.random()), 1)))
        if index == 4:
            dets += [(_box(rng, height, width), int(rng.choice(CATEGORIES)), float(rng.random()))
                     for _ in range(crowded)]
        order = rng.permutation(len(dets))  # not in score order
        dets = [dets[i] for i in order]
        det_boxes = [d[0] for d in dets]
        preds.append({"boxes": torch.tensor(det_boxes, dtype=torch.float64).reshape(-1, 4),
                      "masks": _masks(det_boxes, height, width, index % 2 == 0),
                      "scores": torch.tensor([d[2] for d in dets], dtype=torch.float64),
                      "labels": torch.tensor([d[1] for d in dets], dtype=torch.int64)})
        gt_boxes = [g[0] for g in gts]
        target.append({"boxes": torch.tensor(gt_boxes, dtype=torch.float64).reshape(-1, 4),
                       "masks": _masks(gt_boxes, height, width, index % 2 == 0),
                       "labels": torch.tensor([g[1] for g in gts], dtype=torch.int64),
                       "iscrowd": torch.tensor([g[2] for g in gts], dtype=torch.int64)})
        if image_ids:
            target[-1]["image_id"] = torch.tensor(index * 3 + 2)
    return preds, target
