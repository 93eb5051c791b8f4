"""Shared checks of the instance-AP tests: ours against a reference evaluator, value by value."""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import torch

from benchmarks.instance_data import InstanceImage, make_images, to_coco, to_torch
from nobg_metrics.functional import mean_average_precision
from tests.reference.coco_boundary_ap import run_coco, summary

COCO_KEYS = {"map": ("ap", None, "all", "last"), "map_50": ("ap", 0.5, "all", "last"),
             "map_75": ("ap", 0.75, "all", "last"), "map_small": ("ap", None, "small", "last"),
             "map_medium": ("ap", None, "medium", "last"), "map_large": ("ap", None, "large", "last"),
             "mar_small": ("ar", None, "small", "last"), "mar_medium": ("ar", None, "medium", "last"),
             "mar_large": ("ar", None, "large", "last")}
LVIS_KEYS = {"AP": "map", "AP50": "map_50", "AP75": "map_75", "APs": "map_small", "APm": "map_medium",
             "APl": "map_large", "APr": "map_rare", "APc": "map_common", "APf": "map_frequent",
             "AR@300": "mar_300", "ARs@300": "mar_small", "ARm@300": "mar_medium", "ARl@300": "mar_large"}


def images(count: int, sizes: list[tuple[int, int]], seed: int = 0, **options: Any) -> list[InstanceImage]:
    """Small COCO-like images (few categories so that groups share gts, crowd gts, ties and duplicates): fresh
    copies of a cache (tests add fields to ``extra``)."""
    frozen = tuple(sorted(options.items()))
    return [copy.deepcopy(image) for image in _cached_images(count, tuple(sizes), seed, frozen)]


@functools.lru_cache(maxsize=64)
def _cached_images(count: int, sizes: tuple[tuple[int, int], ...], seed: int,
                   options: tuple[tuple[str, Any], ...]) -> list[InstanceImage]:
    defaults = {"instances": 4.0, "detections": 9.0, "categories": 5, "crowd_rate": 0.1, "degrade": "simple"}
    return make_images(count, list(sizes), seed=seed, **{**defaults, **dict(options)})


def _aligned(reference: np.ndarray, classes: torch.Tensor, axis: int) -> torch.Tensor:
    """The reference's per-category axis (its category list: ids 0..K-1 and any label used) reduced to ``classes``."""
    return torch.from_numpy(reference).index_select(axis, classes.long())


def assert_coco_equal(ours: dict[str, torch.Tensor], ev: Any, max_dets: list[int] | None = None,
                      atol: float = 0.0) -> float:
    """Every array and summary value of ``ours`` (``extended_summary=True``) equals the evaluator's; returns the
    largest difference."""
    classes = ours["classes"].reshape(-1)
    worst = 0.0
    for key, axis in (("precision", 2), ("recall", 1), ("scores", 2)):
        expected = _aligned(ev.eval[key], classes, axis)
        difference = (ours[key] - expected).abs().max().item() if expected.numel() else 0.0
        assert difference <= atol, f"{key}: max difference {difference}"
        worst = max(worst, difference)
    caps = max_dets or ev.params.maxDets
    for key, (kind, iou, area, _) in COCO_KEYS.items():
        expected = summary(ev, area, iou, caps[-1], kind)
        assert abs(float(ours[key]) - expected) <= atol, f"{key}: ours {float(ours[key])}, reference {expected}"
    for cap in caps:
        expected = summary(ev, "all", None, cap, "ar")
        assert abs(float(ours[f"mar_{cap}"]) - expected) <= atol, f"mar_{cap}"
    return worst


def assert_lvis_equal(ours: dict[str, torch.Tensor], ev: Any) -> None:
    """Arrays and ``LVISEval.results`` equal, value for value."""
    classes = ours["classes"].reshape(-1)
    assert torch.equal(ours["precision"][..., -1], _aligned(ev.eval["precision"], classes, 2))
    assert torch.equal(ours["recall"][..., -1], _aligned(ev.eval["recall"], classes, 1))
    cap = ev.params.max_dets
    for key, name in LVIS_KEYS.items():
        key, name = key.replace("@300", f"@{cap}"), name.replace("mar_300", f"mar_{cap}")
        assert float(ours[name]) == float(ev.results[key]), (f"{name}: ours {float(ours[name])}, "
                                                             f"reference {ev.results[key]}")


def coco_case(data: list[InstanceImage], iou_type: str, *, evaluator: str = "port", with_bbox: bool = False,
              **options: Any) -> tuple[dict[str, torch.Tensor], Any]:
    """Ours (functional) and the reference on the same images."""
    preds, target = to_torch(data, keys=("dt_area", "area", "ignore"))
    ours = mean_average_precision(preds, target, iou_type=iou_type, extended_summary=True, **options)
    dataset, results = to_coco(data, categories=5, with_bbox=with_bbox,
                               gt_area="extra" if any("area" in image.extra for image in data) else "mask")
    ev = run_coco(dataset, results, iou_type, evaluator=evaluator,
                  dilation_ratio=options.get("dilation_ratio", 0.02), iou_thresholds=options.get("iou_thresholds"),
                  rec_thresholds=options.get("rec_thresholds"), max_dets=options.get("max_detection_thresholds"))
    return ours, ev


def add_lvis_lists(data: list[InstanceImage], categories: int, seed: int = 0, federated: bool = True) -> dict[int, str]:
    """Per-image ``neg_category_ids`` / ``not_exhaustive_category_ids`` and category frequencies."""
    rng = np.random.default_rng(seed)
    for image in data:
        present = sorted(set(image.gt_labels.tolist()))
        absent = [c for c in range(categories) if c not in present]
        if federated:
            image.extra["neg_category_ids"] = np.array(
                sorted(rng.choice(absent, size=min(2, len(absent)), replace=False)) if absent else [], np.int64)
        image.extra["not_exhaustive_category_ids"] = np.array(present[:1] if present and rng.random() < 0.5 else [],
                                                              np.int64)
    return {c: "rcf"[c % 3] for c in range(categories)}


def lvis_case(data: list[InstanceImage], iou_type: str, frequencies: dict[int, str], *, evaluator: str = "port",
              categories: int = 5, **options: Any) -> tuple[dict[str, torch.Tensor], Any]:
    preds, target = to_torch(data, keys=("neg_category_ids", "not_exhaustive_category_ids", "area", "ignore"))
    ours = mean_average_precision(preds, target, iou_type=iou_type, protocol="lvis", extended_summary=True,
                                  category_frequencies=frequencies, **options)
    dataset, results = to_coco(data, categories=categories,
                               gt_area="extra" if any("area" in image.extra for image in data) else "mask")
    for entry in dataset["categories"]:
        entry["frequency"] = frequencies.get(entry["id"], "f")
    from tests.reference.lvis_boundary_ap import (
        run_lvis,  # skips where lvis is not installed
    )

    caps = options.get("max_detection_thresholds") or [300]
    ev = run_lvis(dataset, results, iou_type, evaluator=evaluator, max_dets=caps[-1])
    return ours, ev
