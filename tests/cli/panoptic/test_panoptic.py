"""``nobg-metrics panoptic``: COCO / Cityscapes panoptic PNG + JSON folders scored as pq_compute scores them
(the port in tests/reference), panopticapi's table, results.json, the reference's sanity checks as errors
naming the image and the segment, the BOUNDARY_ID note, and a help that loads no torch."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.panoptic_scenes import categories, make_scene, to_png, write_dataset
from nobg_metrics.cli.entry import main
from tests.cli.core.test_startup import _entry
from tests.reference import panoptic_port

CATEGORIES = categories()
SIZES = ((40, 52), (33, 47), (40, 52))


def _scenes(sequential: bool = False):
    return [make_scene(h, w, [11, i], things=6 if not sequential else 25, sequential_ids=sequential)
            for i, (h, w) in enumerate(SIZES)]


@pytest.fixture
def dataset(tmp_path):
    scenes = _scenes()
    return scenes, write_dataset(scenes, tmp_path / "data", CATEGORIES)


def _run(paths, *extra, out=None) -> list[str]:
    argv = ["panoptic", "--gt-json-file", paths["gt_json"], "--pred-json-file", paths["pred_json"], "--quiet", *extra]
    if out is not None:
        argv += ["--out", str(out)]
    return argv


def _table(result: dict) -> str:
    """pq_compute's printed table, from the reference's format strings."""
    lines = ["{:10s}| {:>5s}  {:>5s}  {:>5s} {:>5s}".format("", "PQ", "SQ", "RQ", "N"), "-" * (10 + 7 * 4)]
    for name in ("All", "Things", "Stuff"):
        lines.append("{:10s}| {:5.1f}  {:5.1f}  {:5.1f} {:5d}".format(
            name, 100 * result[name]["pq"], 100 * result[name]["sq"], 100 * result[name]["rq"], result[name]["n"]))
    return "\n".join(lines)


def _assert_results(document: dict, reference: dict) -> None:
    assert list(document) == ["All", "Things", "Stuff", "per_class"]
    for group in ("All", "Things", "Stuff"):
        for name in ("pq", "sq", "rq"):
            assert abs(document[group][name] - float(reference[group][name])) <= 1e-12, (group, name)
        assert document[group]["n"] == reference[group]["n"]
    assert list(document["per_class"]) == [str(c["id"]) for c in CATEGORIES]
    for category, values in reference["per_class"].items():
        for name in ("pq", "sq", "rq"):
            assert abs(document["per_class"][str(category)][name] - float(values[name])) <= 1e-12


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_results_and_table_equal_pq_compute(dataset, tmp_path, capsys, iou_type):
    scenes, paths = dataset
    assert main(_run(paths, "--iou-type", iou_type, out=tmp_path / "out")) == 0
    reference = panoptic_port.pq_compute(scenes, CATEGORIES, iou_type)
    assert capsys.readouterr().out == _table(reference) + "\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["report.html", "results.json"]
    _assert_results(json.loads((tmp_path / "out" / "results.json").read_text()), reference)


def test_cityscapes_layout_ratio_and_table(tmp_path, capsys, monkeypatch):
    scenes = _scenes()
    root = tmp_path / "cityscapes"
    paths = write_dataset(scenes, tmp_path / "staging", CATEGORIES)
    (root / "gtFine").mkdir(parents=True)
    (root / "results").mkdir()
    shutil.move(paths["gt_json"], root / "gtFine" / "cityscapes_panoptic_val.json")
    shutil.move(paths["gt_folder"], root / "gtFine" / "cityscapes_panoptic_val")
    shutil.move(paths["pred_json"], root / "results" / "cityscapes_panoptic_val.json")
    shutil.move(paths["pred_folder"], root / "results" / "cityscapes_panoptic_val")
    monkeypatch.setenv("CITYSCAPES_DATASET", str(root))
    monkeypatch.delenv("CITYSCAPES_RESULTS", raising=False)
    assert main(["panoptic", "--cityscapes", "--iou-type", "boundary", "--quiet", "--out", str(tmp_path / "o")]) == 0
    reference = panoptic_port.pq_compute(scenes, CATEGORIES, "boundary", 0.005)
    _assert_results(json.loads((tmp_path / "o" / "results.json").read_text()), reference)
    printed = capsys.readouterr().out.splitlines()
    names = {c["id"]: c["name"] for c in CATEGORIES}
    first = min(reference["per_class"])
    row = reference["per_class"][first]
    assert printed[0] == "{:14s}| {:>5s}  {:>5s}  {:>5s}".format("Category", "PQ", "SQ", "RQ")
    assert printed[1] == "{:14s}| {:5.1f}  {:5.1f}  {:5.1f}".format(names[first], 100 * row["pq"], 100 * row["sq"],
                                                                    100 * row["rq"])
    assert printed[len(CATEGORIES) + 1] == "-" * 41
    assert printed[-3].startswith("All           |")


def test_the_marker_id_collision_is_noted_and_scored_both_ways(tmp_path, capsys):
    scenes = _scenes(sequential=True)
    paths = write_dataset(scenes, tmp_path / "data", CATEGORIES)
    for policy, exact in (("reference", False), ("exact", True)):
        out = tmp_path / policy
        assert main(_run(paths, "--iou-type", "boundary", "--boundary-id-collision", policy, out=out)) == 0
        err = capsys.readouterr().err
        assert "hold a segment whose id is 21" in err and f"--boundary-id-collision {policy}" in err
        reference = panoptic_port.pq_compute(scenes, CATEGORIES, "boundary", exact=exact)
        _assert_results(json.loads((out / "results.json").read_text()), reference)


def _edit_json(path: str, edit) -> None:
    document = json.loads(Path(path).read_text())
    edit(document)
    Path(path).write_text(json.dumps(document))


def _first_segment(document: dict) -> dict:
    return document["annotations"][1]["segments_info"][0]


@pytest.mark.parametrize("problem, expected", [
    ("png_not_in_json", (r"pred image '000001.png' \(image_id 1\): segment with ID {id} is presented in PNG and "
                         r"not presented in JSON")),
    ("json_not_in_png", (r"pred image '000001.png' \(image_id 1\): the following segment IDs \[16777215\] are "
                         r"presented in JSON and not presented in PNG")),
    ("unknown_category", r"pred image '000001.png' \(image_id 1\): segment with ID {id} has unknown category_id 999"),
    ("gt_unknown_category", r"gt image '000001.png' \(image_id 1\): segment with ID {gid} has unknown category_id 999"),
    ("no_prediction", r"no prediction for the image with id: 1"),
    ("size", r"image_id 1: the gt PNG '000001.png' is 47x33 but the prediction PNG '000001.png' is 48x33"),
    ("area", r"gt image '000001.png' \(image_id 1\): segment with ID {gid} has area 1 in the JSON but \d+ pixels"),
    ("duplicate", r"pred image '000001.png' \(image_id 1\): segment ids \[{id}\] are listed twice"),
    ("missing_png", r"pred PNG .*000001.png of image 1 does not exist"),
])
def test_inconsistent_inputs_are_named(dataset, tmp_path, capsys, problem, expected):
    _, paths = dataset
    pred_id = _first_segment(json.loads(Path(paths["pred_json"]).read_text()))["id"]
    gt_id = _first_segment(json.loads(Path(paths["gt_json"]).read_text()))["id"]
    pred_json, gt_json = paths["pred_json"], paths["gt_json"]
    if problem == "png_not_in_json":
        _edit_json(pred_json, lambda d: d["annotations"][1]["segments_info"].pop(0))
    elif problem == "json_not_in_png":
        _edit_json(pred_json, lambda d: d["annotations"][1]["segments_info"].append(
            {"id": 16777215, "category_id": 1, "iscrowd": 0}))
    elif problem == "unknown_category":
        _edit_json(pred_json, lambda d: _first_segment(d).update(category_id=999))
    elif problem == "gt_unknown_category":
        _edit_json(gt_json, lambda d: _first_segment(d).update(category_id=999))
    elif problem == "no_prediction":
        _edit_json(pred_json, lambda d: d["annotations"].pop(1))
    elif problem == "size":
        to_png(np.zeros((33, 48), np.uint32), Path(paths["pred_folder"]) / "000001.png")
    elif problem == "area":
        _edit_json(gt_json, lambda d: _first_segment(d).update(area=1))
    elif problem == "duplicate":
        _edit_json(pred_json, lambda d: d["annotations"][1]["segments_info"].append(dict(_first_segment(d))))
    elif problem == "missing_png":
        (Path(paths["pred_folder"]) / "000001.png").unlink()
    out = tmp_path / "out"
    assert main(_run(paths, "--iou-type", "boundary", out=out)) == 1
    err = capsys.readouterr().err
    assert re.search(expected.format(id=pred_id, gid=gt_id), err), err
    assert "nothing was written" in err and not (out / "results.json").exists()


def test_a_missing_folder_and_bad_flags(dataset, tmp_path, capsys):
    _, paths = dataset
    assert main(_run(paths, "--pred-folder", str(tmp_path / "nope"))) == 1
    assert "with predicted segmentations doesn't exist" in capsys.readouterr().err
    assert main(["panoptic", "--quiet"]) == 2
    assert "needs --gt-json-file" in capsys.readouterr().err
    assert main(_run(paths, "--dilation-ratio", "-1")) == 2
    with pytest.raises(SystemExit):
        main(_run(paths, "--iou-type", "bbox"))
    assert main(_run(paths, out=Path(paths["gt_folder"]) / "out")) == 2
    assert "inside the input folder" in capsys.readouterr().err


def test_the_reference_tools_flag_spellings(dataset, tmp_path, capsys):
    scenes, paths = dataset
    argv = ["panoptic", "--gt_json_file", paths["gt_json"], "--pred_json_file", paths["pred_json"], "--gt_folder",
            paths["gt_folder"], "--pred_folder", paths["pred_folder"], "--iou-type", "segm", "--quiet"]
    assert main(argv) == 0
    assert capsys.readouterr().out == _table(panoptic_port.pq_compute(scenes, CATEGORIES, "segm")) + "\n"


@pytest.mark.slow
def test_worker_processes_give_the_same_results(dataset, tmp_path):
    _, paths = dataset
    assert main(_run(paths, "--iou-type", "boundary", "--procs", "1", out=tmp_path / "one")) == 0
    assert main(_run(paths, "--iou-type", "boundary", "--procs", "2", out=tmp_path / "two")) == 0
    assert (tmp_path / "one" / "results.json").read_text() == (tmp_path / "two" / "results.json").read_text()


def test_help_loads_no_torch():
    result = _entry("panoptic", "--help")
    assert result.returncode == 0 and "--boundary-id-collision" in result.stdout
    assert "torch" not in result.stderr
