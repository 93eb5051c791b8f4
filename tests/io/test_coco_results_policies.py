"""Reading a results file where the reference raises or stays silent: an empty file, detections of categories the
annotation file does not have (warnings; ``strict``: errors), images it does not have (always an error), and the
forms pycocotools' ``loadRes`` reads only with a ``bbox`` (polygons, uncompressed RLEs)."""

from __future__ import annotations

import pytest

from nobg_metrics.io.coco.annotations import load_ground_truth
from nobg_metrics.io.coco.results import load_results
from nobg_metrics.io.errors import InputError
from tests.io.test_coco_files import SQUARE, _dets, _gt, _write


def _read(tmp_path, dets, *, strict: bool = False, lvis: bool = False, max_dets: int = 300):
    truth = load_ground_truth(_write(tmp_path, "gt.json", _gt()), lvis=lvis)
    return load_results(_write(tmp_path, "dt.json", dets), truth, lvis=lvis, max_dets=max_dets, strict=strict)


def test_an_empty_results_file_is_read_with_a_warning(tmp_path):
    results = _read(tmp_path, [])
    assert results.count == 0 and results.per_image == {}
    assert len(results.warnings) == 1 and "no detections" in results.warnings[0]
    assert "0 where there are ground truths" in results.warnings[0]


def test_an_empty_results_file_is_an_error_when_strict(tmp_path):
    with pytest.raises(InputError, match=r"dt.json: no detections \(--strict"):
        _read(tmp_path, [], strict=True)


def test_detections_of_unknown_categories_are_left_out_with_a_warning_naming_them(tmp_path):
    dets = _dets()
    dets[1]["category_id"] = 7
    dets.append(dict(dets[0], category_id=5))
    dets.append(dict(dets[0], category_id=7))
    results = _read(tmp_path, dets)
    assert results.count == 5 and results.kept == 2
    assert [d.position for image in results.per_image.values() for d in image] == [0, 2]
    assert results.warnings == [f"{tmp_path / 'dt.json'}: 3 detection(s) of category id(s) 5, 7 not in "
                                f"{tmp_path / 'gt.json'}'s categories left out, as pycocotools' COCOeval leaves them "
                                "out (--strict: an error)"]


def test_many_unknown_category_ids_are_named_up_to_a_limit(tmp_path):
    dets = [dict(_dets()[0], category_id=100 + i) for i in range(30)]
    (warning,) = _read(tmp_path, dets).warnings
    assert "100, 101," in warning and "119, ... (30 ids)" in warning and "120" not in warning


def test_an_unknown_category_is_an_error_naming_the_entry_when_strict(tmp_path):
    dets = _dets()
    dets[2]["category_id"] = 7
    with pytest.raises(InputError, match=r"dt.json: detection 2 \(image 9\): category_id 7 is not a category of "
                                         r".*gt.json \(--strict"):
        _read(tmp_path, dets, strict=True)


def test_an_unknown_category_still_decides_the_area_rule_and_fills_lvis_slots(tmp_path):
    """The reference drops it at evaluation, after ``loadRes`` read its ``bbox`` rule and LVIS capped the image."""
    dets = _dets(with_bbox=False)
    dets.insert(0, dict(dets[0], category_id=7, bbox=[0, 0, 2, 2], score=0.95))
    dets[1]["bbox"], dets[2]["bbox"], dets[3]["bbox"] = [0, 0, 1, 1], [0, 0, 1, 2], [0, 0, 2, 2]
    results = _read(tmp_path, dets)
    assert results.area_from_box and results.kept == 3
    lvis = _read(tmp_path, dets, lvis=True, max_dets=1)  # image 9: the unknown category's 0.95 is its best
    assert 9 not in lvis.per_image and [d.position for d in lvis.per_image[2]] == [2]


def test_an_unknown_image_is_an_error_even_without_strict(tmp_path):
    dets = _dets()
    dets[1]["image_id"] = 4
    with pytest.raises(InputError, match=r"detection 1 \(image 4\): image_id 4 is not an image of .*gt.json "
                                         r"\(pycocotools' loadRes refuses"):
        _read(tmp_path, dets)


@pytest.mark.parametrize("form", ["polygons", "uncompressed"])
def test_other_forms_without_a_box_are_read_by_pixel_count_with_a_note(tmp_path, form):
    dets = _dets(with_bbox=False)
    dets[0]["segmentation"] = SQUARE if form == "polygons" else {"size": [6, 8], "counts": [7, 3, 3, 3, 3, 3, 26]}
    results = _read(tmp_path, dets)
    assert not results.area_from_box and results.warnings == []
    assert results.notes == [f"{tmp_path / 'dt.json'}: 1 detection(s) as polygons or uncompressed RLEs without a "
                             "'bbox': their area is their mask's pixel count (pycocotools' loadRes reads these forms "
                             "only with a 'bbox')"]
    with_box = _dets()
    with_box[0]["segmentation"] = dets[0]["segmentation"]
    assert _read(tmp_path, with_box).notes == []
