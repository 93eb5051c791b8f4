"""TIDE error analysis against tidecv 1.0.1 (BOX and MASK mode, on COCO JSON files written here), and the
invariants of the Boundary IoU mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from nobg_metrics.functional.instance.iou import image_ious, instance_boundaries, mask_counts
from nobg_metrics.functional.instance.tide import (
    COCO_THRESHOLDS,
    tide_error_statistics,
    tide_error_values,
    tide_errors,
)
from nobg_metrics.functional.instance.tide_match import merge_statistics

tidecv = pytest.importorskip("tidecv")
mask_utils = pytest.importorskip("pycocotools.mask")

MAIN = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")
SPECIAL = ("FalsePos", "FalseNeg")
CATEGORIES = (1, 3, 7)


def _box(rng: np.random.Generator, height: int, width: int, thin: bool) -> list[float]:
    """An object's ``xyxy`` box: integer corners for masks, with decimals otherwise (set by the caller)."""
    if thin:  # a line one or two pixels thick: its boundary band is the whole mask
        short, long = int(rng.integers(1, 3)), int(rng.integers(4, min(height, width) // 2))
        w, h = (short, long) if rng.random() < 0.5 else (long, short)
    else:
        w, h = int(rng.integers(5, width // 2 + 1)), int(rng.integers(5, height // 2 + 1))
    x, y = int(rng.integers(0, width - w)), int(rng.integers(0, height - h))
    return [float(x), float(y), float(x + w), float(y + h)]


def _jitter(box: list[float], rng: np.random.Generator, shift: float, height: int, width: int) -> list[float]:
    """The box moved by about ``shift`` of its size, clipped to the image, at least one pixel wide."""
    w, h = box[2] - box[0], box[3] - box[1]
    dx, dy = round(float(rng.uniform(-shift, shift)) * w), round(float(rng.uniform(-shift, shift)) * h)
    x1, y1 = min(max(box[0] + dx, 0.0), width - 1.0), min(max(box[1] + dy, 0.0), height - 1.0)
    return [x1, y1, max(x1 + 1.0, min(x1 + w, float(width))), max(y1 + 1.0, min(y1 + h, float(height)))]


def _raster(box: list[float], height: int, width: int, ellipse: bool) -> np.ndarray:
    """A rectangle, or the ellipse inscribed in it (never empty), as an :math:`(H, W)` bool mask."""
    x1, y1, x2, y2 = (int(v) for v in box)
    mask = np.zeros((height, width), dtype=bool)
    mask[y1:y2, x1:x2] = True
    if ellipse and x2 - x1 > 4 and y2 - y1 > 4:
        yy, xx = np.mgrid[0:height, 0:width]
        cy, cx, ry, rx = (y1 + y2 - 1) / 2, (x1 + x2 - 1) / 2, (y2 - y1) / 2, (x2 - x1) / 2
        mask &= ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0
    return mask


def make_images(seed: int, thin: bool = False, crowded: int = 120) -> list[dict[str, Any]]:
    """Images with every TIDE case: good, duplicate, misclassified, poorly localised, both, background and missed
    detections, crowd gts with detections inside, images without gts / detections, score ties, and one image with
    ``crowded`` detections (more than ``max_detections``)."""
    rng = np.random.default_rng(seed)
    images = []
    for index in range(14):
        height, width = (30, 44) if index % 2 else (40, 32)
        gts: list[tuple[list[float], int, int]] = []  # box, label, crowd
        dets: list[tuple[list[float], int, float]] = []
        count = 0 if index in (3, 9) else int(rng.integers(1, 6))
        for _ in range(count):
            box, label = _box(rng, height, width, thin), int(rng.choice(CATEGORIES))
            crowd = int(rng.random() < 0.12)
            gts.append((box, label, crowd))
            kinds = rng.choice(["good", "dupe", "cls", "loc", "both", "miss", "inside"], size=int(rng.integers(1, 4)))
            for kind in kinds:
                other = int(rng.choice([c for c in CATEGORIES if c != label]))
                shift = 0.08 if kind in ("good", "dupe", "cls", "inside") else 0.7
                moved = _jitter(box, rng, shift, height, width)
                if kind == "miss":
                    continue
                dets.append((moved, other if kind in ("cls", "both") else label, round(float(rng.random()), 1)))
                if kind == "dupe":
                    dets.append((_jitter(box, rng, 0.1, height, width), label, round(float(rng.random()), 1)))
        for _ in range(int(rng.integers(0, 3)) if index != 11 else 0):  # background
            dets.append((_box(rng, height, width, thin), int(rng.choice(CATEGORIES)), round(float(rng.random()), 2)))
        if index == 5:  # more detections than max_detections
            for _ in range(crowded):
                dets.append((_box(rng, height, width, thin), int(rng.choice(CATEGORIES)), float(rng.random())))
        if not thin and index % 3 == 0:  # boxes with decimals
            dets = [([v + float(rng.integers(0, 4)) / 8 for v in b], c, s) for b, c, s in dets]
        images.append({"height": height, "width": width, "gts": gts, "dets": dets, "ellipse": index % 2 == 0})
    return images


def to_torch(images: list[dict[str, Any]], iou_type: str) -> tuple[list[dict[str, torch.Tensor]], ...]:
    """torchmetrics' detection dicts (float64 ``xyxy`` boxes, or bool masks)."""
    def shapes(boxes: list[list[float]], image: dict[str, Any]) -> dict[str, torch.Tensor]:
        if iou_type == "bbox":
            return {"boxes": torch.tensor(boxes, dtype=torch.float64).reshape(-1, 4)}
        h, w = image["height"], image["width"]
        masks = [_raster(box, h, w, image["ellipse"]) for box in boxes]
        return {"masks": torch.from_numpy(np.stack(masks) if masks else np.zeros((0, h, w), dtype=bool))}

    preds, target = [], []
    for image in images:
        gts, dets = image["gts"], image["dets"]
        target.append({**shapes([g[0] for g in gts], image),
                       "labels": torch.tensor([g[1] for g in gts], dtype=torch.int64),
                       "iscrowd": torch.tensor([g[2] for g in gts], dtype=torch.int64)})
        preds.append({**shapes([d[0] for d in dets], image),
                      "labels": torch.tensor([d[1] for d in dets], dtype=torch.int64),
                      "scores": torch.tensor([d[2] for d in dets], dtype=torch.float64)})
    return preds, target


def write_coco(images: list[dict[str, Any]], folder: Path, mask: bool) -> tuple[Path, Path]:
    """The gt file and the results file tidecv's ``datasets.COCO`` / ``COCOResult`` read (boxes ``xywh``)."""

    def rle(box: list[float], image: dict[str, Any]) -> dict[str, Any]:
        raster = _raster(box, image["height"], image["width"], image["ellipse"])
        encoded = mask_utils.encode(np.asfortranarray(raster.astype(np.uint8)))
        return {"size": encoded["size"], "counts": encoded["counts"].decode("ascii")}

    gt_json: dict[str, Any] = {"images": [], "annotations": [], "categories": [{"id": c, "name": f"c{c}"}
                                                                               for c in CATEGORIES]}
    results: list[dict[str, Any]] = []
    for image_id, image in enumerate(images, start=1):
        gt_json["images"].append({"id": image_id, "file_name": f"{image_id}.png", "height": image["height"],
                                  "width": image["width"]})
        for box, label, crowd in image["gts"]:
            ann = {"id": len(gt_json["annotations"]) + 1, "image_id": image_id, "category_id": label,
                   "iscrowd": crowd, "bbox": [box[0], box[1], box[2] - box[0], box[3] - box[1]]}
            ann["segmentation"] = rle(box, image)  # COCO() reads it in both modes
            gt_json["annotations"].append(ann)
        for box, label, score in image["dets"]:
            det: dict[str, Any] = {"image_id": image_id, "category_id": label, "score": score}
            if mask:
                det["segmentation"] = rle(box, image)
            else:
                det["bbox"] = [box[0], box[1], box[2] - box[0], box[3] - box[1]]
            results.append(det)
    gt_path, result_path = folder / "gt.json", folder / "results.json"
    gt_path.write_text(json.dumps(gt_json))
    result_path.write_text(json.dumps(results))
    return gt_path, result_path


def run_tidecv(gt_path: Path, result_path: Path, mask: bool, max_dets: int = 100) -> dict[str, Any]:
    """tidecv 1.0.1: ``evaluate_range`` over COCO's thresholds, errors at 0.5."""
    from tidecv import TIDE, datasets

    gt, results = datasets.COCO(str(gt_path)), datasets.COCOResult(str(result_path))
    gt.max_dets = max_dets
    tide = TIDE(pos_threshold=0.5, background_threshold=0.1, mode=TIDE.MASK if mask else TIDE.BOX)
    tide.evaluate_range(gt, results, mode=TIDE.MASK if mask else TIDE.BOX)
    run = tide.runs[results.name]
    return {"ap": run.ap, "main": tide.get_main_errors()[results.name],
            "special": tide.get_special_errors()[results.name],
            "counts": {error.short_name: value for error, value in run.count_errors().items()},
            "ap_per_threshold": [r.ap for r in tide.run_thresholds[results.name]]}


def assert_same(ours: dict[str, Any], reference: dict[str, Any]) -> None:
    assert float(ours["ap"]) == pytest.approx(reference["ap"], abs=1e-9)
    for name in MAIN:
        assert float(ours["main"][name]) == pytest.approx(reference["main"][name], abs=1e-9), name
        assert int(ours["counts"][name]) == reference["counts"][name], name
    for name in SPECIAL:
        assert float(ours["special"][name]) == pytest.approx(reference["special"][name], abs=1e-9), name
    assert ours["ap_per_threshold"].tolist() == pytest.approx(reference["ap_per_threshold"], abs=1e-9)


@pytest.mark.parametrize(("iou_type", "seed", "max_dets"), [("bbox", 0, 100), ("bbox", 1, 100), ("bbox", 2, 6),
                                                             ("segm", 0, 100), ("segm", 3, 100), ("segm", 4, 5)])
def test_equals_tidecv(tmp_path: Path, iou_type: str, seed: int, max_dets: int) -> None:
    images = make_images(seed)
    reference = run_tidecv(*write_coco(images, tmp_path, iou_type == "segm"), iou_type == "segm", max_dets)
    ours = tide_errors(*to_torch(images, iou_type), iou_type=iou_type, max_detections=max_dets, thresholds="coco")
    assert_same(ours, reference)
    assert sum(int(ours["counts"][name]) for name in MAIN) > 0


def test_every_error_type_occurs(tmp_path: Path) -> None:
    """The generated data exercise every error type (else the parity above would prove less)."""
    counts = dict.fromkeys(MAIN, 0)
    for iou_type, seed in (("bbox", 0), ("bbox", 1), ("segm", 0), ("segm", 3)):
        out = tide_errors(*to_torch(make_images(seed), iou_type), iou_type=iou_type)
        for name in MAIN:
            counts[name] += int(out["counts"][name])
    assert all(value > 0 for value in counts.values()), counts


def test_batches_merge_to_the_whole(tmp_path: Path) -> None:
    """Statistics of consecutive batches, merged, give the values of one pass (what a metric class keeps)."""
    preds, target = to_torch(make_images(1), "segm")
    options: dict[str, Any] = {"iou_type": "boundary", "thresholds": COCO_THRESHOLDS, "pos_threshold": 0.5,
                               "background_threshold": 0.1, "max_detections": 100, "dilation_ratio": 0.02}
    parts = [tide_error_statistics(preds[a:b], target[a:b], **options) for a, b in ((0, 5), (5, 6), (6, 14))]
    merged, whole = tide_error_values(merge_statistics(parts)), tide_error_values(
        tide_error_statistics(preds, target, **options))
    for key in ("ap", "ap_per_threshold"):
        assert torch.equal(merged[key], whole[key])
    for group in ("main", "special", "counts"):
        assert all(torch.equal(merged[group][n], whole[group][n]) for n in whole[group])


def test_boundary_equals_mask_for_thin_objects(tmp_path: Path) -> None:
    """Invariant: where every object is at most two pixels thick (band width 1 here), its boundary is the whole
    mask, so the boundary mode gives the mask mode's values — and tidecv's MASK mode's."""
    images = make_images(5, thin=True)
    preds, target = to_torch(images, "segm")
    for image in target + preds:
        masks = image["masks"]
        bands, areas = instance_boundaries(masks, 0.02)
        assert torch.equal(bands.area, areas) and torch.equal(mask_counts(masks.flatten(1)), areas)
    boundary = tide_errors(preds, target, iou_type="boundary", thresholds="coco")
    mask = tide_errors(preds, target, iou_type="segm", thresholds="coco")
    assert torch.equal(boundary["ap_per_threshold"], mask["ap_per_threshold"])
    for group in ("main", "special", "counts"):
        assert all(torch.equal(boundary[group][n], mask[group][n]) for n in mask[group])
    assert_same(boundary, run_tidecv(*write_coco(images, tmp_path, True), True))
    assert float(boundary["ap"]) < 100


def test_boundary_loc_is_boundary_quality() -> None:
    """Invariant: a detection whose mask IoU passes but whose boundary is off by a pixel is a true positive for
    masks and a Loc error for boundaries (Loc dAP = the whole AP lost)."""
    gt = torch.zeros(1, 64, 64, dtype=torch.bool)
    gt[0, 10:40, 10:40] = True
    det = torch.roll(gt, shifts=(1, 1), dims=(1, 2))
    mask_iou = image_ious(det.flatten(1), gt.flatten(1), mask_counts(det.flatten(1)), mask_counts(gt.flatten(1)),
                          torch.tensor([False]))
    (det_bands, det_area), (gt_bands, gt_area) = instance_boundaries(det, 0.02), instance_boundaries(gt, 0.02)
    both = image_ious(det.flatten(1), gt.flatten(1), det_area, gt_area, torch.tensor([False]), det_bands, gt_bands)
    assert float(mask_iou) >= 0.5 and 0.1 <= float(both) < 0.5
    preds = [{"masks": det, "scores": torch.tensor([0.9]), "labels": torch.tensor([1])}]
    target = [{"masks": gt, "labels": torch.tensor([1])}]
    mask, boundary = tide_errors(preds, target, iou_type="segm"), tide_errors(preds, target, iou_type="boundary")
    assert float(mask["ap"]) == 100 and all(float(v) == 0 for v in mask["main"].values())
    assert float(boundary["ap"]) == 0 and int(boundary["counts"]["Loc"]) == 1
    assert float(boundary["main"]["Loc"]) == 100 and float(boundary["special"]["FalseNeg"]) == 0


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "boundary"])
def test_perfect_detections(iou_type: str) -> None:
    """Invariant: detections equal to the gts give AP 100 at every threshold and no error of any kind."""
    target = to_torch(make_images(6), "bbox" if iou_type == "bbox" else "segm")[1]
    key = "boxes" if iou_type == "bbox" else "masks"
    perfect = []
    for gt in target:
        keep = gt["iscrowd"] == 0
        scores = torch.linspace(0.9, 0.5, int(keep.sum()), dtype=torch.float64)
        perfect.append({key: gt[key][keep], "labels": gt["labels"][keep], "scores": scores})
    out = tide_errors(perfect, target, iou_type=iou_type, thresholds="coco")  # type: ignore[arg-type]
    assert out["ap_per_threshold"].tolist() == [100.0] * 10
    assert all(float(v) == 0 for group in ("main", "special", "counts") for v in out[group].values())


def test_boundary_errors_are_non_negative() -> None:
    """Invariant on data with every error type: main dAPs are >= 0 (tidecv's clamp) and so are the special ones."""
    out = tide_errors(*to_torch(make_images(0), "segm"), iou_type="boundary")
    assert all(float(v) >= 0 for group in ("main", "special") for v in out[group].values())
    assert 0 < float(out["ap"]) < 100


def test_rejects_bad_arguments() -> None:
    preds, target = to_torch(make_images(0)[:2], "bbox")
    with pytest.raises(ValueError, match="iou_type"):
        tide_errors(preds, target, iou_type="keypoints")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pos_threshold"):
        tide_errors(preds, target, pos_threshold=0.52, thresholds="coco")
    with pytest.raises(ValueError, match="misses"):
        tide_errors(preds, target, iou_type="segm")
    with pytest.raises(ValueError, match="at least one"):
        none = torch.zeros(0, dtype=torch.int64)
        tide_errors([{"boxes": torch.zeros(0, 4), "scores": torch.zeros(0), "labels": none}],
                    [{"boxes": torch.zeros(0, 4), "labels": none}])

