"""Reading a results file (detectron2's ``coco_instances_results.json``) for ``nobg-metrics instances``.

A results file is a JSON list of detections ``{"image_id", "category_id", "score", "segmentation"[, "bbox"]}``,
the segmentation a compressed RLE as detectron2 writes it (polygons and uncompressed RLEs are read too). The
rules are those of the reference loaders, pycocotools' ``COCO.loadRes`` and lvis' ``LVISResults``:

- **The area of a detection** decides its area range (small / medium / large). When the *first* detection
  has a ``bbox`` (COCO: a non-empty one), every detection's area is its box's ``w * h`` — detectron2 writes
  boxes, so its mask AP uses box areas for the area ranges; every detection then needs a ``bbox``. Otherwise
  the area is the mask's pixel count (pycocotools' ``maskUtils.area``).
- **LVIS** (``--lvis``) first keeps the ``max_dets`` (300) best-scored detections of each image (a stable sort
  on the score, images in order of first appearance; ``max_dets < 0``: all), and decides the area rule on the
  first detection of *that* list. Then detections of area <= 0 are left out (``get_ann_ids``: ``area > 0``),
  and, on a federated dataset, those whose category is neither annotated in their image nor among its
  ``neg_category_ids``.
- Detections keep their file order inside their image (score ties are broken by it).

Files as users have them: detectron2's ``coco_instances_results.json`` and mmdetection's ``*.segm.json`` (a ``bbox``
and a compressed RLE whose ``counts`` is a string), polygons and uncompressed RLEs (``counts`` a list of ints).
With a ``bbox`` on the first detection every form is read as ``loadRes`` reads it; without one, ``loadRes`` fails on
polygons and uncompressed RLEs (``maskUtils.area`` takes compressed RLEs only), and here their area is their mask's
pixel count, as for a compressed RLE (a note says so).

Policies where the reference's answer is an exception or silence (:class:`Results` ``warnings``, shown on stderr and
written to ``results.json``; ``strict=True`` (``--strict``) makes each an :class:`InputError` instead):

- **An empty file** (``[]``): pycocotools' ``loadRes`` fails on it (``anns[0]``), detectron2 warns "No predictions
  from the model!". Here a warning, and the scores of no detections, as ``COCOeval.accumulate`` gives them: AP and AR
  0 where the annotation file has ground truths, -1 where a cell has none.
- **A detection of a category not in the annotation file** is left out — ``COCOeval`` / ``LVISEval`` evaluate the
  annotation file's categories only — with one warning counting them and naming the ids. It still counts where the
  reference counts it: LVIS's ``max_dets`` cap and the first detection's ``bbox`` rule.

A detection of an image not in the annotation file is always an error (``loadRes`` asserts: "Results do not
correspond to current coco set"; so does lvis); so are missing keys and values of the wrong type. Errors name the
file, the detection's position in it, its image id and the key (or id).
"""

from __future__ import annotations

import gc
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from nobg_metrics.io.coco.annotations import GroundTruth, is_int, is_number
from nobg_metrics.io.errors import InputError
from nobg_metrics.io.json_stream import array_runs

DETECTION_KEYS = ("image_id", "category_id", "score", "segmentation")
"""The keys every detection needs."""

LVIS_MAX_DETS = 300
"""lvis' ``max_dets``: detections kept per image (``LVISEval(max_dets=300)``)."""


class NoBox:
    """:attr:`Detection.box` of a detection without a ``bbox`` key."""


@dataclass(frozen=True)
class BadBox:
    """:attr:`Detection.box` of a detection whose ``bbox`` is not ``[x, y, w, h]``: the value, for the error raised
    if boxes decide the areas."""

    value: object


NO_BOX = NoBox()


@dataclass(slots=True)
class Detection:
    """One detection: its position in the results file, its keys, and its box's area when areas come from boxes
    (slots: a results file holds ~100,000 of them)."""

    position: int
    image_id: int
    category_id: int
    score: float
    segmentation: object
    box_area: float | None = None
    box: float | NoBox | BadBox = field(default=NO_BOX, repr=False)
    """Its ``bbox`` as read: ``w * h`` of ``[x, y, w, h]``, :data:`NO_BOX` or a :class:`BadBox` (the file is read
    one detection at a time and only this is kept of the box: whether boxes decide the areas is known later)."""


@dataclass
class Results:
    """A results file read for evaluation: the detections of each image (the reference's per-image order)."""

    path: Path
    per_image: dict[int, list[Detection]]
    area_from_box: bool
    """True: areas are ``bbox`` ``w * h`` (the first detection has a box); False: mask pixel counts."""
    drop_empty: bool
    """LVIS: detections of area <= 0 are left out (known once the masks are decoded, for mask areas)."""
    count: int
    kept: int
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What the reference would refuse or score silently (an empty file, unknown categories): see the module notes."""


def _detection(path: Path, position: int, entry: object, gt: GroundTruth) -> Detection:
    where = f"{path}: detection {position}"
    if not isinstance(entry, dict):
        raise InputError(f"{where}: expected an object, got {type(entry).__name__}")
    for key in DETECTION_KEYS:
        if key not in entry:
            image = f" (image {entry['image_id']!r})" if "image_id" in entry else ""
            raise InputError(f"{where}{image}: missing key {key!r}")
    if not is_int(entry["image_id"]):
        raise InputError(f"{where}: 'image_id' must be an integer, got {entry['image_id']!r}")
    where = f"{where} (image {entry['image_id']})"
    if entry["image_id"] not in gt.by_id:
        raise InputError(f"{where}: image_id {entry['image_id']} is not an image of {gt.path} (pycocotools' loadRes "
                         "refuses such a file too: 'Results do not correspond to current coco set')")
    if not is_int(entry["category_id"]):
        raise InputError(f"{where}: 'category_id' must be an integer, got {entry['category_id']!r}")
    if not is_number(entry["score"]):
        raise InputError(f"{where}: 'score' must be a finite number, got {entry['score']!r}")
    box: float | NoBox | BadBox = NO_BOX
    if "bbox" in entry:
        value = entry["bbox"]
        valid = isinstance(value, list) and len(value) == 4 and all(is_number(v) for v in value)
        box = value[2] * value[3] if valid else BadBox(value)  # loadRes: ann['area'] = bb[2]*bb[3]; LVIS: w * h
    return Detection(position, entry["image_id"], entry["category_id"], float(entry["score"]), entry["segmentation"],
                     box=box)


def _detections(path: Path, gt: GroundTruth) -> list[Detection]:
    """The detections of the file in file order, each checked (:func:`_detection`); the first wrong one raised once
    the whole file is known to be valid JSON. The usual detection (an object with integer ids, an image of the
    annotation file, a finite float score, no ``bbox`` or four finite floats) is kept straight away; any other goes
    through :func:`_detection`, which keeps it the same way or names what is wrong. The cyclic garbage collector is
    held meanwhile: the decoded values make no cycles, and its passes over the growing list of detections cost
    about a third of the read."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _checked(path, gt)
    finally:
        if collecting:
            gc.enable()


def _checked(path: Path, gt: GroundTruth) -> list[Detection]:
    detections: list[Detection] = []
    keep = detections.append
    images = gt.by_id
    isfinite = math.isfinite
    wrong: InputError | None = None
    for start, entries in array_runs(path, "--dt-json-file", "expected a JSON list of detections"):
        if wrong is not None:
            continue
        for position, entry in enumerate(entries, start):
            if type(entry) is dict and "segmentation" in entry:
                image_id, category_id, score = entry.get("image_id"), entry.get("category_id"), entry.get("score")
                box = entry.get("bbox", NO_BOX)
                if (type(image_id) is int and type(category_id) is int and type(score) is float
                        and score - score == 0.0 and image_id in images):  # (inf - inf, nan - nan: nan)
                    if box is NO_BOX:
                        keep(Detection(position, image_id, category_id, score, entry["segmentation"]))
                        continue
                    if type(box) is list and len(box) == 4:
                        x, y, w, h = box
                        if (type(x) is float and type(y) is float and type(w) is float and type(h) is float
                                and isfinite(x + y + w + h)):  # (a sum that overflows: through _detection)
                            keep(Detection(position, image_id, category_id, score, entry["segmentation"], None,
                                           w * h))
                            continue
            try:
                keep(_detection(path, position, entry, gt))
            except InputError as error:
                wrong = error  # raised once the file is known to be valid JSON
                detections.clear()
    if wrong is not None:
        raise wrong
    return detections


def _box_area(path: Path, detection: Detection, lvis: bool) -> float:
    where = f"{path}: detection {detection.position} (image {detection.image_id})"
    rule = "has a 'bbox'" if lvis else "has a non-empty 'bbox'"
    if isinstance(detection.box, NoBox):
        raise InputError(f"{where}: missing key 'bbox' (the first detection {rule}, so every detection's "
                                  "area is its box's w * h, as the reference reads results)")
    if isinstance(detection.box, BadBox):
        raise InputError(f"{where}: 'bbox' must be [x, y, w, h] (4 numbers), got {detection.box.value!r}")
    return detection.box


def _lvis_cap(detections: list[Detection], max_dets: int) -> list[Detection]:
    """lvis' ``limit_dets_per_image``: images in order of first appearance, each capped to its ``max_dets``
    best scores (``sorted(..., key=score, reverse=True)``: stable)."""
    per_image: dict[int, list[Detection]] = defaultdict(list)
    for detection in detections:
        per_image[detection.image_id].append(detection)
    kept = []
    for image_detections in per_image.values():
        if max_dets >= 0 and len(image_detections) > max_dets:
            image_detections = sorted(image_detections, key=lambda d: d.score, reverse=True)[:max_dets]
        kept.extend(image_detections)
    return kept


MAX_IDS_NAMED = 20
"""A warning about unknown category ids names at most this many of them."""


def _unknown_categories(path: Path, gt: GroundTruth, detections: list[Detection], strict: bool,
                        warnings: list[str]) -> list[Detection]:
    """The detections of the annotation file's categories; the others counted in a warning (``strict``: an error)."""
    unknown = [d for d in detections if d.category_id not in gt.category_ids]
    if not unknown:
        return detections
    if strict:
        first = unknown[0]
        raise InputError(f"{path}: detection {first.position} (image {first.image_id}): category_id "
                         f"{first.category_id} is not a category of {gt.path} (--strict; without it such detections "
                         "are left out with a warning, as pycocotools' COCOeval leaves them out)")
    ids = sorted({d.category_id for d in unknown})
    named = ", ".join(str(i) for i in ids[:MAX_IDS_NAMED]) + (f", ... ({len(ids)} ids)" if len(ids) > MAX_IDS_NAMED
                                                              else "")
    warnings.append(f"{path}: {len(unknown)} detection(s) of category id(s) {named} not in {gt.path}'s categories "
                    "left out, as pycocotools' COCOeval leaves them out (--strict: an error)")
    return [d for d in detections if d.category_id in gt.category_ids]


def _is_compressed(segmentation: object) -> bool:
    return isinstance(segmentation, dict) and isinstance(segmentation.get("counts"), (str, bytes))


def load_results(path: Path, gt: GroundTruth, *, lvis: bool = False, max_dets: int = LVIS_MAX_DETS,
                 strict: bool = False) -> Results:
    """Read a results file against its annotation file (the rules of the module docstring; ``strict``: its warnings
    are errors). The file is decoded a chunk's detections at a time (:func:`~nobg_metrics.io.json_stream.array_runs`):
    each is checked and kept as a :class:`Detection`, and its decoded entry dropped. A file that is not valid JSON is
    refused as such even where an earlier detection is wrong (the whole file is read first, as before)."""
    detections = _detections(path, gt)
    warnings: list[str] = []
    if not detections:
        if strict:
            raise InputError(f"{path}: no detections (--strict; pycocotools' loadRes refuses an empty list too)")
        warnings.append(f"{path}: no detections: every AP and AR is 0 where there are ground truths (-1 where there "
                        "are none); pycocotools' loadRes refuses an empty list, detectron2 warns 'No predictions from "
                        "the model!'")
    count = len(detections)
    if lvis:
        detections = _lvis_cap(detections, max_dets)
    area_from_box = False
    if detections:
        first = detections[0].box
        # loadRes: 'bbox' in anns[0] and not anns[0]['bbox'] == []; LVISResults: "bbox" in result_anns[0]
        area_from_box = not isinstance(first, NoBox) and (lvis or first != BadBox([]))
    detections = _unknown_categories(path, gt, detections, strict, warnings)
    if area_from_box:
        for detection in detections:
            box = detection.box
            detection.box_area = box if type(box) is float else _box_area(path, detection, lvis)
    notes = []
    other_forms = 0 if area_from_box else sum(not _is_compressed(d.segmentation) for d in detections)
    if other_forms:
        notes.append(f"{path}: {other_forms} detection(s) as polygons or uncompressed RLEs without a 'bbox': their "
                     "area is their mask's pixel count (pycocotools' loadRes reads these forms only with a 'bbox')")
    if lvis and len(detections) < count:
        notes.append(f"{path}: {count - len(detections)} detection(s) beyond the {max_dets} best of their image left "
                     "out (LVIS's max_dets)")
    if lvis and area_from_box:
        before = len(detections)
        detections = [d for d in detections if d.box_area is not None and d.box_area > 0]
        if len(detections) < before:
            notes.append(f"{path}: {before - len(detections)} detection(s) with a box of area <= 0 left out (LVIS)")
    if lvis and gt.federated:
        present: dict[int, set[int]] = {
            image.id: {a["category_id"] for _, a in image.annotations} for image in gt.images
        }
        before = len(detections)
        detections = [d for d in detections
                      if d.category_id in present[d.image_id] or d.category_id in gt.by_id[d.image_id].neg_category_ids]
        if len(detections) < before:
            notes.append(f"{path}: {before - len(detections)} detection(s) of categories not annotated in their image "
                         "(neither present nor in its neg_category_ids) left out, as LVIS's federated evaluation does")
    per_image: dict[int, list[Detection]] = defaultdict(list)
    for detection in detections:
        per_image[detection.image_id].append(detection)
    return Results(path, dict(per_image), area_from_box, lvis and not area_from_box, count, len(detections), notes,
                   warnings)
