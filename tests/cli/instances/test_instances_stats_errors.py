"""``nobg-metrics instances --errors tide`` and ``--bootstrap`` / ``--compare``: TIDE through the command equals the
library function; the statistics' layout, reproducibility and estimates."""

from __future__ import annotations

import json

import pytest
import torch

from nobg_metrics.cli.instances.run import image_inputs
from nobg_metrics.functional import tide_errors
from nobg_metrics.io.coco.annotations import load_ground_truth
from nobg_metrics.io.coco.results import load_results
from tests.cli.instances.instances_data import make_dataset, write_dataset
from tests.cli.instances.test_instances import _run


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_errors_tide_equals_the_library_function(tmp_path, iou_type):
    gt_path, dt_path = write_dataset(tmp_path, *make_dataset(2))
    status, _, _ = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--iou-type", iou_type,
                        "--errors", "tide", "--out", str(tmp_path / "out"), "--quiet")
    assert status == 0
    document = json.loads((tmp_path / "out" / "errors.json").read_text())
    assert list(document) == [iou_type]
    values = document[iou_type]
    assert set(values["main"]) == {"Cls", "Loc", "Both", "Dupe", "Bkg", "Miss"}
    assert set(values["special"]) == {"FalsePos", "FalseNeg"}
    gt = load_ground_truth(gt_path)
    results = load_results(dt_path, gt)
    pairs = [image_inputs(gt, image, results.per_image.get(image.id, []), results, torch.device("cpu"))
             for image in gt.images]
    expected = tide_errors([p for p, _ in pairs], [t for _, t in pairs], iou_type=iou_type, thresholds="coco")
    assert abs(values["ap"] - float(expected["ap"])) <= 1e-9
    assert abs(values["ap_range"] - float(expected["ap_range"])) <= 1e-9
    for group in ("main", "special"):
        for name, value in expected[group].items():  # type: ignore[union-attr]
            assert abs(values[group][name] - float(value)) <= 1e-9, name
    assert "| " + iou_type in (tmp_path / "out" / "errors.md").read_text()


def test_bootstrap_is_reproducible_and_holds_the_estimates(tmp_path):
    gt_path, dt_path = write_dataset(tmp_path, *make_dataset(3))
    argv = ["--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--bootstrap", "40", "--seed", "5",
            "--quiet"]
    assert _run(*argv, "--out", str(tmp_path / "a"))[0] == 0
    assert _run(*argv, "--out", str(tmp_path / "b"))[0] == 0
    first = (tmp_path / "a" / "stats.json").read_text()
    assert first == (tmp_path / "b" / "stats.json").read_text()
    stats = json.loads(first)
    results = json.loads((tmp_path / "a" / "results.json").read_text())["results"]
    entries = stats["results"][str(dt_path)]
    assert set(entries) == {f"segm/{key}" for key in ("map", "map_50", "map_75", "map_small", "map_medium",
                                                      "map_large", "mar_1", "mar_10", "mar_100", "mar_small",
                                                      "mar_medium", "mar_large")}
    for name, entry in entries.items():
        assert entry["estimate"] == results[name.split("/")[1]]
        if entry["low"] is not None and entry["estimate"] != -1:
            assert entry["low"] - 1e-12 <= entry["estimate"] <= entry["high"] + 1e-12 or entry["units"] < 10, name
    assert (tmp_path / "a" / "stats.md").read_text().startswith("# Instance AP statistics")


def test_compare_gives_differences_and_p_values(tmp_path):
    gt, results = make_dataset(4)
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    worse = [{**r, "score": r["score"] * (0.5 if i % 2 else 1.0)} for i, r in enumerate(results)]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(worse), encoding="utf-8")
    status, _, _ = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--compare", str(other),
                        "--bootstrap", "20", "--permutations", "64", "--out", str(tmp_path / "out"), "--quiet")
    assert status == 0
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    (comparison,) = stats["comparisons"]
    entry = comparison["values"]["segm/map"]
    a, b = (stats["results"][name]["segm/map"]["estimate"] for name in (str(dt_path), str(other)))
    assert entry["difference"] == pytest.approx(a - b, abs=1e-15)
    assert entry["p_value"] is not None and 0 < entry["p_value"] <= 1


def test_without_the_flags_nothing_new_is_written(tmp_path):
    gt_path, dt_path = write_dataset(tmp_path, *make_dataset(2))
    assert _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--out", str(tmp_path / "o"),
                "--quiet")[0] == 0
    names = {p.name for p in (tmp_path / "o").iterdir()}
    assert "results.json" in names and not names & {"errors.json", "errors.md", "stats.json", "stats.md"}


def test_lvis_with_statistics_is_a_usage_error(tmp_path):
    gt_path, dt_path = write_dataset(tmp_path, *make_dataset(2))
    assert _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--lvis", "--errors", "tide")[0] == 2
