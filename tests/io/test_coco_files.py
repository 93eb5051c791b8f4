"""``nobg-metrics instances``' reading of annotation and results files (io/coco/annotations.py, coco_results.py) and its
per-image inputs (cli/instances/run.py ``image_inputs``): the reference loaders' rules, and errors that name the file,
the entry and its image."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from nobg_metrics.cli.instances.run import image_inputs
from nobg_metrics.io.coco.annotations import load_ground_truth
from nobg_metrics.io.coco.results import load_results
from nobg_metrics.io.coco.rle import encode
from nobg_metrics.io.errors import InputError

SQUARE = [[1.0, 1.0, 4.0, 1.0, 4.0, 4.0, 1.0, 4.0]]


def _write(tmp_path: Path, name: str, document: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _gt(**changes: object) -> dict:
    document = {
        "images": [{"id": 9, "height": 6, "width": 8}, {"id": 2, "height": 5, "width": 7}],
        "annotations": [
            {"id": 1, "image_id": 9, "category_id": 3, "segmentation": SQUARE, "area": 9.5, "iscrowd": 0},
            {"id": 2, "image_id": 2, "category_id": 1, "segmentation": {"size": [5, 7], "counts": [3, 4, 28]},
             "area": 4, "iscrowd": 1},
            {"id": 3, "image_id": 9, "category_id": 1, "segmentation": SQUARE, "area": 9},
        ],
        "categories": [{"id": 3, "name": "c3"}, {"id": 1, "name": "c1"}],
    }
    document.update(changes)
    return document


def _rle(h: int, w: int, box: tuple[int, int, int, int]) -> dict:
    mask = torch.zeros(h, w, dtype=torch.bool)
    mask[box[0]:box[1], box[2]:box[3]] = True
    return encode(mask)


def _dets(with_bbox: bool = True) -> list[dict]:
    dets = [{"image_id": 9, "category_id": 3, "score": 0.9, "segmentation": _rle(6, 8, (1, 4, 1, 4))},
            {"image_id": 2, "category_id": 1, "score": 0.5, "segmentation": _rle(5, 7, (0, 2, 0, 3))},
            {"image_id": 9, "category_id": 1, "score": 0.9, "segmentation": _rle(6, 8, (0, 6, 0, 1))}]
    if with_bbox:
        for det, box in zip(dets, ([1, 1, 3, 3], [0, 0, 3, 2.5], [0, 0, 1, 6])):
            det["bbox"] = box
    return dets


def test_images_are_evaluated_by_id_and_annotations_in_file_order(tmp_path):
    gt = load_ground_truth(_write(tmp_path, "gt.json", _gt()))
    assert [image.id for image in gt.images] == [2, 9]
    assert [ann["id"] for _, ann in gt.by_id[9].annotations] == [1, 3]
    assert [c["id"] for c in gt.categories] == [1, 3] and not gt.federated and gt.frequencies is None


def test_annotations_of_unknown_images_or_categories_are_left_out_with_a_note(tmp_path):
    document = _gt()
    document["annotations"] += [{"id": 7, "image_id": 5, "category_id": 1, "segmentation": SQUARE, "area": 1},
                                {"id": 8, "image_id": 9, "category_id": 4, "segmentation": SQUARE, "area": 1}]
    gt = load_ground_truth(_write(tmp_path, "gt.json", document))
    assert sum(len(image.annotations) for image in gt.images) == 3
    assert any("1 annotation(s) with an image_id not in 'images'" in note for note in gt.notes)
    assert any("1 annotation(s) with a category_id not in 'categories'" in note for note in gt.notes)


def test_lvis_leaves_out_annotations_of_area_zero_and_reads_its_lists(tmp_path):
    document = _gt()
    document["annotations"][2]["area"] = 0
    document["images"][1]["neg_category_ids"] = [3]  # image 2: the smallest id decides is_lvis
    document["images"][0]["not_exhaustive_category_ids"] = [1]
    for category, frequency in zip(document["categories"], "fr"):
        category["frequency"] = frequency
    gt = load_ground_truth(_write(tmp_path, "gt.json", document), lvis=True)
    assert [ann["id"] for _, ann in gt.by_id[9].annotations] == [1]
    assert gt.federated and gt.by_id[2].neg_category_ids == {3} and gt.by_id[9].not_exhaustive_category_ids == {1}
    assert gt.frequencies == {1: "r", 3: "f"}
    assert load_ground_truth(_write(tmp_path, "coco.json", document)).by_id[9].annotations[1][1]["id"] == 3


@pytest.mark.parametrize(("change", "message"), [
    ({"images": [{"id": 9, "height": 6}]}, "images[0]: missing key 'width'"),
    ({"images": [{"id": 9, "height": 0, "width": 3}]}, "integers >= 1"),
    ({"images": [{"id": 9, "height": 6, "width": 8}, {"id": 9, "height": 6, "width": 8}]}, "a second image"),
    ({"categories": []}, "'categories' is empty"),
    ({"annotations": [{"id": 1, "image_id": 9, "category_id": 3, "segmentation": SQUARE}]},
     "annotations[0] (id 1, image 9): missing key 'area'"),
    ({"annotations": [{"id": 1, "image_id": 9, "category_id": 3, "segmentation": SQUARE, "area": 1, "iscrowd": 2}]},
     "'iscrowd' must be 0 or 1"),
    ({"annotations": [{"id": 1, "image_id": 9, "category_id": 3, "segmentation": SQUARE, "area": 1}] * 2},
     "annotations[1] (id 1, image 9): a second annotation with this id"),
])
def test_a_broken_annotation_file_names_the_entry(tmp_path, change, message):
    with pytest.raises(InputError) as caught:
        load_ground_truth(_write(tmp_path, "gt.json", _gt(**change)))
    assert "gt.json: " in str(caught.value) and message in str(caught.value)


def test_unreadable_files_are_named(tmp_path):
    with pytest.raises(InputError, match=r"--gt-json-file .*nope\.json: no such file"):
        load_ground_truth(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json: not valid JSON"):
        load_ground_truth(tmp_path / "bad.json")
    with pytest.raises(InputError, match="missing key 'images'"):
        load_ground_truth(_write(tmp_path, "gt.json", {"annotations": [], "categories": []}))


def _load(tmp_path: Path, dets: object, lvis: bool = False, max_dets: int = 300, gt: dict | None = None):
    truth = load_ground_truth(_write(tmp_path, "gt.json", gt or _gt()), lvis=lvis)
    return truth, load_results(_write(tmp_path, "dt.json", dets), truth, lvis=lvis, max_dets=max_dets)


def test_detection_areas_come_from_boxes_when_the_first_detection_has_one(tmp_path):
    _, results = _load(tmp_path, _dets())
    assert results.area_from_box and [d.box_area for d in results.per_image[9]] == [9, 6]
    dets = _dets(with_bbox=False)
    dets[1]["bbox"] = [0, 0, 5, 5]  # only the first decides
    _, results = _load(tmp_path, dets)
    assert not results.area_from_box and all(d.box_area is None for d in results.per_image[2])
    dets = _dets()
    dets[0]["bbox"] = []  # COCO: an empty first box means mask areas
    _, results = _load(tmp_path, dets)
    assert not results.area_from_box


def test_a_detection_without_its_box_is_an_error_once_boxes_decide(tmp_path):
    dets = _dets()
    del dets[2]["bbox"]
    with pytest.raises(InputError, match=r"dt.json: detection 2 \(image 9\): missing key 'bbox'"):
        _load(tmp_path, dets)
    dets[2]["bbox"] = [1, 2, 3]
    with pytest.raises(InputError, match=r"detection 2 \(image 9\): 'bbox' must be \[x, y, w, h\]"):
        _load(tmp_path, dets)


@pytest.mark.parametrize(("change", "message"), [
    ({"image_id": 4}, r"detection 1 \(image 4\): image_id 4 is not an image of .*gt.json"),
    ({"category_id": "2"}, r"detection 1 \(image 2\): 'category_id' must be an integer"),
    ({"score": "high"}, r"detection 1 \(image 2\): 'score' must be a finite number"),
    ({"image_id": "2"}, r"detection 1: 'image_id' must be an integer"),
])
def test_a_detection_of_an_unknown_image_or_a_bad_value_is_an_error(tmp_path, change, message):
    dets = _dets()
    dets[1].update(change)
    with pytest.raises(InputError, match=message):
        _load(tmp_path, dets)


def test_a_detection_without_a_key_is_an_error(tmp_path):
    dets = _dets()
    del dets[1]["segmentation"]
    with pytest.raises(InputError, match=r"detection 1 \(image 2\): missing key 'segmentation'"):
        _load(tmp_path, dets)
    with pytest.raises(InputError, match="expected a JSON list of detections"):
        _load(tmp_path, {"annotations": dets})


def test_lvis_keeps_the_best_detections_of_each_image_first(tmp_path):
    dets = [{"image_id": 9, "category_id": 3, "score": s, "segmentation": _rle(6, 8, (0, 1, 0, 1))}
            for s in (0.1, 0.7, 0.7, 0.3, 0.9)]
    dets.insert(2, {"image_id": 2, "category_id": 1, "score": 0.2, "segmentation": _rle(5, 7, (0, 1, 0, 1)),
                    "bbox": [0, 0, 2, 2]})
    _, results = _load(tmp_path, dets, lvis=True, max_dets=3)
    assert [d.position for d in results.per_image[9]] == [5, 1, 3]  # 0.9, then the tied 0.7s in file order
    assert [d.position for d in results.per_image[2]] == [2]
    # the area rule reads the first detection after the cap (image 9's 0.9: no bbox)
    assert not results.area_from_box and results.drop_empty and results.kept == 4 and results.count == 6


def test_lvis_federated_filter_and_empty_boxes(tmp_path):
    document = _gt()
    document["images"][1]["neg_category_ids"] = [3]  # image 2 says category 3 is absent
    dets = _dets()
    dets.append({"image_id": 2, "category_id": 3, "score": 0.4, "segmentation": _rle(5, 7, (0, 1, 0, 1)),
                 "bbox": [0, 0, 1, 1]})  # kept: a negative category
    dets.append({"image_id": 9, "category_id": 1, "score": 0.4, "segmentation": _rle(6, 8, (0, 1, 0, 1)),
                 "bbox": [0, 0, 0, 1]})  # dropped: box area 0
    dets.append({"image_id": 2, "category_id": 3, "score": 0.3, "segmentation": _rle(5, 7, (0, 1, 0, 1)),
                 "bbox": [0, 0, 1, 1]})
    document["images"][1]["neg_category_ids"] = [3]
    _, results = _load(tmp_path, dets, lvis=True, gt=document)
    assert [d.position for d in results.per_image[2]] == [1, 3, 5]
    assert [d.position for d in results.per_image[9]] == [0, 2]
    document["images"][1]["neg_category_ids"] = []
    _, results = _load(tmp_path, dets, lvis=True, gt=document)
    assert [d.position for d in results.per_image[2]] == [1]  # category 3 is neither present nor negative there


def test_image_inputs_hold_the_decoded_masks_and_fields(tmp_path):
    gt, results = _load(tmp_path, _dets())
    pred, target = image_inputs(gt, gt.by_id[9], results.per_image[9], results, torch.device("cpu"))
    assert pred["masks"].shape == (2, 6, 8) and pred["masks"][0].sum() == 9
    assert pred["scores"].tolist() == [0.9, 0.9] and pred["labels"].tolist() == [3, 1]
    assert pred["area"].dtype == torch.float64 and pred["area"].tolist() == [9, 6]
    assert target["labels"].tolist() == [3, 1] and target["area"].tolist() == [9.5, 9.0]
    assert target["iscrowd"].tolist() == [False, False] and int(target["image_id"]) == 9
    square = np.zeros((6, 8), bool)
    square[1:4, 1:4] = True  # the polygon (1, 1)-(4, 4) as pycocotools draws it
    assert np.array_equal(target["masks"][0].numpy(), square)
    pred_t, target_t = image_inputs(gt, gt.by_id[9], results.per_image[9], results, torch.device("cpu"),
                                    transposed=True)
    assert torch.equal(pred_t["masks"], pred["masks"].transpose(1, 2))
    assert torch.equal(target_t["masks"], target["masks"].transpose(1, 2))
    pred, target = image_inputs(gt, gt.by_id[2], results.per_image[2], results, torch.device("cpu"))
    assert target["iscrowd"].tolist() == [True] and target["masks"][0].sum() == 4
    assert "neg_category_ids" not in target and "not_exhaustive_category_ids" not in target


def test_lvis_image_inputs_drop_empty_masks_and_carry_the_lists(tmp_path):
    document = _gt()
    document["images"][1]["neg_category_ids"] = [3]
    dets = _dets(with_bbox=False)
    dets.append({"image_id": 9, "category_id": 3, "score": 0.2, "segmentation": _rle(6, 8, (0, 0, 0, 0))})
    gt, results = _load(tmp_path, dets, lvis=True, gt=document)
    pred, target = image_inputs(gt, gt.by_id[9], results.per_image[9], results, torch.device("cpu"), lvis=True)
    assert pred["scores"].tolist() == [0.9, 0.9] and "area" not in pred  # the empty mask left out
    assert target["neg_category_ids"].tolist() == [] and target["not_exhaustive_category_ids"].tolist() == []


@pytest.mark.parametrize(("where", "segmentation", "message"), [
    ("dt", _rle(6, 7, (0, 1, 0, 1)), r"dt.json: detection 2 \(image 9\): the RLE's size \[6, 7\] is not its image's"),
    ("dt", {"size": [6, 8], "counts": "0P"}, r"dt.json: detection 2 \(image 9\): malformed RLE"),
    ("gt", {"size": [6, 8], "counts": [40]}, (r"gt.json: annotations\[2\] \(id 3, image 9\): malformed RLE: its "
                                             r"counts add up to 40 pixels")),
    ("gt", [[1, 2, 3, 4]], r"gt.json: annotations\[2\] \(id 3, image 9\): its first polygon has 4 numbers"),
])
def test_an_unreadable_mask_names_its_file_entry_and_image(tmp_path, where, segmentation, message):
    document, dets = _gt(), _dets()
    if where == "gt":
        document["annotations"][2]["segmentation"] = segmentation
    else:
        dets[2]["segmentation"] = segmentation
    gt, results = _load(tmp_path, dets, gt=document)
    with pytest.raises(InputError, match=message):
        image_inputs(gt, gt.by_id[9], results.per_image[9], results, torch.device("cpu"))
