"""Box AP on real COCO-format data: torchmetrics' COCO val2014-100 set and cocoapi's fake box results, against
pycocotools' ``COCOeval(iouType="bbox")`` (skipped where the files are absent)."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
from collections import defaultdict
from typing import Any

import pytest
import torch
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from tests.instance.helpers import assert_coco_equal
from tests.instance.test_bbox_data import run_prepared

DATA = pathlib.Path(__file__).resolve().parents[1] / "peer" / "_data" / "detection"
GT, RESULTS = DATA / "instances_val2014_100.json", DATA / "instances_val2014_fakebbox100_results.json"
pytestmark = pytest.mark.skipif(not (GT.exists() and RESULTS.exists()), reason="COCO val2014-100 files absent")


def _dicts(dataset: dict[str, Any], results: list[dict[str, Any]], box_format: str
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One pred and one target dict per gt image (sorted ids), the boxes as given (``xywh``) or as ``xyxy``."""
    gts, dts = defaultdict(list), defaultdict(list)
    for ann in dataset["annotations"]:
        gts[ann["image_id"]].append(ann)
    for ann in results:
        dts[ann["image_id"]].append(ann)

    def boxes(anns: list[dict[str, Any]]) -> torch.Tensor:
        out = torch.tensor([a["bbox"] for a in anns], dtype=torch.float64).reshape(-1, 4)
        if box_format == "xyxy":
            out = torch.cat([out[:, :2], out[:, :2] + out[:, 2:]], dim=1)
        return out

    preds, target = [], []
    for image_id in sorted(image["id"] for image in dataset["images"]):
        g, d = gts[image_id], dts[image_id]
        preds.append({"boxes": boxes(d), "scores": torch.tensor([a["score"] for a in d], dtype=torch.float64),
                      "labels": torch.tensor([a["category_id"] for a in d], dtype=torch.int64)})
        target.append({"boxes": boxes(g), "labels": torch.tensor([a["category_id"] for a in g], dtype=torch.int64),
                       "iscrowd": torch.tensor([a["iscrowd"] for a in g], dtype=torch.int64),
                       "area": torch.tensor([a["area"] for a in g], dtype=torch.float64), "image_id": image_id})
    return preds, target


def _reference(dataset: dict[str, Any], results: list[dict[str, Any]]) -> COCOeval:
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = dataset
        gt.createIndex()
        ev = COCOeval(gt, gt.loadRes(results), "bbox")
        ev.evaluate()
        ev.accumulate()
    return ev


@pytest.mark.parametrize("box_format", ["xywh", "xyxy"])
def test_bbox_val2014_100_matches_pycocotools(box_format):
    dataset, results = json.loads(GT.read_text()), json.loads(RESULTS.read_text())
    preds, target = _dicts(dataset, results, box_format)
    ours = run_prepared(preds, target, box_format=box_format, extended_summary=True)
    if box_format == "xyxy":  # what pycocotools gets from torchmetrics: w = x2 - x1 of those xyxy boxes
        for ann in results:
            x, y, w, h = ann["bbox"]
            ann["bbox"] = [x, y, (x + w) - x, (y + h) - y]
    ev = _reference(dataset, results)
    worst = _assert_equal(ours, ev, dataset)
    assert worst <= 1e-12


def _assert_equal(ours: dict[str, torch.Tensor], ev: COCOeval, dataset: dict[str, Any]) -> float:
    """:func:`assert_coco_equal` with the reference's category axis mapped to our classes (COCO ids skip)."""
    ids = sorted(c["id"] for c in dataset["categories"])
    position = {c: i for i, c in enumerate(ids)}
    classes = ours["classes"].reshape(-1).tolist()
    index = torch.tensor([position[c] for c in classes])
    remapped = dict(ours)
    remapped["classes"] = index
    return assert_coco_equal(remapped, ev, atol=1e-12)
