"""COCO-panoptic-like scenes at any H x W: a gt and a model-like prediction as id maps + ``segments_info``.

A scene (seeded, no files) is drawn in frame-relative coordinates, so it scales to any size:

- **stuff bands**: 2-5 horizontal bands with wavy borders across the whole width (sky / building / grass /
  road-like), each a stuff segment;
- **things**: real object shapes of :mod:`shapes` (persons, animals, large objects, blob clusters) of random
  size pasted at random places, later ones occluding earlier ones; some are **crowd** segments (``iscrowd=1``);
- **void**: a thin unlabelled ring around some things and a few unlabelled blobs (id 0).

The prediction redraws every segment with a displaced boundary (a shift and a random erosion or dilation of
a few pixels), and then: some things are **missed** (the stuff below shows through), some get a **swapped
class**, some **spurious** things appear, crowd regions are predicted as ordinary things, and a few blobs are
left unlabelled (prediction void). Segment ids are COCO's RGB-coded random ids, or ``1, 2, 3, ...`` with
``sequential_ids=True`` (what detectron2 writes, and the ids that can meet the reference's marker id).

Returns numpy arrays and plain dicts, the forms the COCO panoptic PNG + JSON hold
(:func:`to_png` writes the PNG, :func:`coco_json` the JSON entries).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

try:  # run from benchmarks/ (on sys.path) or imported as benchmarks.panoptic_scenes (the tests)
    from shapes import make_gt
except ModuleNotFoundError:
    from benchmarks.shapes import make_gt

THING_IDS = (1, 2, 3, 5, 7, 11)
STUFF_IDS = (12, 15, 17, 20)
"""Small COCO-like category ids (sparse, things first); the reference's marker id is ``max + 1 = 21``."""


@dataclass
class Scene:
    """One image: ``(H, W)`` uint32 id maps and their ``segments_info`` lists (COCO panoptic format)."""

    gt: np.ndarray
    gt_segments: list[dict]
    pred: np.ndarray
    pred_segments: list[dict]
    name: str = ""
    notes: dict = field(default_factory=dict)


def categories(thing_ids=THING_IDS, stuff_ids=STUFF_IDS) -> list[dict]:
    """The JSON ``categories`` list (things first, then stuff, as COCO lists them)."""
    return ([{"id": int(i), "name": f"thing{i}", "isthing": 1, "supercategory": "thing"} for i in thing_ids]
            + [{"id": int(i), "name": f"stuff{i}", "isthing": 0, "supercategory": "stuff"} for i in stuff_ids])


def _smooth(width: int, rng: np.random.Generator, cells: int) -> np.ndarray:
    coarse = rng.uniform(-1, 1, (1, cells + 1)).astype(np.float32)
    return cv2.resize(coarse, (width, 1), interpolation=cv2.INTER_CUBIC)[0]


def _bands(height: int, width: int, rng: np.random.Generator, count: int, jitter: float = 0.0,
           borders: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(H, W) band index map with wavy borders, and the border heights (fractions) used."""
    if borders is None:
        borders = np.sort(rng.uniform(0.15, 0.9, count - 1))
    yy = np.arange(height, dtype=np.float32)[:, None] / max(height, 1)
    index = np.zeros((height, width), np.int64)
    for k, level in enumerate(borders):
        wave = level + 0.05 * _smooth(width, rng, 6) + jitter * _smooth(width, rng, 12)
        index = np.where(yy >= wave[None, :], k + 1, index)
    return index, borders


def _thing_mask(height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """A bool (H, W) mask of one object shape of random size and place (may touch or cross the border)."""
    kind = rng.choice(["person", "animal", "large", "blobs", "person", "animal"])
    bh = int(max(3, rng.uniform(0.12, 0.6) * height))
    bw = int(max(3, rng.uniform(0.12, 0.6) * width))
    shape = make_gt(str(kind), (bh, bw), rng, antialiased=False) > 128
    if kind == "blobs":  # keep a few of the blob cluster's components: a handful of pieces
        count, labels = cv2.connectedComponents(shape.astype(np.uint8))
        keep = rng.choice(np.arange(1, max(count, 2)), size=min(3, max(count - 1, 1)), replace=False)
        shape = np.isin(labels, keep)
    mask = np.zeros((height, width), bool)
    top = int(rng.integers(-bh // 4, max(height - bh * 3 // 4, 1)))
    left = int(rng.integers(-bw // 4, max(width - bw * 3 // 4, 1)))
    rows = slice(max(top, 0), min(top + bh, height))
    cols = slice(max(left, 0), min(left + bw, width))
    mask[rows, cols] = shape[rows.start - top:rows.stop - top, cols.start - left:cols.stop - left]
    return mask


def _perturb(mask: np.ndarray, rng: np.random.Generator, strength: float) -> np.ndarray:
    """The mask shifted by a few pixels and eroded or dilated by a few (``strength`` scales both)."""
    height, width = mask.shape
    unit = max(1.0, min(height, width) / 160 * strength)
    dy, dx = (round(float(v)) for v in rng.normal(0, unit, 2))
    shifted = np.zeros_like(mask)
    src_rows = slice(max(0, -dy), min(height, height - dy))
    src_cols = slice(max(0, -dx), min(width, width - dx))
    dst_rows = slice(max(0, dy), min(height, height + dy))
    dst_cols = slice(max(0, dx), min(width, width + dx))
    shifted[dst_rows, dst_cols] = mask[src_rows, src_cols]
    k = int(rng.integers(0, max(2, int(2 * unit)) + 1))
    if k:
        kernel = np.ones((2 * k + 1, 2 * k + 1), np.uint8)
        op = cv2.erode if rng.random() < 0.5 else cv2.dilate
        shifted = op(shifted.astype(np.uint8), kernel) > 0
    return shifted


class _Ids:
    """Segment ids: random 24-bit RGB codes (COCO) or 1, 2, 3, ... (sequential)."""

    def __init__(self, rng: np.random.Generator, sequential: bool, start: int = 1) -> None:
        self.rng, self.sequential, self.next, self.used = rng, sequential, start, {0}

    def __call__(self) -> int:
        if self.sequential:
            self.next += 1
            return self.next - 1
        while True:
            value = int(self.rng.integers(1, 1 << 24))
            if value not in self.used:
                self.used.add(value)
                return value


def _segments(ids: np.ndarray, cats: dict[int, int], crowd: dict[int, int], order: list[int]) -> list[dict]:
    """``segments_info`` of the ids that survived painting, in ``order``."""
    present, counts = np.unique(ids, return_counts=True)
    area = dict(zip(present.tolist(), counts.tolist()))
    out = []
    for sid in order:
        if sid in area and sid != 0:
            ys, xs = np.nonzero(ids == sid)
            bbox = [int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)]
            out.append({"id": int(sid), "category_id": int(cats[sid]), "iscrowd": int(crowd.get(sid, 0)),
                        "area": int(area[sid]), "bbox": bbox})
    return out


def make_scene(height: int = 480, width: int = 640, seed: int | np.random.Generator = 0, *, things: int = 10,
               stuff: int = 4, sequential_ids: bool = False, thing_ids=THING_IDS, stuff_ids=STUFF_IDS,
               strength: float = 1.0, shuffle_segments: bool = True) -> Scene:
    """A gt and a prediction of one panoptic scene (module notes). ``things`` and ``stuff`` set the counts."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    gt_ids, pred_ids = _Ids(rng, sequential_ids), _Ids(rng, sequential_ids)
    gt = np.zeros((height, width), np.uint32)
    pred = np.zeros((height, width), np.uint32)
    gt_cat, gt_crowd, pred_cat = {}, {}, {}
    gt_order, pred_order = [], []
    # stuff bands, gt and a jittered prediction of them (a swapped stuff class now and then)
    count = int(max(1, stuff))
    band_cats = rng.choice(stuff_ids, size=count, replace=count > len(stuff_ids))
    band_gt, borders = _bands(height, width, rng, count)
    band_pred, _ = _bands(height, width, rng, count, jitter=0.02 * strength,
                          borders=borders + rng.normal(0, 0.02, len(borders)))
    for k in range(count):
        sid = gt_ids()
        gt[band_gt == k] = sid
        gt_cat[sid], gt_order = int(band_cats[k]), [*gt_order, sid]
        pid = pred_ids()
        pred[band_pred == k] = pid
        swapped = rng.random() < 0.15
        pred_cat[pid] = int(rng.choice(stuff_ids)) if swapped else int(band_cats[k])
        pred_order.append(pid)
    # things, painted in order (later ones occlude), with their predictions
    void = np.zeros((height, width), bool)
    for _ in range(int(things)):
        mask = _thing_mask(height, width, rng)
        if not mask.any():
            continue
        category = int(rng.choice(thing_ids))
        sid = gt_ids()
        is_crowd = rng.random() < 0.12
        gt[mask] = sid
        gt_cat[sid], gt_order = category, [*gt_order, sid]
        if is_crowd:
            gt_crowd[sid] = 1
        if rng.random() < 0.3:  # an unlabelled ring around the thing
            ring = cv2.dilate(mask.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
            void |= ring & ~mask
        fate = rng.random()
        if fate < 0.12:
            continue  # missed
        pid = pred_ids()
        pred[_perturb(mask, rng, strength)] = pid
        pred_cat[pid] = int(rng.choice(thing_ids)) if fate < 0.24 else category  # swapped class
        pred_order.append(pid)
    for _ in range(int(rng.integers(1, 4))):  # spurious things
        mask = _perturb(_thing_mask(height, width, rng), rng, strength)
        pid = pred_ids()
        pred[mask] = pid
        pred_cat[pid] = int(rng.choice(thing_ids))
        pred_order.append(pid)
    blobs = np.zeros((height, width), np.uint8)
    for _ in range(int(rng.integers(1, 4))):  # unlabelled blobs: gt void, and prediction void elsewhere
        centre = (int(rng.uniform(0, width)), int(rng.uniform(0, height)))
        axes = (max(1, int(rng.uniform(0.02, 0.08) * width)), max(1, int(rng.uniform(0.02, 0.08) * height)))
        cv2.ellipse(blobs, centre, axes, float(rng.uniform(0, 180)), 0, 360, 1, -1)
    gt[void | (blobs > 0)] = 0
    holes = np.zeros((height, width), np.uint8)
    for _ in range(int(rng.integers(0, 3))):
        centre = (int(rng.uniform(0, width)), int(rng.uniform(0, height)))
        axes = (max(1, int(rng.uniform(0.01, 0.05) * width)), max(1, int(rng.uniform(0.01, 0.05) * height)))
        cv2.ellipse(holes, centre, axes, float(rng.uniform(0, 180)), 0, 360, 1, -1)
    pred[holes > 0] = 0
    if shuffle_segments:
        rng.shuffle(gt_order)
        rng.shuffle(pred_order)
    return Scene(gt, _segments(gt, gt_cat, gt_crowd, gt_order), pred, _segments(pred, pred_cat, {}, pred_order))


def tensor_form(scene: Scene, thing_ids=THING_IDS):
    """``(preds, target, iscrowd)`` in torchmetrics' convention: (H, W, 2) int64 ``(category_id, instance_id)``
    (instance = the segment id for things, 0 for stuff; category 0, no thing nor stuff, where the id map is
    void) and the (H, W) bool crowd marks."""
    import torch

    out = []
    things = {int(t) for t in thing_ids}
    for ids, segments in ((scene.pred, scene.pred_segments), (scene.gt, scene.gt_segments)):
        lookup = {s["id"]: (s["category_id"], s["id"] if s["category_id"] in things else 0) for s in segments}
        present, inverse = np.unique(ids, return_inverse=True)
        table = np.array([lookup.get(int(v), (0, 0)) for v in present], np.int64).reshape(-1, 2)
        out.append(torch.from_numpy(table[inverse.reshape(ids.shape)]))
    crowd_ids = [s["id"] for s in scene.gt_segments if s["iscrowd"]]
    return out[0], out[1], torch.from_numpy(np.isin(scene.gt, crowd_ids))


def id2rgb(ids: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 of an id map: ``id = R + 256 G + 256² B`` (COCO panoptic PNG)."""
    ids = ids.astype(np.uint32)
    return np.stack([ids % 256, ids // 256 % 256, ids // 65536 % 256], axis=-1).astype(np.uint8)


def to_png(ids: np.ndarray, path) -> None:
    """Write an id map as a COCO panoptic PNG."""
    from PIL import Image

    Image.fromarray(id2rgb(ids)).save(path)


def write_dataset(scenes: list[Scene], root, cats: list[dict] | None = None) -> dict[str, str]:
    """Write ``scenes`` as a COCO panoptic gt and prediction (JSON + PNG folders) under ``root``.

    Returns:
        ``{"gt_json", "gt_folder", "pred_json", "pred_folder"}`` paths (str).
    """
    import json
    from pathlib import Path

    root = Path(root)
    paths = {"gt_json": root / "gt.json", "gt_folder": root / "gt", "pred_json": root / "pred.json",
             "pred_folder": root / "pred"}
    paths["gt_folder"].mkdir(parents=True, exist_ok=True)
    paths["pred_folder"].mkdir(parents=True, exist_ok=True)
    gt_json = {"images": [], "annotations": [], "categories": cats or categories()}
    pred_json = {"annotations": []}
    for index, scene in enumerate(scenes):
        name = scene.name or f"{index:06d}"
        height, width = scene.gt.shape
        gt_json["images"].append({"id": index, "file_name": f"{name}.jpg", "height": height, "width": width})
        gt_json["annotations"].append({"image_id": index, "file_name": f"{name}.png",
                                       "segments_info": scene.gt_segments})
        pred_json["annotations"].append({"image_id": index, "file_name": f"{name}.png",
                                         "segments_info": scene.pred_segments})
        to_png(scene.gt, paths["gt_folder"] / f"{name}.png")
        to_png(scene.pred, paths["pred_folder"] / f"{name}.png")
    paths["gt_json"].write_text(json.dumps(gt_json))
    paths["pred_json"].write_text(json.dumps(pred_json))
    return {key: str(value) for key, value in paths.items()}
