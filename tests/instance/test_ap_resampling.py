"""Resampled COCO AP from kept statistics: exact with unit weights, equal to AP of the explicitly duplicated images."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics import MeanAveragePrecision
from nobg_metrics.functional import mean_average_precision
from nobg_metrics.functional.instance.ap_resampling import resampling_records, weighted_summary

KEYS = ("map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100",
        "mar_small", "mar_medium", "mar_large")


def box_images(count: int, seed: int, within_ties: bool = False, shift: float = 0.0
               ) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, torch.Tensor]]]:
    """Box detections of ``count`` images: 0-5 gts of 3 categories (some crowd, sizes over every area range),
    detections near them (some of another class, some poorly placed), background ones and duplicates; scores
    from a grid of 12 values, so that images share scores — distinct within an image unless ``within_ties``.
    ``shift``: added to every detection's offset (a worse model)."""
    rng = np.random.default_rng(seed)
    preds, target = [], []
    for index in range(count):
        g = int(rng.integers(0, 6))
        corner = rng.uniform(0, 300, (g, 2))
        size = rng.choice([12.0, 50.0, 130.0], g) * rng.uniform(0.8, 1.2, g)
        gt_boxes = np.concatenate([corner, corner + size[:, None]], 1)
        gt_labels = rng.integers(1, 4, g)
        crowd = rng.random(g) < 0.1
        det_boxes, det_labels = [], []
        for box, label in zip(gt_boxes, gt_labels):
            for _ in range(int(rng.integers(0, 3))):
                offset = rng.normal(0, 0.08 + shift, 2) * (box[2] - box[0])
                det_boxes.append(box + np.tile(offset, 2))
                det_labels.append(label if rng.random() < 0.85 else rng.integers(1, 4))
        for _ in range(int(rng.integers(0, 3))):
            c = rng.uniform(0, 300, 2)
            det_boxes.append(np.concatenate([c, c + rng.uniform(10, 120)]))
            det_labels.append(rng.integers(1, 4))
        d = len(det_boxes)
        grid = np.linspace(0.05, 0.95, 12)
        scores = rng.choice(grid, d, replace=within_ties) if d <= 12 or within_ties else rng.choice(grid, d)
        preds.append({"boxes": torch.tensor(np.array(det_boxes).reshape(-1, 4)), "scores": torch.tensor(scores),
                      "labels": torch.tensor(np.array(det_labels, dtype=np.int64))})
        target.append({"boxes": torch.tensor(gt_boxes.reshape(-1, 4)), "labels": torch.tensor(gt_labels),
                       "iscrowd": torch.tensor(crowd), "image_id": torch.tensor(index)})
    return preds, target


def states_of(preds: list, target: list) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The metric's values and its kept statistics with each record's image index."""
    metric = MeanAveragePrecision(iou_type="bbox", record_inputs=False)
    metric.update(preds, target)
    values = metric.compute()
    states = {name: torch.cat(getattr(metric, name)) for name in ("det_scores", "det_labels", "det_keys",
                                                                   "det_outcomes", "gt_labels", "gt_counted")}
    ids = torch.tensor([int(t["image_id"]) for t in target])
    states["det_image"] = torch.searchsorted(ids, states["det_keys"][:, 0].contiguous())
    states["gt_image"] = torch.repeat_interleave(torch.arange(len(target)),
                                                 torch.tensor([t["labels"].shape[0] for t in target]))
    return values, states


def test_unit_weights_give_the_exact_values() -> None:
    preds, target = box_images(60, 0, within_ties=True)
    values, states = states_of(preds, target)
    metric = MeanAveragePrecision(iou_type="bbox").options
    out = weighted_summary(resampling_records([states], len(target)), torch.ones(1, len(target)), metric)
    for key in KEYS:
        assert abs(float(out[key][0]) - float(values[key])) <= 1e-12, key


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_resample_is_the_ap_of_the_duplicated_images(seed: int) -> None:
    preds, target = box_images(40, seed)
    _, states = states_of(preds, target)
    options = MeanAveragePrecision(iou_type="bbox").options
    records = resampling_records([states], len(target))
    rng = np.random.default_rng(seed)
    weights = np.bincount(rng.integers(0, len(target), (4, len(target))).ravel()
                          + np.repeat(np.arange(4) * len(target), len(target)), minlength=4 * len(target))
    weights = torch.tensor(weights.reshape(4, len(target)), dtype=torch.float64)
    out = weighted_summary(records, weights, options)
    for row in range(weights.shape[0]):
        dup_preds, dup_target = [], []
        for image, copies in enumerate(weights[row].long().tolist()):  # copies adjacent, in image order
            for _ in range(copies):
                dup_preds.append(preds[image])
                dup_target.append({**target[image], "image_id": torch.tensor(len(dup_target))})
        exact = mean_average_precision(dup_preds, dup_target, iou_type="bbox", warn_on_many_detections=False)
        for key in KEYS:
            assert abs(float(out[key][row]) - float(exact[key])) <= 1e-12, (row, key)


def test_pooled_sources_with_exclusive_weights_give_the_mixed_results() -> None:
    preds_a, target = box_images(30, 4)
    preds_b, _ = box_images(30, 4, shift=0.1)
    _, states_a = states_of(preds_a, target)
    _, states_b = states_of(preds_b, target)
    options = MeanAveragePrecision(iou_type="bbox").options
    records = resampling_records([states_a, states_b], len(target))
    swap = torch.tensor(np.random.default_rng(0).integers(0, 2, len(target)), dtype=torch.float64)
    out = weighted_summary(records, torch.cat([1 - swap, swap])[None], options)
    mixed = [pb if s else pa for pa, pb, s in zip(preds_a, preds_b, swap.tolist())]
    exact = mean_average_precision(mixed, target, iou_type="bbox")
    for key in KEYS:
        assert abs(float(out[key][0]) - float(exact[key])) <= 1e-12, key
