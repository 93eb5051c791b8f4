"""LabelMe annotation files (``*.json`` of wkentaro/labelme) as instance targets: one mask per object, as
``labelme2coco.py`` (labelme's ``examples/instance_segmentation``) builds them from ``labelme.utils.shape_to_mask``.

- An object is a ``(label, group_id)`` pair; shapes without a ``group_id`` are objects of their own. An object's
  mask is the union of its shapes' masks (objects may overlap, as in COCO); objects come in the order of their
  first shape.
- Each shape is drawn with Pillow's ``ImageDraw`` at the file's ``imageHeight`` x ``imageWidth``, as
  ``shape_to_mask`` draws it: ``polygon`` (≥ 3 points) ``polygon(xy, outline=1, fill=1)``; ``rectangle`` (2 points)
  ``rectangle(xy, outline=1, fill=1)`` (corners in any order: the reference raises on Pillow ≥ 9.5 when the
  second corner is left of or above the first, as LabelMe saves a box dragged up or left; we draw the box the user
  drew); ``circle`` (centre, a point on it) ``ellipse`` of radius their Euclidean
  distance; ``line`` / ``linestrip`` ``line(xy, width=10)``; ``point`` an ``ellipse`` of radius 5.
- ``label_ids`` maps label names to category ids; the labels in ``skip`` (default: labelme2coco's ``__ignore__``
  and ``_background_``) are left out; any other label missing from ``label_ids`` is an :class:`InputError`.

The result is what :class:`~nobg_metrics.MeanAveragePrecision` takes as one image's target::

    target = [read_labelme(path, {"cat": 1, "dog": 2}) for path in sorted(folder.glob("*.json"))]

Examples:
    >>> import json, tempfile, pathlib
    >>> shapes = [{"label": "cat", "points": [[1, 1], [4, 3]], "shape_type": "rectangle", "group_id": None}]
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.json"
    >>> _ = path.write_text(json.dumps({"imageHeight": 5, "imageWidth": 6, "shapes": shapes}))
    >>> target = read_labelme(path, {"cat": 7})
    >>> target["labels"].tolist(), target["masks"].shape, int(target["masks"].sum())
    ([7], torch.Size([1, 5, 6]), 12)
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import torch
from PIL import Image, ImageDraw
from torch import Tensor

from nobg_metrics.io.errors import InputError

__all__ = ["SHAPE_TYPES", "read_labelme"]

SHAPE_TYPES = ("polygon", "rectangle", "circle", "line", "linestrip", "point")
"""The shape types drawn (``shape_to_mask``'s); a missing ``shape_type`` is a polygon, as there."""
LINE_WIDTH, POINT_RADIUS = 10, 5
"""``shape_to_mask``'s defaults: the width of lines, the radius of points."""
_POINTS_NEEDED = {"rectangle": (2, 2), "circle": (2, 2), "point": (1, 1), "line": (2, None),
                  "linestrip": (2, None), "polygon": (3, None)}


def _size(document: Any, path: Path) -> tuple[int, int]:
    if not isinstance(document, dict) or not isinstance(document.get("shapes"), list):
        raise InputError(f"{path} is not a LabelMe file (no 'shapes' list)")
    height, width = document.get("imageHeight"), document.get("imageWidth")
    if not (isinstance(height, int) and isinstance(width, int) and not isinstance(height, bool)
            and not isinstance(width, bool) and height > 0 and width > 0):
        raise InputError(f"{path}: 'imageHeight' and 'imageWidth' must be positive integers; got {height!r}, "
                         f"{width!r}")
    return height, width


def _points(shape: dict, where: str, kind: str) -> list[tuple[float, float]]:
    points = shape.get("points")
    if not isinstance(points, list) or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(v, (int, float)) and
                                                                 not isinstance(v, bool) and math.isfinite(v)
                                                                 for v in p) for p in points):
        raise InputError(f"{where}: 'points' must be a list of [x, y] numbers; got {str(points)[:60]}")
    low, high = _POINTS_NEEDED[kind]
    if len(points) < low or (high is not None and len(points) > high):
        needed = f"{low}" if low == high else f"at least {low}"
        raise InputError(f"{where}: a {kind} needs {needed} points; got {len(points)}")
    return [(float(x), float(y)) for x, y in points]


def _draw(kind: str, xy: list[tuple[float, float]], size: tuple[int, int]) -> Tensor:
    """One shape's mask, :math:`(H, W)` bool, drawn as ``shape_to_mask`` draws it."""
    canvas = Image.new("L", (size[1], size[0]), 0)
    draw = ImageDraw.Draw(canvas)
    if kind == "circle":
        (cx, cy), (px, py) = xy
        radius = math.sqrt((cx - px) ** 2 + (cy - py) ** 2)
        draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], outline=1, fill=1)
    elif kind == "rectangle":  # corners in either order: Pillow >= 9.5 refuses x1 < x0 (shape_to_mask then raises)
        (x0, y0), (x1, y1) = xy
        draw.rectangle([min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)], outline=1, fill=1)
    elif kind in ("line", "linestrip"):
        draw.line(xy=xy, fill=1, width=LINE_WIDTH)
    elif kind == "point":
        (cx, cy), radius = xy[0], POINT_RADIUS
        draw.ellipse([cx - radius, cy - radius, cx + radius, cy + radius], outline=1, fill=1)
    else:
        draw.polygon(xy=xy, outline=1, fill=1)
    return torch.frombuffer(bytearray(canvas.tobytes()), dtype=torch.uint8).view(size).bool()


def read_labelme(path: str | Path, label_ids: Mapping[str, int],
                 skip: Collection[str] = ("__ignore__", "_background_")) -> dict[str, Tensor]:
    """One LabelMe file as a detection target (module doc: the rules).

    Args:
        path: the ``.json`` file.
        label_ids: ``{label name: category id}``.
        skip: labels left out.

    Returns:
        ``{"masks": (N, H, W) bool, "labels": (N,) int64}``, objects in the order of their first shape.

    Raises:
        InputError: naming the file, the shape (its position) and what is wrong: not JSON, no ``shapes``, a size
            that is not two positive integers, an unknown shape type or label, a wrong number of points.
    """
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise InputError(f"{path} cannot be read as JSON ({error})") from None
    size = _size(document, path)
    objects: dict[tuple[str, object], Tensor] = {}
    for index, shape in enumerate(document["shapes"]):
        where = f"{path}: shapes[{index}]"
        if not isinstance(shape, dict) or not isinstance(shape.get("label"), str):
            raise InputError(f"{where} needs a string 'label'")
        label = shape["label"]
        if label in skip:
            continue
        if label not in label_ids:
            raise InputError(f"{where}: the label {label!r} is not among label_ids ({sorted(label_ids)[:8]})")
        kind = shape.get("shape_type") or "polygon"
        if kind not in SHAPE_TYPES:
            raise InputError(f"{where}: shape_type {kind!r} is not one of {SHAPE_TYPES}")
        group = shape.get("group_id")
        key = (label, ("shape", index) if group is None else ("group", group))
        mask = _draw(kind, _points(shape, where, kind), size)
        objects[key] = objects[key] | mask if key in objects else mask
    masks = torch.stack(list(objects.values())) if objects else torch.zeros((0, *size), dtype=torch.bool)
    labels = torch.tensor([label_ids[label] for label, _ in objects], dtype=torch.int64)
    return {"masks": masks, "labels": labels}
