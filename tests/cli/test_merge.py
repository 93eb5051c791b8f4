"""``nobg-metrics merge``: runs of disjoint dataset x method pairs merged give the outputs of one run of all of them;
a pair in two runs, or runs with other protocols / metrics, are errors naming the difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nobg_metrics.cli.entry import main
from tests.cli.folders import make_dataset

FAST = ["--workers", "0", "--quiet", "--no-plots", "--procs", "1"]
METRICS = ["--metrics", "mae", "s_measure", "f_measure_max", "iou_metric"]
SAME_FILES = ("results.json", "per_image.csv", "table.md", "table.tex", "curves.csv", "stats.json", "stats.md")


def _config(root: Path, name: str, pairs: dict[str, list[str]]) -> Path:
    """A config of ``method -> datasets`` over the generated folders (methods and datasets in that order)."""
    datasets = sorted({d for ds in pairs.values() for d in ds})
    data = {"datasets": {d: {"gt": str(root / d / "gt")} for d in datasets},
            "methods": {m: {d: str(root / d / m) for d in ds} for m, ds in pairs.items()}}
    path = root / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Folders ``a`` (D1: u8, rgba; D2: u8), ``b`` (D1: u16; D2: rgba, u16) and ``whole`` (all six pairs)."""
    root = tmp_path_factory.mktemp("merge")
    make_dataset(root / "D1", count=4, formats=("u8", "rgba", "u16"))
    make_dataset(root / "D2", count=3, seed=5, formats=("u8", "rgba", "u16"))
    plans = {"a": {"u8": ["D1", "D2"], "rgba": ["D1"]}, "b": {"rgba": ["D2"], "u16": ["D1", "D2"]},
             "whole": {"u8": ["D1", "D2"], "rgba": ["D1", "D2"], "u16": ["D1", "D2"]}}
    for name, pairs in plans.items():
        config = _config(root, name, pairs)
        assert main(["eval", "--config", str(config), "--out", str(root / name), *METRICS, *FAST]) == 0
    return root


def test_merged_runs_equal_one_run_of_all_pairs(runs, tmp_path):
    out = tmp_path / "merged"
    assert main(["merge", str(runs / "a"), str(runs / "b"), "--out", str(out), "--quiet", "--no-plots"]) == 0
    document = json.loads((out / "results.json").read_text())
    assert [(r["dataset"], r["method"]) for r in document["results"]] == \
        [(d, m) for d in ("D1", "D2") for m in ("u8", "rgba", "u16")]
    for name in SAME_FILES:
        assert (out / name).read_bytes() == (runs / "whole" / name).read_bytes(), name


def test_a_pair_in_two_runs_is_named_unless_the_last_is_preferred(runs, tmp_path, capsys):
    argv = ["merge", str(runs / "a"), str(runs / "whole"), "--out", str(tmp_path / "m"), "--quiet", "--no-plots"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "D1 / u8 is in both" in err and not (tmp_path / "m" / "results.json").exists()
    assert main([*argv, "--prefer", "last"]) == 0
    assert (tmp_path / "m" / "results.json").read_bytes() == (runs / "whole" / "results.json").read_bytes()


def test_runs_with_other_metrics_or_protocols_do_not_merge(runs, tmp_path, capsys):
    config = _config(runs, "c", {"u16": ["D2"]})
    other = tmp_path / "other"
    assert main(["eval", "--config", str(config), "--out", str(other), "--metrics", "mae", *FAST]) == 0
    assert main(["merge", str(runs / "a"), str(other), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "different metrics" in err and "lacks ['s_measure', 'f_measure_max', 'iou_metric']" in err
    raw = tmp_path / "raw"
    assert main(["eval", "--config", str(config), "--out", str(raw), *METRICS, "--protocol", "raw", *FAST]) == 0
    assert main(["merge", str(runs / "a"), str(raw), "--out", str(tmp_path / "m")]) == 2
    assert "differ in protocol" in capsys.readouterr().err


def test_a_folder_without_results_and_out_among_the_runs_are_refused(runs, tmp_path, capsys):
    assert main(["merge", str(runs / "a"), str(tmp_path), "--out", str(tmp_path / "m")]) == 1
    assert "no results.json" in capsys.readouterr().err
    assert main(["merge", str(runs / "a"), str(runs / "b"), "--out", str(runs / "b")]) == 2
    assert "is one of the runs" in capsys.readouterr().err


def test_two_preset_runs_merge_into_a_preset_run_with_its_combined_tables(runs, tmp_path, capsys):
    """``--preset sod`` runs keep the preset through merge: results.json records it, combined.* are written with the
    paper names, equal to one preset run of all the pairs; a run without it does not merge."""
    preset = ["--preset", "sod", "--metrics", "mae", "s_measure", "--no-report", "--bootstrap", "0"]
    for name, pairs in (("pa", {"u8": ["D1"]}), ("pb", {"rgba": ["D1"]}), ("pw", {"u8": ["D1"], "rgba": ["D1"]})):
        config = _config(runs, name, pairs)
        assert main(["eval", "--config", str(config), "--out", str(tmp_path / name), *preset, *FAST]) == 0
    out = tmp_path / "merged"
    assert main(["merge", str(tmp_path / "pa"), str(tmp_path / "pb"), "--out", str(out), "--quiet", "--no-plots",
                 "--no-report"]) == 0
    assert json.loads((out / "results.json").read_text())["preset"] == "sod"
    for name in ("combined.md", "combined.tex", "combined.csv", "table.md"):
        assert (out / name).read_text() == (tmp_path / "pw" / name).read_text(), name
    assert "S_α" in (out / "combined.md").read_text()
    plain = tmp_path / "pc"  # the same run without the preset
    plain.mkdir()
    document = json.loads((tmp_path / "pb" / "results.json").read_text())
    del document["preset"]
    (plain / "results.json").write_text(json.dumps(document))
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "pa"), str(tmp_path / "pc"), "--out", str(tmp_path / "m2")]) == 2
    assert "the runs differ in preset" in capsys.readouterr().err
