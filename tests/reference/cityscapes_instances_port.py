"""Reference Cityscapes instance AP (mask and Boundary AP): a numpy port of the rules of boundary-iou-api's
``boundary_iou/cityscapes_instance_api/evalInstanceLevelSemanticLabeling.py`` (commit 37d2558) on cityscapesScripts'
``instances2dict``, ``instance.py`` and ``helpers/labels.py``, written from their definition, one image and one
prediction at a time.

Per image (``match_image``):

- gt segments: every distinct value ``v`` of the instanceIds map, class ``v // 1000`` for ``v >= 1000`` else ``v``
  (``Instance.getLabelID``); only the evaluated classes (``hasInstances and not ignoreInEval``) are kept, group
  regions (``v < 1000``) included; ``pixels = |gt == v|``; in boundary mode the segment's band
  ``mask_to_boundary(gt == v, ratio)`` on the full map and its size.
- void pixels: ``gt`` equal to the id of an ``ignoreInEval`` label (a raw value, so ``29`` is void, ``29001`` is not).
- predictions of a non-evaluated label and empty masks are dropped; for the others: pixels, band pixels, void pixels,
  and a *pair* with every segment of the same class whose mask intersection is > 0 and, in boundary mode, whose band
  intersection is > 0 too.

Per class and overlap threshold (``class_ap``): gts are the segments with ``v >= 1000`` and ``pixels >= min size``;
a pair matches when ``overlap > threshold`` (strict), ``overlap`` the mask IoU, or ``min(mask IoU, band IoU)`` in
boundary mode. A gt with matches is one true entry with the best score and one false entry per other match; a gt
without is a miss. A prediction that matches no segment at all (gts, groups and small ones alike) is a false entry
unless ``(void + Σ group ∩ + Σ small ∩) / pixels > threshold`` over its pairs (a group under the size cut counts
twice). AP: the precision/recall points at each distinct entry score (``>= score``), the artificial point (p, r) =
(1, 0) after the last, integrated as ``Σ p_i (r_{i-1} - r_{i+1}) / 2`` with ``r_{-1} = r_0``. No gt: NaN; gts but no
prediction of the class: 0; predictions but no entry: the reference fails (``IndexError``), ``no_entries="zero"``
gives 0 (what its integration gives for the artificial point alone).
"""

from __future__ import annotations

import math

import numpy as np

from tests.reference.boundary_iou_ref import mask_to_boundary

CLASSES = {24: "person", 25: "rider", 26: "car", 27: "truck", 28: "bus", 31: "train", 32: "motorcycle",
           33: "bicycle"}
"""Evaluated label ids -> names, in ``labels.py`` order."""
IGNORED_IDS = (0, 1, 2, 3, 4, 5, 6, 9, 10, 14, 15, 16, 18, 29, 30, -1)
"""Label ids with ``ignoreInEval``: their raw values in the map are void."""
KNOWN_IDS = set(range(-1, 34))


def overlaps() -> np.ndarray:
    """``np.arange(0.5, 1., 0.05)``: the ten thresholds in the reference's float64 values."""
    return np.arange(0.5, 1.0, 0.05)


def label_of(value: int) -> int:
    return value if value < 1000 else int(value / 1000)


def match_image(gt: np.ndarray, preds: list[tuple[np.ndarray, int, float]], iou_type: str = "segm",
                dilation_ratio: float = 0.005) -> tuple[list[dict], list[dict]]:
    """Segments and predictions of one image with their pairs (module doc)."""
    boundary = iou_type == "boundary"
    segments = []
    for value in np.unique(gt):
        value = int(value)
        if label_of(value) not in CLASSES:
            continue
        mask = gt == value
        segment = {"id": value, "label": label_of(value), "pixels": int(mask.sum())}
        if boundary:
            segment["band"] = mask_to_boundary(mask.astype(np.uint8), dilation_ratio) > 0
            segment["band_pixels"] = int(segment["band"].sum())
        segment["mask"] = mask
        segments.append(segment)
    void = np.isin(gt, IGNORED_IDS)
    kept = []
    for mask, label, score in preds:
        if label not in KNOWN_IDS:
            raise KeyError(label)  # the reference's id2label lookup
        mask = np.asarray(mask, bool)
        if label not in CLASSES or not mask.any():
            continue
        pred = {"label": label, "score": float(score), "pixels": int(mask.sum()), "void": int((mask & void).sum()),
                "pairs": []}
        band = mask_to_boundary(mask.astype(np.uint8), dilation_ratio) > 0 if boundary else None
        if boundary:
            pred["band_pixels"] = int(band.sum())
        for index, segment in enumerate(segments):
            if segment["label"] != label:
                continue
            inter = int((segment["mask"] & mask).sum())
            band_inter = int((segment["band"] & band).sum()) if boundary else 1
            if inter > 0 and band_inter > 0:
                pred["pairs"].append((index, inter, band_inter))
        kept.append(pred)
    for segment in segments:
        segment.pop("mask")
        segment.pop("band", None)
    return segments, kept


def _overlap(segment: dict, pred: dict, inter: int, band_inter: int, boundary: bool) -> float:
    value = inter / (segment["pixels"] + pred["pixels"] - inter)
    if boundary:
        value = min(value, band_inter / (segment["band_pixels"] + pred["band_pixels"] - band_inter))
    return value


def _curve_ap(entries: list[tuple[float, bool]], misses: int, no_entries: str) -> float:
    """The reference's precision-recall construction and step integration for one class and threshold."""
    if not entries:
        if no_entries == "zero":
            return 0.0
        raise IndexError("no entries: the reference indexes an empty cumsum")
    scores = np.array([s for s, _ in entries], np.float64)
    true = np.array([t for _, t in entries], np.float64)
    order = np.argsort(scores, kind="stable")
    scores, true = scores[order], true[order]
    total_true = true.sum()
    total = len(scores)
    distinct = [i for i in range(total) if i == 0 or scores[i] != scores[i - 1]]
    precision, recall = [], []
    below = np.concatenate([[0.0], np.cumsum(true)])  # trues strictly below index i: below[i]
    for start in distinct:
        tp = total_true - below[start]
        fp = (total - start) - tp
        fn = below[start] + misses
        precision.append(float(tp) / (tp + fp))
        recall.append(float(tp) / (tp + fn))
    precision.append(1.0)
    recall.append(0.0)
    ap = 0.0
    for i, p in enumerate(precision):
        before = recall[i - 1] if i > 0 else recall[0]
        after = recall[i + 1] if i + 1 < len(recall) else 0.0
        ap += p * (0.5 * before - 0.5 * after)
    return ap


def class_ap(images: list[tuple[list[dict], list[dict]]], label: int, threshold: float, iou_type: str,
             min_region_size: int = 100, no_entries: str = "raise") -> float:
    """AP of one class at one overlap threshold over ``match_image`` results."""
    boundary = iou_type == "boundary"
    entries: list[tuple[float, bool]] = []
    misses, have_gt, have_pred = 0, False, False
    for segments, preds in images:
        mine = [p for p in preds if p["label"] == label]
        have_pred |= bool(mine)
        gts = [i for i, s in enumerate(segments)
               if s["label"] == label and s["id"] >= 1000 and s["pixels"] >= min_region_size]
        have_gt |= bool(gts)
        for index in gts:
            scores = [p["score"] for p in mine for (j, inter, band) in p["pairs"]
                      if j == index and _overlap(segments[j], p, inter, band, boundary) > threshold]
            if not scores:
                misses += 1
                continue
            best = max(scores)
            entries.append((best, True))
            scores.remove(best)
            entries.extend((s, False) for s in scores)
        for p in mine:
            if any(_overlap(segments[j], p, inter, band, boundary) > threshold for (j, inter, band) in p["pairs"]):
                continue
            ignored = p["void"]
            for j, inter, _ in p["pairs"]:
                if segments[j]["id"] < 1000:
                    ignored += inter
                if segments[j]["pixels"] < min_region_size:
                    ignored += inter
            if float(ignored) / p["pixels"] <= threshold:
                entries.append((p["score"], False))
    if not have_gt:
        return math.nan
    if not have_pred:
        return 0.0
    return _curve_ap(entries, misses, no_entries)


def evaluate(data: list[tuple[np.ndarray, list[tuple[np.ndarray, int, float]]]], iou_type: str = "segm",
             dilation_ratio: float = 0.005, min_region_size: int = 100, no_entries: str = "raise") -> dict:
    """``{"ap_matrix": (8, 10), "ap", "ap_50", "ap_per_class", "ap_50_per_class"}`` over ``[(gt, preds), ...]``."""
    images = [match_image(gt, preds, iou_type, dilation_ratio) for gt, preds in data]
    thresholds = overlaps()
    matrix = np.array([[class_ap(images, label, t, iou_type, min_region_size, no_entries) for t in thresholds]
                       for label in CLASSES])
    with np.errstate(all="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return {"ap_matrix": matrix, "ap": np.nanmean(matrix), "ap_50": np.nanmean(matrix[:, 0]),
                    "ap_per_class": np.mean(matrix, axis=1), "ap_50_per_class": matrix[:, 0]}
