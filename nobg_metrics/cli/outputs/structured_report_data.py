"""What the instances / panoptic report page needs beyond the written files, taken from a finished run's state:
the precision-recall curves of instance AP and the worst images with their boundary thumbnails.

- PR curves: the accumulate step run once more per IoU type on the metric's kept statistics with
  ``extended_summary`` on (no image is matched again), precision :math:`(T, R, K, A, M)` averaged over the
  categories with ground truths (COCO's ``-1`` cells left out) at area ``all`` and the largest max-dets: at IoU
  0.5, 0.75 and the mean over the thresholds, one value per recall threshold.
- worst instance images: the lowest per-image F1 ``2 TP / (2 TP + FP + FN)`` at IoU 0.5 (area ``all``) of the
  detections scoring at least :data:`SCORE` (within the max-dets cap); the matching is COCO's greedy one by
  score, so a detection's match does not depend on lower-scored ones and these counts are exact. FN = the image's
  non-crowd, non-ignored gts minus TP. Ties: more errors (FP + FN) first, then the image id. The first IoU type's
  matching is used.
- worst panoptic images: the lowest per-image PQ (the mean over the categories present in the image of
  ``IoU sum / (TP + FP / 2 + FN / 2)``), from the per-image statistics table.

torch and numpy, imported by the commands once a report is written.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nobg_metrics.cli.outputs.structured_report import WorstImage
from nobg_metrics.cli.outputs.structured_report_images import (
    boundary_thumbnail,
    label_edges,
    mask_edges,
    panoptic_ids,
)
from nobg_metrics.cli.outputs.structured_report_page import write_instances_report, write_panoptic_report
from nobg_metrics.functional.instance.matching import FP, TP
from nobg_metrics.functional.instance.mean_average_precision import statistics_values
from nobg_metrics.io.coco.annotations import read_json
from nobg_metrics.io.coco.masks import segmentation_masks

SCORE = 0.5
"""Detections scoring below this are left out of the worst-image counts and drawings."""
WORST_K = 6
"""Worst images shown on the page."""


def _states(metric: Any, prefix: str) -> dict[str, torch.Tensor]:
    """The records of one iou type (the metric's list states under ``prefix``), concatenated."""
    return {name[len(prefix):]: metric._record_tensor(metric.metric_state, name) for name in metric._list_layouts
            if name.startswith(prefix)}


def instance_curves(metric: Any) -> dict[str, dict[str, Any]]:
    """``iou type -> {"recall": [R], "curves": {label: [R] precision (None: no category)}}`` (module notes)."""
    curves = {}
    for iou_type, prefix in metric._prefixes.items():
        options = dataclasses.replace(metric._options[iou_type], extended_summary=True)
        values = statistics_values(_states(metric, prefix), options,
                                                 int(metric.metric_state["images_with_ids"]))
        precision = values["precision"][:, :, :, 0, -1].double().cpu().numpy()  # (T, R, K)
        valid = precision > -1
        count = valid.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_threshold = np.where(count > 0, np.where(valid, precision, 0).sum(axis=2) / count, np.nan)
        thresholds = np.array(options.iou_thresholds)
        lines = {}
        for wanted in (0.5, 0.75):
            index = int(np.argmin(np.abs(thresholds - wanted)))
            if abs(thresholds[index] - wanted) < 1e-9:
                lines[f"IoU {wanted:.2f}"] = per_threshold[index]
        if np.isfinite(per_threshold).all(axis=1).any():
            lines[f"mean IoU {thresholds[0]:.2f}:{thresholds[-1]:.2f}"] = np.nanmean(
                np.where(np.isfinite(per_threshold).all(axis=1, keepdims=True), per_threshold, np.nan), axis=0)
        curves[iou_type] = {"recall": list(options.rec_thresholds),
                            "curves": {label: [None if not np.isfinite(v) else float(v) for v in line]
                                       for label, line in lines.items()}}
    return curves


def _image_counts(metric: Any) -> dict[int, tuple[int, int]]:
    """image id -> (TP, FP) at IoU 0.5, area all, score >= :data:`SCORE`, within the cap (first IoU type)."""
    prefix = next(iter(metric._prefixes.values()))
    options = next(iter(metric._options.values()))
    states = _states(metric, prefix)
    keys, outcomes, scores = states["det_keys"].cpu(), states["det_outcomes"].cpu(), states["det_scores"].cpu()
    threshold = int(np.argmin(np.abs(np.array(options.iou_thresholds) - 0.5)))
    cap_rank = keys[:, 2] if options.lvis else keys[:, 3]
    kept = (scores >= SCORE) & (cap_rank < max(options.max_detection_thresholds))
    code = outcomes[:, 0, threshold]
    counts: dict[int, tuple[int, int]] = {}
    for image, tp, fp in zip(keys[kept, 0].tolist(), (code[kept] == TP).tolist(), (code[kept] == FP).tolist()):
        old = counts.get(image, (0, 0))
        counts[image] = (old[0] + int(tp), old[1] + int(fp))
    return counts


def _image_names(gt_path: Path) -> dict[int, str]:
    images = read_json(gt_path, "--gt-json-file").get("images", [])
    return {image["id"]: image.get("file_name", "") for image in images if isinstance(image, dict)}


def instance_worst(metric: Any, gt: Any, results: Any, image_folder: Path | None = None,
                   k: int = WORST_K) -> list[WorstImage]:
    """The ``k`` worst images of an instances run (module notes), with their thumbnails."""
    counts = _image_counts(metric)
    rows = []
    for image in gt.images:
        detections = results.per_image.get(image.id, [])
        if not image.annotations and not detections:
            continue
        tp, fp = counts.get(image.id, (0, 0))
        gts = sum(1 for _, ann in image.annotations if not ann.get("iscrowd", 0) and not ann.get("ignore", 0))
        fn = max(gts - tp, 0)
        errors = fp + fn
        f1 = 2 * tp / (2 * tp + errors) if tp + errors else 1.0
        rows.append((f1, -errors, image.id, image, tp, fp, fn))
    rows.sort(key=lambda row: row[:3])
    names = _image_names(gt.path) if image_folder is not None else {}
    worst = []
    for f1, _, image_id, image, tp, fp, fn in rows[:k]:
        detections = sorted((d for d in results.per_image.get(image_id, []) if d.score >= SCORE),
                            key=lambda d: -d.score)
        segmentations = [ann["segmentation"] for _, ann in image.annotations] + [d.segmentation for d in detections]
        masks = segmentation_masks(segmentations, image.height, image.width, device="cpu").numpy().astype(bool)
        count = len(image.annotations)
        edges = (mask_edges(masks[:count], image.height, image.width),
                 mask_edges(masks[count:], image.height, image.width))
        picture = image_folder / names[image_id] if names.get(image_id) and image_folder is not None else None
        shown = f"TP {tp} · FP {fp} · FN {fn} (score ≥ {SCORE:g})"
        worst.append(WorstImage(f"image {image_id}", f"F1@0.5 {f1:.3f}", shown, boundary_thumbnail(*edges, picture)))
    return worst


def panoptic_worst(table: Any, pairs: list[tuple[dict, dict]], gt_folder: Path, pred_folder: Path,
                   gt: dict[str, Any], image_folder: Path | None = None, k: int = WORST_K) -> list[WorstImage]:
    """The ``k`` worst images of a panoptic run by per-image PQ; ``table`` :math:`(n, C, 4)` per-image statistics
    (TP, FP, FN, IoU sum) in the order of ``pairs`` (gt annotation, prediction annotation)."""
    table = np.asarray(table, dtype=np.float64)
    tp, fp, fn, iou = (table[..., k] for k in range(4))
    present = (tp + fp + fn) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class = np.where(present, iou / np.where(present, tp + 0.5 * fp + 0.5 * fn, 1.0), 0.0)
        pq = per_class.sum(axis=1) / present.sum(axis=1)
    order = sorted((float(value), index) for index, value in enumerate(pq) if np.isfinite(value))
    files = {image.get("id"): image.get("file_name") for image in gt.get("images", []) if isinstance(image, dict)}
    worst = []
    for value, index in order[:k]:
        gt_ann, pred_ann = pairs[index]
        gt_ids, pred_ids = panoptic_ids(gt_folder / gt_ann["file_name"]), panoptic_ids(pred_folder /
                                                                                     pred_ann["file_name"])
        thumbnail = None
        if gt_ids is not None and pred_ids is not None and gt_ids.shape == pred_ids.shape:
            name = files.get(gt_ann.get("image_id"))
            picture = image_folder / name if image_folder is not None and name else None
            thumbnail = boundary_thumbnail(label_edges(gt_ids), label_edges(pred_ids), picture)
        counts = f"TP {int(tp[index].sum())} · FP {int(fp[index].sum())} · FN {int(fn[index].sum())}"
        worst.append(WorstImage(f"image {gt_ann.get('image_id')}", f"PQ {value:.3f}",
                                f"{counts} over {int(present[index].sum())} categories", thumbnail))
    return worst


def _stats_asked(args: Any) -> bool:
    return getattr(args, "bootstrap", None) is not None or getattr(args, "compare", None) is not None


def instances_report(args: Any, metric: Any, gt: Any, results: Any) -> Path:
    """Write ``args.out/report.html`` of an instances run after its other files (stats.json / errors.json read when
    this run asked for them: ``--bootstrap`` / ``--compare``, ``--errors``)."""
    optional = [name for name, asked in (("stats.json", _stats_asked(args)),
                                         ("errors.json", bool(getattr(args, "errors", None)))) if asked]
    return write_instances_report(args.out, curves=instance_curves(metric),
                                  worst=instance_worst(metric, gt, results, getattr(args, "image_folder", None)),
                                  optional=optional)


def panoptic_report(args: Any, table: Any, pairs: list[tuple[dict, dict]], task: Any, gt: dict[str, Any]) -> Path:
    """Write ``args.out/report.html`` of a panoptic run (``table``: its :math:`(n, C, 4)` per-image statistics)."""
    categories = [{"id": c, "name": n, "isthing": t} for c, n, t in zip(task.category_ids, task.names, task.isthing)]
    worst = panoptic_worst(table, pairs, task.gt_folder, task.pred_folder, gt, getattr(args, "image_folder", None))
    return write_panoptic_report(args.out, categories=categories, worst=worst,
                                 optional=["stats.json"] if _stats_asked(args) else [])
