"""Reading a COCO or LVIS annotation file for ``nobg-metrics instances`` (docs/instance_segmentation.md).

The file holds ``images`` (``id``, ``height``, ``width``; LVIS also ``neg_category_ids`` and
``not_exhaustive_category_ids``), ``annotations`` (``id``, ``image_id``, ``category_id``, ``segmentation``,
``area``, ``iscrowd``) and ``categories`` (``id``; LVIS also ``frequency``). It is read as pycocotools' ``COCO``
/ lvis' ``LVIS`` index it for evaluation:

- images are evaluated in increasing id order (``params.imgIds = sorted(getImgIds())``), each image's
  annotations in file order (``imgToAnns``);
- annotations of an image or category that is not in the file are left out (``getAnnIds(imgIds, catIds)``
  does); so are, for LVIS, annotations of area <= 0 (``get_ann_ids``: ``area > 0``). A note says how many;
- ``iscrowd`` missing counts as 0 (lvis' rule; pycocotools needs the key); an ``ignore`` flag (rare) is OR-ed
  with ``iscrowd`` as boundary-iou-api and lvis do (plain pycocotools overwrites it with ``iscrowd``);
- an image counts as LVIS-federated when the first image (by id) has ``neg_category_ids`` (lvis'
  ``is_lvis``); frequency groups exist when the first category (by id) has ``frequency``.

Problems are :class:`InputError` naming the file, the entry's position and id, and the key.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nobg_metrics.io.errors import InputError
from nobg_metrics.io.json_stream import open_text

FREQUENCIES = ("r", "c", "f")
"""LVIS's frequency groups (``img_count_lbl``): rare, common, frequent."""


@dataclass
class GtImage:
    """One image of the annotation file and its annotations (``(position in 'annotations', annotation)``)."""

    id: int
    height: int
    width: int
    annotations: list[tuple[int, dict]] = field(default_factory=list)
    neg_category_ids: frozenset[int] = frozenset()
    not_exhaustive_category_ids: frozenset[int] = frozenset()


@dataclass
class GroundTruth:
    """An annotation file read for evaluation (see the module docstring for the rules)."""

    path: Path
    images: list[GtImage]
    """In increasing id order: the order the reference evaluates and accumulates them in."""
    by_id: dict[int, GtImage]
    categories: list[dict]
    """In increasing id order."""
    category_ids: frozenset[int]
    federated: bool
    """LVIS: detections of a category neither present in the image nor among its ``neg_category_ids`` are dropped."""
    frequencies: dict[int, str] | None
    """LVIS: category id -> ``'r'``, ``'c'`` or ``'f'``; None when the categories have no ``frequency``."""
    notes: list[str] = field(default_factory=list)


def read_json(path: Path, role: str) -> Any:
    """The parsed JSON of ``path`` (``role``: ``--gt-json-file``, ...), or :class:`InputError`."""
    try:
        with open_text(path, role) as handle:
            return json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{role} {path}: not valid JSON ({error})") from None
    except OSError as error:  # while reading (opening: open_text)
        raise InputError(f"{role} {path}: cannot be read ({error.strerror or error})") from None


def is_int(value: object) -> bool:
    """A JSON integer (``true`` / ``false`` are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """A finite JSON number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _entry(where: str, entry: object, keys: tuple[str, ...]) -> dict:
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected an object, got {type(entry).__name__}")
    for key in keys:
        if key not in entry:
            raise InputError(f"{where}: missing key {key!r}")
    return entry


def _id_list(where: str, image: dict, key: str) -> frozenset[int]:
    values = image.get(key, [])
    if not isinstance(values, list) or not all(is_int(v) for v in values):
        raise InputError(f"{where}: {key!r} must be a list of category ids")
    return frozenset(values)


def _images(path: Path, document: dict) -> dict[int, GtImage]:
    images: dict[int, GtImage] = {}
    for position, image in enumerate(document["images"]):
        where = f"{path}: images[{position}]"
        image = _entry(where, image, ("id", "height", "width"))
        if not is_int(image["id"]):
            raise InputError(f"{where}: 'id' must be an integer, got {image['id']!r}")
        where = f"{where} (id {image['id']})"
        if image["id"] in images:
            raise InputError(f"{where}: a second image with this id")
        height, width = image["height"], image["width"]
        if not (is_int(height) and is_int(width) and height >= 1 and width >= 1):
            raise InputError(f"{where}: 'height' and 'width' must be integers >= 1, got {height!r}, "
                                      f"{width!r}")
        images[image["id"]] = GtImage(image["id"], height, width,
                                      neg_category_ids=_id_list(where, image, "neg_category_ids"),
                                      not_exhaustive_category_ids=_id_list(where, image, "not_exhaustive_category_ids"))
    return images


def _categories(path: Path, document: dict, lvis: bool) -> tuple[list[dict], dict[int, str] | None]:
    categories = []
    seen: set[int] = set()
    for position, category in enumerate(document["categories"]):
        where = f"{path}: categories[{position}]"
        category = _entry(where, category, ("id",))
        if not is_int(category["id"]):
            raise InputError(f"{where}: 'id' must be an integer, got {category['id']!r}")
        if category["id"] in seen:
            raise InputError(f"{where} (id {category['id']}): a second category with this id")
        seen.add(category["id"])
        categories.append(category)
    if not categories:
        raise InputError(f"{path}: 'categories' is empty")
    categories.sort(key=lambda c: c["id"])
    if not lvis or "frequency" not in categories[0]:  # lvis: if "frequency" not in cat_data[0]: no groups
        return categories, None
    frequencies = {}
    for category in categories:
        if category.get("frequency") not in FREQUENCIES:
            raise InputError(f"{path}: category id {category['id']}: 'frequency' must be one of 'r', 'c', "
                                      f"'f' (the first category has one), got {category.get('frequency')!r}")
        frequencies[category["id"]] = category["frequency"]
    return categories, frequencies


def load_ground_truth(path: Path, *, lvis: bool = False) -> GroundTruth:
    """Read and index an annotation file (``lvis``: LVIS's rules, see the module docstring)."""
    document = read_json(path, "--gt-json-file")
    if not isinstance(document, dict):
        raise InputError(f"{path}: expected a COCO/LVIS annotation object, got a JSON "
                                  f"{type(document).__name__}")
    for key in ("images", "annotations", "categories"):
        if not isinstance(document.get(key), list):
            raise InputError(f"{path}: missing key {key!r} (a list)" if key not in document else
                                      f"{path}: {key!r} must be a list")
    images = _images(path, document)
    categories, frequencies = _categories(path, document, lvis)
    category_ids = frozenset(c["id"] for c in categories)
    ann_ids: set[int] = set()
    left_out = {"image": 0, "category": 0, "area": 0}
    for position, ann in enumerate(document["annotations"]):
        where = f"{path}: annotations[{position}]"
        if isinstance(ann, dict) and "id" in ann and "image_id" in ann:
            where = f"{where} (id {ann['id']!r}, image {ann['image_id']!r})"
        ann = _entry(where, ann, ("id", "image_id", "category_id", "segmentation", "area"))
        if not all(is_int(ann[k]) for k in ("id", "image_id", "category_id")):
            raise InputError(f"{where}: 'id', 'image_id' and 'category_id' must be integers")
        if ann["id"] in ann_ids:  # the reference indexes annotations by id: a second one would replace the first
            raise InputError(f"{where}: a second annotation with this id")
        ann_ids.add(ann["id"])
        if not is_number(ann["area"]):
            raise InputError(f"{where}: 'area' must be a finite number, got {ann['area']!r}")
        for flag in ("iscrowd", "ignore"):
            if ann.get(flag, 0) not in (0, 1):  # 0, 1, false, true
                raise InputError(f"{where}: {flag!r} must be 0 or 1, got {ann.get(flag)!r}")
        image = images.get(ann["image_id"])
        if image is None:
            left_out["image"] += 1
        elif ann["category_id"] not in category_ids:
            left_out["category"] += 1
        elif lvis and not ann["area"] > 0:
            left_out["area"] += 1
        else:
            image.annotations.append((position, ann))
    ordered = [images[i] for i in sorted(images)]
    if not ordered:
        raise InputError(f"{path}: 'images' is empty")
    notes = []
    for reason, text in (("image", "an image_id not in 'images'"), ("category", "a category_id not in 'categories'"),
                         ("area", "an area <= 0 (LVIS leaves them out)")):
        if left_out[reason]:
            notes.append(f"{path}: {left_out[reason]} annotation(s) with {text} left out, as the reference does")
    federated = lvis and "neg_category_ids" in document["images"][_first_by_id(document["images"])]
    return GroundTruth(path, ordered, images, categories, category_ids, federated, frequencies, notes)


def _first_by_id(images: list[dict]) -> int:
    """The position of the image of smallest id (lvis tests ``img_data[0]`` of the sorted ids)."""
    return min(range(len(images)), key=lambda i: images[i]["id"])
