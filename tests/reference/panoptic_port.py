"""Reference panoptic quality: a port of panopticapi's ``pq_compute`` and of boundary-iou-api's Boundary PQ,
written from their definitions (numpy + OpenCV, one image at a time, in memory: no PNG, no processes).

Per image (``score_image``), for id maps ``gt``, ``pred`` (0 = void) and their ``segments_info`` lists:

- areas: a predicted segment's area is its pixel count; a gt segment's is its ``area`` field (the JSON's);
- boundary (``iou_type="boundary"``): each side's segments are visited in ``segments_info`` order on a copy of
  the id map; a segment's mask is read from that copy (``copy == id``), its boundary is
  ``mask_to_boundary(mask, ratio)``, then its mask pixels are overwritten by ``marker`` and its boundary
  pixels by its id again; ``boundary_area`` is the boundary's pixel count. boundary-iou-api's marker is
  ``max category id + 1``; ``marker=None`` uses ``-1`` on int64 maps, which no segment can hold (the exact
  rule: every boundary from the segment's own mask, interiors belong to no segment);
- pairs: ``np.unique`` of ``gt * 2^24 + pred`` on the id maps (and on the boundary maps);
- a (gt, pred) pair with a known gt segment that is not crowd, a known prediction and the same category:
  ``IoU = I / (A_p + A_g - I - |p ∩ gt void|)``; boundary: the same on the boundary maps and areas, and
  ``min(mask IoU, boundary IoU)`` taken as Python's ``min`` takes it (the first argument unless the second is
  smaller); a match when the value ``> 0.5``, which adds 1 to TP and the value to the IoU sum;
- FN: every unmatched non-crowd gt; the crowd gts are remembered per category, the last one wins;
- FP: every unmatched prediction unless ``(|p ∩ void| + |p ∩ crowd of its category|) / A_p > 0.5``.

``pq_average`` is panopticapi's per-class PQ / SQ / RQ and their means over the classes with TP + FP + FN > 0.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from tests.reference.boundary_iou_ref import mask_to_boundary

OFFSET = 1 << 24
VOID = 0


def _boundary_maps(ids: np.ndarray, segments: list[dict], ratio: float, marker: int) -> tuple[np.ndarray, dict]:
    """The boundary id map and ``{id: boundary_area}``, painted segment by segment in list order."""
    painted = ids.astype(np.int64).copy()
    areas = {}
    for segment in segments:
        mask = (painted == segment["id"]).astype(np.uint8)
        band = mask_to_boundary(mask, ratio)
        painted[mask > 0] = marker
        painted[band > 0] = segment["id"]
        areas[segment["id"]] = int((band > 0).sum())
    return painted, areas


def _pair_counts(gt: np.ndarray, pred: np.ndarray) -> dict[tuple[int, int], int]:
    """``{(gt value, pred value): pixels}`` over the pixels (values may be negative: the exact marker)."""
    keys = (gt.astype(np.int64) + 1) * (OFFSET + 1) + (pred.astype(np.int64) + 1)
    values, counts = np.unique(keys, return_counts=True)
    return {(int(v // (OFFSET + 1)) - 1, int(v % (OFFSET + 1)) - 1): int(c) for v, c in zip(values, counts)}


def score_image(gt: np.ndarray, pred: np.ndarray, gt_segments: list[dict], pred_segments: list[dict],
                iou_type: str = "segm", ratio: float = 0.02, marker: int | None = None) -> dict[int, list]:
    """Per-category ``[iou_sum, tp, fp, fn]`` of one image (module notes); ``marker=None`` is the exact rule."""
    marker = -1 if marker is None else marker
    gt_info = {s["id"]: dict(s) for s in gt_segments}
    pred_info = {s["id"]: dict(s) for s in pred_segments}
    ids, counts = np.unique(pred, return_counts=True)
    for value, count in zip(ids.tolist(), counts.tolist()):
        if value in pred_info:
            pred_info[value]["area"] = count
    stats: dict[int, list] = defaultdict(lambda: [0.0, 0, 0, 0])
    pairs = _pair_counts(gt, pred)
    if iou_type == "boundary":
        gt_band, gt_barea = _boundary_maps(gt, gt_segments, ratio, marker)
        pred_band, pred_barea = _boundary_maps(pred, pred_segments, ratio, marker)
        band_pairs = _pair_counts(gt_band, pred_band)
    gt_matched, pred_matched = set(), set()
    for (g, p), inter in pairs.items():
        if g not in gt_info or p not in pred_info:
            continue
        if gt_info[g]["iscrowd"] == 1 or gt_info[g]["category_id"] != pred_info[p]["category_id"]:
            continue
        union = pred_info[p]["area"] + gt_info[g]["area"] - inter - pairs.get((VOID, p), 0)
        value = np.float64(inter) / np.float64(union)
        if iou_type == "boundary":
            b_inter = band_pairs.get((g, p), 0)
            b_union = pred_barea[p] + gt_barea[g] - b_inter - band_pairs.get((VOID, p), 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                b_value = np.float64(b_inter) / np.float64(b_union)
            value = min(value, b_value)
        if value > 0.5:
            category = gt_info[g]["category_id"]
            stats[category][0] += float(value)
            stats[category][1] += 1
            gt_matched.add(g)
            pred_matched.add(p)
    crowd = {}
    for g, info in gt_info.items():
        if g in gt_matched:
            continue
        if info["iscrowd"] == 1:
            crowd[info["category_id"]] = g
            continue
        stats[info["category_id"]][3] += 1
    for p, info in pred_info.items():
        if p in pred_matched:
            continue
        ignored = pairs.get((VOID, p), 0)
        if info["category_id"] in crowd:
            ignored += pairs.get((crowd[info["category_id"]], p), 0)
        if ignored / info["area"] > 0.5:
            continue
        stats[info["category_id"]][2] += 1
    return dict(stats)


def accumulate(per_image: list[dict[int, list]]) -> dict[int, list]:
    """Sum the per-image statistics (IoU sums in image order, as the reference adds them)."""
    total: dict[int, list] = defaultdict(lambda: [0.0, 0, 0, 0])
    for stats in per_image:
        for category, values in stats.items():
            for k in range(4):
                total[category][k] += values[k]
    return dict(total)


def pq_average(stats: dict[int, list], categories: list[dict], isthing: bool | None,
               empty: float | None = None) -> tuple[dict, dict]:
    """panopticapi's ``PQStat.pq_average``: ``({pq, sq, rq, n}, {category id: {pq, sq, rq}})``.

    An average over no class raises ``ZeroDivisionError`` as the reference does, unless ``empty`` gives its value.
    """
    pq = sq = rq = 0.0
    n = 0
    per_class = {}
    for category in categories:
        if isthing is not None and (category["isthing"] == 1) != isthing:
            continue
        iou, tp, fp, fn = stats.get(category["id"], [0.0, 0, 0, 0])
        if tp + fp + fn == 0:
            per_class[category["id"]] = {"pq": 0.0, "sq": 0.0, "rq": 0.0}
            continue
        n += 1
        pq_class = iou / (tp + 0.5 * fp + 0.5 * fn)
        sq_class = iou / tp if tp != 0 else 0
        rq_class = tp / (tp + 0.5 * fp + 0.5 * fn)
        per_class[category["id"]] = {"pq": pq_class, "sq": sq_class, "rq": rq_class}
        pq, sq, rq = pq + pq_class, sq + sq_class, rq + rq_class
    if n == 0 and empty is not None:
        return {"pq": empty, "sq": empty, "rq": empty, "n": 0}, per_class
    return {"pq": pq / n, "sq": sq / n, "rq": rq / n, "n": n}, per_class


def results(stats: dict[int, list], categories: list[dict], empty: float | None = None) -> dict:
    """``pq_compute``'s result dict: ``All`` / ``Things`` / ``Stuff`` and ``per_class`` (of All)."""
    out = {}
    for name, isthing in (("All", None), ("Things", True), ("Stuff", False)):
        out[name], per_class = pq_average(stats, categories, isthing, empty)
        if name == "All":
            out["per_class"] = per_class
    return out


def boundary_marker(categories: list[dict]) -> int:
    """boundary-iou-api's ``BOUNDARY_ID``: the largest category id + 1."""
    return max(c["id"] for c in categories) + 1


def pq_compute(scenes, categories: list[dict], iou_type: str = "segm", ratio: float = 0.02,
               exact: bool = False, empty: float | None = None) -> dict:
    """The result dict over ``scenes`` (objects with ``gt``, ``pred``, ``gt_segments``, ``pred_segments``);
    ``exact``: the bands of the exact rule; ``empty``: the value of an average over no class (else it raises)."""
    marker = None if exact or iou_type == "segm" else boundary_marker(categories)
    per_image = [score_image(s.gt, s.pred, s.gt_segments, s.pred_segments, iou_type, ratio, marker) for s in scenes]
    return results(accumulate(per_image), categories, empty)
