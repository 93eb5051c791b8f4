"""TIDE on real COCO-format data: torchmetrics' COCO val2014-100 set with cocoapi's fake box and mask results,
against tidecv 1.0.1 reading the same files (skipped where the files are absent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from nobg_metrics.functional.instance.tide import tide_errors
from tests.instance.test_tide import assert_same, run_tidecv

mask_utils = pytest.importorskip("pycocotools.mask")
pytest.importorskip("tidecv")


REAL = Path(__file__).resolve().parents[1] / "peer" / "_data" / "detection"
REAL_FILES = {"bbox": "instances_val2014_fakebbox100_results.json",
              "segm": "instances_val2014_fakesegm100_results.json"}


def _real_dicts(iou_type: str) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, torch.Tensor]]]:
    """COCO val2014-100 and cocoapi's fake results as detection dicts, images in the file's order (tidecv's)."""
    dataset = json.loads((REAL / "instances_val2014_100.json").read_text())
    results = json.loads((REAL / REAL_FILES[iou_type]).read_text())
    by_image: dict[int, tuple[list[Any], list[Any]]] = {image["id"]: ([], []) for image in dataset["images"]}
    for ann in dataset["annotations"]:
        by_image[ann["image_id"]][0].append(ann)
    for ann in results:
        by_image[ann["image_id"]][1].append(ann)
    sizes = {image["id"]: (image["height"], image["width"]) for image in dataset["images"]}

    def shapes(anns: list[Any], image_id: int) -> dict[str, torch.Tensor]:
        if iou_type == "bbox":
            xywh = torch.tensor([a["bbox"] for a in anns], dtype=torch.float64).reshape(-1, 4)
            return {"boxes": torch.cat([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], dim=1)}
        h, w = sizes[image_id]
        rles = [mask_utils.merge(mask_utils.frPyObjects(a["segmentation"], h, w)) if isinstance(a["segmentation"], list)
                else mask_utils.frPyObjects(a["segmentation"], h, w) if isinstance(a["segmentation"]["counts"], list)
                else a["segmentation"] for a in anns]
        masks = np.stack([mask_utils.decode(r) for r in rles]) if rles else np.zeros((0, h, w), dtype=np.uint8)
        return {"masks": torch.from_numpy(masks.astype(bool))}

    preds, target = [], []
    for image_id, (gts, dets) in by_image.items():
        target.append({**shapes(gts, image_id), "labels": torch.tensor([a["category_id"] for a in gts]),
                       "iscrowd": torch.tensor([a["iscrowd"] for a in gts])})
        preds.append({**shapes(dets, image_id), "labels": torch.tensor([a["category_id"] for a in dets]),
                      "scores": torch.tensor([a["score"] for a in dets], dtype=torch.float64)})
    return preds, target


@pytest.mark.skipif(not (REAL / "instances_val2014_100.json").exists(), reason="COCO val2014-100 files absent")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' frPyObjects under numpy 2
@pytest.mark.parametrize("iou_type", ["bbox", pytest.param("segm", marks=pytest.mark.slow)])  # 640 x 480 masks: ~10 s
def test_equals_tidecv_on_real_coco(iou_type: str) -> None:
    """COCO val2014-100 (torchmetrics' test set) with cocoapi's fake results, as tidecv reads the files."""
    reference = run_tidecv(REAL / "instances_val2014_100.json", REAL / REAL_FILES[iou_type], iou_type == "segm")
    ours = tide_errors(*_real_dicts(iou_type), iou_type=iou_type, thresholds="coco")  # type: ignore[arg-type]
    assert_same(ours, reference)
