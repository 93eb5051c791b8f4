"""``nobg-metrics panoptic --bootstrap N --compare B``: stats.json / stats.md with image-level intervals (each
resample's PQ equal to pq_compute's port on the drawn images), seeded draws, results.json unchanged, and the
paired test of two predictions (identical: p = 1; the gt itself: better on every image)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.panoptic_scenes import categories, make_scene, write_dataset
from nobg_metrics.cli.entry import main
from nobg_metrics.cli.outputs.stats import generator, resample_indices
from tests.reference import panoptic_port

CATEGORIES = categories()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    scenes = [make_scene(40, 52, [11, i], things=6) for i in range(8)]
    return scenes, write_dataset(scenes, tmp_path_factory.mktemp("data"), CATEGORIES)


def _argv(paths, out, *extra, procs: int = 1) -> list[str]:
    return ["panoptic", "--gt-json-file", paths["gt_json"], "--pred-json-file", paths["pred_json"], "--quiet",
            "--procs", str(procs), "--out", str(out), *extra]


def test_intervals_hold_the_estimates_and_equal_pq_compute_on_the_drawn_images(dataset, tmp_path):
    scenes, paths = dataset
    assert main(_argv(paths, tmp_path / "plain")) == 0
    assert main(_argv(paths, tmp_path / "o", "--bootstrap", "40", "--seed", "3", "--alpha", "0.1")) == 0
    written = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert written == ["report.html", "results.json", "stats.json", "stats.md"]
    # the per-image scoring leaves results.json byte for byte as it is without statistics
    assert (tmp_path / "o" / "results.json").read_bytes() == (tmp_path / "plain" / "results.json").read_bytes()
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    stats = json.loads((tmp_path / "o" / "stats.json").read_text())
    assert (stats["unit"], stats["units"], stats["seed"], stats["alpha"]) == ("image", 8, 3, 0.1)
    values = stats["results"]["pred.json"]
    for group in ("All", "Things", "Stuff"):
        for name in ("pq", "sq", "rq"):
            entry = values[f"{group}/{name}"]
            assert entry["estimate"] == results[group][name]
            assert entry["low"] <= entry["estimate"] <= entry["high"]
            assert (entry["resamples"], entry["unit"], entry["units"]) == (40, "image", 8)
    # each resample is pq_compute over its drawn images (repeats included)
    index = np.concatenate(list(resample_indices(generator(3, "panoptic", "bootstrap"), 8, 40)))
    drawn = [panoptic_port.pq_compute([scenes[i] for i in row], CATEGORIES, empty=0.0) for row in index]
    for group in ("All", "Things", "Stuff"):
        expected = np.quantile([float(r[group]["pq"]) for r in drawn], [0.05, 0.95])
        got = [values[f"{group}/pq"]["low"], values[f"{group}/pq"]["high"]]
        assert np.abs(np.array(got) - expected).max() <= 1e-12, group
    assert stats["comparisons"] == []
    assert "| All/pq |" in (tmp_path / "o" / "stats.md").read_text()


def test_the_same_seed_gives_the_same_statistics(dataset, tmp_path):
    _, paths = dataset
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        assert main(_argv(paths, tmp_path / name, "--bootstrap", "30", "--seed", seed)) == 0
    text = {name: (tmp_path / name / "stats.json").read_text() for name in "abc"}
    assert text["a"] == text["b"] and text["a"] != text["c"]
    # the per-image tables of worker processes come back in image order: the same statistics
    assert main(_argv(paths, tmp_path / "d", "--bootstrap", "30", "--seed", "5", procs=3)) == 0
    assert (tmp_path / "d" / "stats.json").read_text() == text["a"]


def test_compare_identical_and_better_predictions(dataset, tmp_path):
    _, paths = dataset
    assert main(_argv(paths, tmp_path / "same", "--bootstrap", "20", "--compare", paths["pred_json"],
                      "--compare-folder", paths["pred_folder"])) == 0
    same = json.loads((tmp_path / "same" / "stats.json").read_text())
    labels = list(same["results"])
    assert len(labels) == 2 and labels[1].endswith("pred.json")
    for entry in same["comparisons"][0]["values"].values():
        assert entry["difference"] == 0 and entry["p_value"] == 1.0 and entry["better"] is None
    # the gt as a prediction is better on every image: the smallest exact p of 8 images, 2 / 2^8
    assert main(_argv(paths, tmp_path / "gt", "--compare", paths["gt_json"], "--compare-folder",
                      paths["gt_folder"])) == 0
    versus = json.loads((tmp_path / "gt" / "stats.json").read_text())
    assert versus["bootstrap"]["resamples"] == 1000  # --compare alone: the default resamples
    pq = versus["comparisons"][0]["values"]["All/pq"]
    assert pq["exact"] and pq["p_value"] == 2 / 256 and pq["better"] == "gt.json"
    assert pq["low"] <= pq["difference"] <= pq["high"] < 0
    assert versus["results"]["gt.json"]["All/pq"]["estimate"] == 1.0


def test_statistics_flags_refused(dataset, tmp_path, capsys):
    _, paths = dataset
    assert main(_argv(paths, tmp_path / "x", "--compare-folder", paths["gt_folder"])) == 2
    assert "--compare-folder goes with --compare" in capsys.readouterr().err
    for flag, value in (("--bootstrap", "-1"), ("--alpha", "1.5"), ("--permutations", "0")):
        with pytest.raises(SystemExit) as exit_:  # a usage error of the parser, before anything is scored
            main(_argv(paths, tmp_path / "y", flag, value))
        assert exit_.value.code == 2
