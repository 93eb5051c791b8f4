"""``nobg-metrics instances`` on results files as users have them — detectron2's ``coco_instances_results.json``,
mmdetection's ``*.segm.json``, polygons, uncompressed RLEs — each against pycocotools' ``loadRes`` + ``COCOeval`` on
the same file (or, where ``loadRes`` cannot read a form without a ``bbox``, on the same masks as compressed RLEs);
and the warnings / ``--strict`` errors for an empty file and unknown categories."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.cli.instances.instances_data import _decode, _rle, _uncompressed, make_dataset, write_dataset
from tests.cli.instances.test_instances import COCO_KEYS, _coco_reference, _run

pytest.importorskip("pycocotools")
pytestmark = [pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")]  # pycocotools, numpy 2


def _sizes(gt: dict) -> dict[int, tuple[int, int]]:
    return {image["id"]: (image["height"], image["width"]) for image in gt["images"]}


def _as_form(results: list[dict], gt: dict, form: str, seed: int) -> list[dict]:
    """The detections rewritten as ``form`` writes them (the masks of ``polygons``: boxes at fractional corners)."""
    rng = np.random.default_rng(seed)
    sizes = _sizes(gt)
    out = []
    for entry in results:
        h, w = sizes[entry["image_id"]]
        mask = _decode(entry["segmentation"], h, w)
        if form == "mmdetection":  # mmdet's _segm2json: image_id, bbox, score, category_id, segmentation
            entry = {"image_id": entry["image_id"], "bbox": entry["bbox"], "score": entry["score"],
                     "category_id": entry["category_id"], "segmentation": entry["segmentation"]}
        elif form == "uncompressed":
            entry = dict(entry, segmentation=_uncompressed(mask))
        elif form == "polygons":
            ys, xs = np.nonzero(mask) if mask.any() else (np.array([0]), np.array([0]))
            x0, y0 = float(xs.min()) + rng.uniform(-0.4, 0.4), float(ys.min()) + rng.uniform(-0.4, 0.4)
            x1, y1 = float(xs.max()) + rng.uniform(0.6, 1.4), float(ys.max()) + rng.uniform(0.6, 1.4)
            entry = dict(entry, segmentation=[[x0, y0, x1, y0, x1, y1, x0, y1]])
        out.append(entry)
    return out


def _compressed(results: list[dict], gt: dict) -> list[dict]:
    """The same masks as compressed RLEs (the form ``loadRes`` reads without a ``bbox``)."""
    sizes = _sizes(gt)
    return [dict(entry, segmentation=_rle(_decode(entry["segmentation"], *sizes[entry["image_id"]])))
            for entry in results]


def _values(tmp_path, gt_path, dt_path, *flags: str) -> tuple[int, list[str], str, dict]:
    status, out, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--out",
                            str(tmp_path / "out"), "--device", "cpu", *flags)
    document = json.loads((tmp_path / "out" / "results.json").read_text()) if status == 0 else {}
    return status, out.splitlines(), err, document


def _assert_equal(document: dict, stats) -> None:
    for key, value in zip(COCO_KEYS, stats.tolist()):
        assert abs(document["results"][key] - value) <= 1e-12, key


@pytest.mark.parametrize("form", ["detectron2", "mmdetection", "polygons", "uncompressed"])
def test_a_results_file_with_boxes_is_read_as_load_res_reads_it(tmp_path, form):
    gt, results = make_dataset(21, with_bbox=True)
    gt_path, dt_path = write_dataset(tmp_path, gt, _as_form(results, gt, form, 21))
    lines, stats, _ = _coco_reference(gt_path, dt_path)
    status, out, err, document = _values(tmp_path, gt_path, dt_path)
    assert status == 0, err
    assert out == lines and document["detection_area"] == "bbox w*h" and document["warnings"] == []
    _assert_equal(document, stats)


@pytest.mark.parametrize("form", ["polygons", "uncompressed"])
def test_a_form_load_res_reads_only_with_boxes_is_scored_by_its_masks_pixel_counts(tmp_path, form):
    gt, results = make_dataset(22, with_bbox=False)
    detections = _as_form(results, gt, form, 22)
    gt_path, dt_path = write_dataset(tmp_path / "ref", gt, _compressed(detections, gt))
    lines, stats, _ = _coco_reference(gt_path, dt_path)
    gt_path, dt_path = write_dataset(tmp_path, gt, detections)
    status, out, err, document = _values(tmp_path, gt_path, dt_path)
    assert status == 0, err
    assert out == lines and document["detection_area"] == "mask pixels"
    assert "polygons or uncompressed RLEs without a 'bbox'" in err
    _assert_equal(document, stats)


def test_an_empty_results_file_warns_on_stderr_and_in_results_json(tmp_path):
    gt, _ = make_dataset(6)
    gt_path, dt_path = write_dataset(tmp_path, gt, [])
    status, out, err, document = _values(tmp_path, gt_path, dt_path)
    assert status == 0 and f"warning: {dt_path}: no detections" in err
    assert document["warnings"] == [err.split("warning: ", 1)[1].splitlines()[0]]
    assert document["results"]["map"] == 0.0 and document["results"]["mar_100"] == 0.0
    assert all(line.endswith(("= 0.000", "= -1.000")) for line in out)
    status, _, err, _ = _values(tmp_path, gt_path, dt_path, "--strict")
    assert status == 1 and "no detections (--strict" in err


def test_unknown_categories_are_ignored_as_cocoeval_ignores_them_unless_strict(tmp_path):
    gt, results = make_dataset(23, with_bbox=True)
    results[2]["category_id"] = 40
    results[5]["category_id"] = 41
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    lines, stats, _ = _coco_reference(gt_path, dt_path)  # loadRes keeps them; COCOeval scores gt categories only
    status, out, err, document = _values(tmp_path, gt_path, dt_path)
    assert status == 0, err
    assert out == lines
    _assert_equal(document, stats)
    (warning,) = document["warnings"]
    assert "2 detection(s) of category id(s) 40, 41 not in" in warning and f"warning: {warning}" in err
    assert {row["category_id"] for row in document["per_class"]} <= {1, 2, 3}
    status, out, err, _ = _values(tmp_path, gt_path, dt_path, "--strict")
    assert status == 1 and out == []
    assert f"{dt_path}: detection 2 (image {results[2]['image_id']}): category_id 40 is not a category of" in err
