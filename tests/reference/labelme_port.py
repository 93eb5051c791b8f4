"""labelme's reading of its own files, ported from its rules (wkentaro/labelme ``labelme/utils/shape.py``
``shape_to_mask`` and ``examples/instance_segmentation/labelme2coco.py``): numpy masks drawn with Pillow on a uint8
canvas, objects keyed by ``(label, group_id)`` with a fresh key for a shape without a group id, masks OR-ed per object,
``__ignore__`` / ``_background_`` left out. The test oracle of ``nobg_metrics.io.labelme``."""

from __future__ import annotations

import math
import uuid

import numpy as np
import PIL.Image
import PIL.ImageDraw


def shape_to_mask(shape_hw, points, shape_type=None, line_width=10, point_size=5) -> np.ndarray:
    canvas = PIL.Image.fromarray(np.zeros(shape_hw, dtype=np.uint8))
    draw = PIL.ImageDraw.Draw(canvas)
    xy = [tuple(p) for p in points]
    if shape_type == "circle":
        (cx, cy), (px, py) = xy
        d = math.sqrt((cx - px) ** 2 + (cy - py) ** 2)
        draw.ellipse([cx - d, cy - d, cx + d, cy + d], outline=1, fill=1)
    elif shape_type == "rectangle":
        draw.rectangle(xy, outline=1, fill=1)
    elif shape_type in ("line", "linestrip"):
        draw.line(xy=xy, fill=1, width=line_width)
    elif shape_type == "point":
        (cx, cy), r = xy[0], point_size
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=1, fill=1)
    else:
        draw.polygon(xy=xy, outline=1, fill=1)
    return np.array(canvas, dtype=bool)


def objects(document: dict, label_ids: dict[str, int]) -> tuple[list[np.ndarray], list[int]]:
    """``(masks, category ids)`` in the order labelme2coco meets the objects."""
    shape_hw = (document["imageHeight"], document["imageWidth"])
    masks: dict[tuple, np.ndarray] = {}
    for shape in document["shapes"]:
        label = shape["label"]
        if label in ("__ignore__", "_background_"):
            continue
        group = shape.get("group_id")
        key = (label, uuid.uuid1() if group is None else group)
        mask = shape_to_mask(shape_hw, shape["points"], shape.get("shape_type"))
        masks[key] = masks[key] | mask if key in masks else mask
    return list(masks.values()), [label_ids[label] for label, _ in masks]
