"""``nobg_metrics.io.labelme``: LabelMe files read as labelme2coco reads them (the port in tests/reference), every
shape type at non-square and odd sizes, grouped objects, shapes past the image border, skipped labels; and the
errors a broken file gets, each naming the file and the shape."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics.io.errors import InputError
from nobg_metrics.io.labelme import read_labelme
from tests.reference import labelme_port

LABELS = {"cat": 1, "dog": 2, "wire": 3}


def _shape(label, points, kind="polygon", group=None):
    return {"label": label, "points": points, "shape_type": kind, "group_id": group, "flags": {}}


def _random_document(rng: np.random.Generator, height: int, width: int) -> dict:
    shapes = []
    for _ in range(int(rng.integers(0, 9))):
        kind = str(rng.choice(["polygon", "rectangle", "circle", "line", "linestrip", "point"]))
        count = {"rectangle": 2, "circle": 2, "point": 1, "line": 2}.get(kind, int(rng.integers(3, 7)))
        # points a little past every border, fractional coordinates as LabelMe saves them
        points = np.column_stack([rng.uniform(-3, width + 3, count), rng.uniform(-3, height + 3, count)])
        if kind == "rectangle":  # the reference needs the first corner top left (see the next test)
            points = np.sort(points, axis=0)
        group = None if rng.random() < 0.6 else int(rng.integers(0, 3))
        label = str(rng.choice(["cat", "dog", "wire", "_background_", "__ignore__"]))
        shapes.append(_shape(label, np.round(points, 2).tolist(), kind, group))
    return {"version": "5.4.1", "imageHeight": height, "imageWidth": width, "shapes": shapes}


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("height", "width"), [(23, 31), (1, 17), (40, 1), (64, 48)])
def test_masks_and_labels_are_labelme2coco_s(tmp_path, seed, height, width):
    document = _random_document(np.random.default_rng(seed), height, width)
    path = tmp_path / "image.json"
    path.write_text(json.dumps(document))
    target = read_labelme(path, LABELS)
    masks, labels = labelme_port.objects(document, LABELS)
    assert target["labels"].tolist() == labels and target["labels"].dtype == torch.int64
    assert target["masks"].shape == (len(masks), height, width) and target["masks"].dtype == torch.bool
    for ours, theirs in zip(target["masks"], masks):
        assert np.array_equal(ours.numpy(), theirs)


def test_a_rectangle_dragged_up_or_left_is_the_box_drawn(tmp_path):
    """The reference raises on Pillow >= 9.5 (x1 < x0); the box is the one between the two corners."""
    boxes = {"down-right": [[2, 1], [7, 5]], "up-left": [[7, 5], [2, 1]], "down-left": [[7, 1], [2, 5]]}
    masks = []
    for name, points in boxes.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"imageHeight": 8, "imageWidth": 9, "shapes": [_shape("cat", points, "rectangle")]}))
        masks.append(read_labelme(path, LABELS)["masks"])
    assert all(torch.equal(mask, masks[0]) for mask in masks) and int(masks[0].sum()) == 30


def test_shapes_of_one_group_are_one_object_and_objects_may_overlap(tmp_path):
    shapes = [_shape("cat", [[0, 0], [5, 5]], "rectangle", group=1), _shape("dog", [[2, 2], [8, 8]], "rectangle"),
              _shape("cat", [[7, 0], [9, 3]], "rectangle", group=1), _shape("cat", [[0, 6], [2, 9]], "rectangle")]
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"imageHeight": 10, "imageWidth": 12, "shapes": shapes}))
    target = read_labelme(path, LABELS)
    assert target["labels"].tolist() == [1, 2, 1]  # (cat, 1), dog, the second ungrouped cat
    assert int(target["masks"][0].sum()) == 36 + 12 and bool((target["masks"][0] & target["masks"][1]).any())


def test_a_file_of_skipped_labels_only_is_an_image_without_objects(tmp_path):
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"imageHeight": 4, "imageWidth": 3,
                                "shapes": [_shape("_background_", [[0, 0], [2, 2]], "rectangle")]}))
    target = read_labelme(path, LABELS)
    assert target["masks"].shape == (0, 4, 3) and target["labels"].shape == (0,)


def test_the_targets_score_with_mean_average_precision(tmp_path):
    shapes = [_shape("cat", [[1, 1], [9, 1], [9, 7], [1, 7]]), _shape("dog", [[12, 2], [16, 6]], "circle")]
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"imageHeight": 20, "imageWidth": 30, "shapes": shapes}))
    target = read_labelme(path, LABELS)
    preds = [{"masks": target["masks"], "scores": torch.tensor([0.9, 0.8]), "labels": target["labels"]}]
    metric = nm.MeanAveragePrecision(iou_type="segm")
    metric.update(preds, [target])
    assert float(metric.compute()["map"]) == pytest.approx(1.0, abs=1e-12)  # pycocotools: tp / (tp + fp + eps)


@pytest.mark.parametrize(("document", "message"), [
    ("not json", "cannot be read as JSON"),
    ({"imageHeight": 4, "imageWidth": 4}, "no 'shapes' list"),
    ({"imageHeight": 4.0, "imageWidth": 4, "shapes": []}, "'imageHeight' and 'imageWidth' must be positive"),
    ({"imageHeight": 4, "imageWidth": 4, "shapes": [_shape("bird", [[0, 0], [1, 1], [2, 0]])]},
     "shapes[0]: the label 'bird' is not among label_ids"),
    ({"imageHeight": 4, "imageWidth": 4, "shapes": [_shape("cat", [[0, 0], [1, 1]], "mask")]},
     "shapes[0]: shape_type 'mask' is not one of"),
    ({"imageHeight": 4, "imageWidth": 4, "shapes": [_shape("cat", [[0, 0], [1, 1]])]},
     "shapes[0]: a polygon needs at least 3 points; got 2"),
    ({"imageHeight": 4, "imageWidth": 4, "shapes": [_shape("cat", [[0, 0], [1, 1], [2, 2]], "rectangle")]},
     "shapes[0]: a rectangle needs 2 points; got 3"),
    ({"imageHeight": 4, "imageWidth": 4, "shapes": [_shape("cat", [[0, 0], [1, "x"], [2, 2]])]},
     "shapes[0]: 'points' must be a list of [x, y] numbers"),
])
def test_a_broken_file_is_an_input_error_naming_the_file_and_the_shape(tmp_path, document, message):
    path = tmp_path / "broken.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    with pytest.raises(InputError, match=str(path).replace("\\", "\\\\")) as raised:
        read_labelme(path, LABELS)
    assert message in str(raised.value)
