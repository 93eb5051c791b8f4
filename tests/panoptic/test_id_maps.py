"""Panoptic id maps + ``segments_info`` (the command's form, in memory) against the pq_compute port: the JSON's
segment order (last crowd region, several segments of one stuff category) and boundary-iou-api's
``BOUNDARY_ID = max category id + 1`` collision, scored both ways: ``reference`` (as boundary-iou-api paints
the bands) and ``exact`` (every band from its own segment)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.panoptic_scenes import categories, make_scene
from nobg_metrics.cli.panoptic.run import add_statistics, new_metric, results_dict
from nobg_metrics.functional.panoptic.panoptic_quality import batch_statistics
from nobg_metrics.io.panoptic import PanopticTask, ids_batch
from tests.reference import panoptic_port

CATEGORIES = categories()
MARKER = panoptic_port.boundary_marker(CATEGORIES)  # 21


def _task(iou_type: str, collision: str = "reference", ratio: float = 0.02) -> PanopticTask:
    return PanopticTask(Path("."), Path("."), tuple(c["id"] for c in CATEGORIES),
                        tuple(c["isthing"] == 1 for c in CATEGORIES), tuple(c["name"] for c in CATEGORIES),
                        iou_type, ratio, collision)


def _score(scenes, task: PanopticTask) -> tuple[dict, int]:
    metric = new_metric(task)
    collisions = 0
    for scene in scenes:
        gt_ann = {"image_id": 0, "file_name": "x.png", "segments_info": scene.gt_segments}
        pred_ann = {"image_id": 0, "file_name": "x.png", "segments_info": scene.pred_segments}
        batch, collided = ids_batch(torch.from_numpy(scene.gt.astype(np.int32)),
                                    torch.from_numpy(scene.pred.astype(np.int32)), gt_ann, pred_ann, task)
        add_statistics(metric, batch_statistics(batch, len(task.category_ids), task.iou_type, task.dilation_ratio))
        collisions += collided
    return results_dict(metric, task), collisions


def _assert_close(ours: dict, reference: dict, atol: float = 1e-12) -> None:
    for group in ("All", "Things", "Stuff"):
        for name in ("pq", "sq", "rq"):
            assert abs(ours[group][name] - float(reference[group][name])) <= atol, (group, name)
        assert ours[group]["n"] == reference[group]["n"]
    for category, values in reference["per_class"].items():
        for name in ("pq", "sq", "rq"):
            assert abs(ours["per_class"][category][name] - float(values[name])) <= atol, (category, name)


@functools.cache
def _scenes(sequential: bool):
    """Sequential ids meet the marker id; these seeds make the collision change matches (checked below)."""
    return [make_scene(120, 77, [2, i], things=25, sequential_ids=sequential) for i in range(6 if sequential else 3)]


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_id_maps_equal_the_port(iou_type):
    scenes = _scenes(False)
    ours, collisions = _score(scenes, _task(iou_type))
    assert collisions == 0
    _assert_close(ours, panoptic_port.pq_compute(scenes, CATEGORIES, iou_type))


@pytest.mark.parametrize("collision", ["reference", "exact"])
def test_the_marker_id_collision_both_ways(collision):
    """Sequential segment ids reach 21 = max category id + 1: boundary-iou-api's interiors then belong to that
    segment. ``reference`` reproduces it, ``exact`` scores every band from its own segment; the two differ."""
    scenes = _scenes(True)
    assert all(any(s["id"] == MARKER for s in scene.gt_segments + scene.pred_segments) for scene in scenes)
    ours, collisions = _score(scenes, _task("boundary", collision))
    assert collisions == len(scenes)
    _assert_close(ours, panoptic_port.pq_compute(scenes, CATEGORIES, "boundary", exact=collision == "exact"))
    other = panoptic_port.pq_compute(scenes, CATEGORIES, "boundary", exact=collision != "exact")
    assert abs(ours["All"]["pq"] - float(other["All"]["pq"])) > 1e-3  # the collision changes TP / FP


def test_segm_is_not_affected_by_the_marker():
    scenes = _scenes(True)
    reference, _ = _score(scenes, _task("segm", "reference"))
    exact, _ = _score(scenes, _task("segm", "exact"))
    assert reference == exact
    _assert_close(reference, panoptic_port.pq_compute(scenes, CATEGORIES, "segm"))


def _one(gt, gt_segments, pred, pred_segments):
    from benchmarks.panoptic_scenes import Scene

    return Scene(np.array(gt, np.uint32), gt_segments, np.array(pred, np.uint32), pred_segments)


def test_segments_info_order_decides_the_crowd_region():
    # two crowd regions of thing 1 (ids 5 and 6); the one listed last is the category's crowd region
    gt = [[5, 5, 5, 12, 6, 6, 6, 12]]
    pred = [[3, 3, 3, 4, 4, 4, 4, 4]]
    pred_segments = [{"id": 3, "category_id": 1, "iscrowd": 0}, {"id": 4, "category_id": 12, "iscrowd": 0}]
    for order, fp in (([5, 6], 1), ([6, 5], 0)):  # the prediction lies on region 5
        gt_segments = [{"id": 12, "category_id": 12, "iscrowd": 0, "area": 2}]
        gt_segments += [{"id": i, "category_id": 1, "iscrowd": 1, "area": 3} for i in order]
        scene = _one(gt, gt_segments, pred, pred_segments)
        stats = panoptic_port.score_image(scene.gt, scene.pred, scene.gt_segments, scene.pred_segments)
        assert stats.get(1, [0, 0, 0, 0])[2] == fp
        ours, _ = _score([scene], _task("segm"))
        _assert_close(ours, panoptic_port.pq_compute([scene], CATEGORIES, "segm", empty=0.0))


def test_two_segments_of_one_stuff_category_stay_two_segments():
    gt = [[8, 8, 8, 8, 9, 9, 9, 9]]
    pred = [[8, 8, 8, 8, 8, 9, 9, 9]]
    segments = [{"id": 8, "category_id": 12, "iscrowd": 0, "area": 4}, {"id": 9, "category_id": 12, "iscrowd": 0,
                                                                          "area": 4}]
    scene = _one(gt, segments, pred, [dict(s) for s in segments])
    ours, _ = _score([scene], _task("boundary", ratio=0.3))
    _assert_close(ours, panoptic_port.pq_compute([scene], CATEGORIES, "boundary", 0.3, empty=0.0))
    assert ours["per_class"][12]["rq"] == 1.0  # both matched: 2 TP
