"""PySODEvalToolkit's configs as its users write them: several method JSONs, ``index_file``, include / exclude
filters, a method naming a dataset the dataset JSON lacks (skipped and said), and misspelt keys named with the
closest valid one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nobg_metrics.cli.eval.main import EXIT_INPUTS, EXIT_USAGE, main
from tests.cli.folders import make_dataset, read_results

FAST = ["--workers", "0", "--quiet", "--no-plots", "--metrics", "mae", "iou_metric"]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("toolkit")
    make_dataset(base / "DS1", count=3, formats=("u8",))
    make_dataset(base / "DS2", count=4, shape=(33, 21), seed=5, formats=("u8",))
    datasets = {name: {"image": {"path": f"{name}/img", "suffix": ".jpg"},
                       "mask": {"path": f"{name}/gt", "suffix": ".png"}} for name in ("DS1", "DS2")}
    (base / "datasets.json").write_text(json.dumps(datasets))
    (base / "m1.json").write_text(json.dumps({"A": {name: {"path": f"{name}/u8"} for name in ("DS1", "DS2")}}))
    (base / "m2.json").write_text(json.dumps({"B": {"DS1": {"path": "DS1/u8"}, "DS9": {"path": "DS1/u8"}}}))
    return base


def _scored(out: Path) -> dict[tuple[str, str], int]:
    return {(r["dataset"], r["method"]): r["images"] for r in read_results(out)["results"]}


def _run(root: Path, out: Path, *extra: str, datasets: str = "datasets.json") -> int:
    return main(["eval", "--dataset-json", str(root / datasets), "--method-json", str(root / "m1.json"),
                 str(root / "m2.json"), "--out", str(out), *FAST, *extra])


def test_several_method_jsons_and_a_dataset_only_one_file_names(root, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(root)
    assert _run(root, tmp_path / "out") == 0
    assert _scored(tmp_path / "out") == {("DS1", "A"): 3, ("DS1", "B"): 3, ("DS2", "A"): 4}
    assert "method 'B' names dataset 'DS9', which no dataset JSON defines: skipped" in capsys.readouterr().err


def test_include_and_exclude(root, tmp_path, monkeypatch):
    monkeypatch.chdir(root)
    assert _run(root, tmp_path / "a", "--include-methods", "A", "--exclude-datasets", "DS2") == 0
    assert _scored(tmp_path / "a") == {("DS1", "A"): 3}
    assert _run(root, tmp_path / "b", "--include-datasets", "DS2") == 0
    assert _scored(tmp_path / "b") == {("DS2", "A"): 4}


def test_a_filter_naming_nothing_in_the_plan_is_a_usage_error(root, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(root)
    assert _run(root, tmp_path / "out", "--include-methods", "a") == EXIT_USAGE
    assert "--include-methods: 'a' is not in the plan; did you mean 'A'?" in capsys.readouterr().err


def test_index_file_scores_the_listed_images_and_names_the_absent_ones(root, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(root)
    stems = sorted(p.stem for p in (root / "DS2" / "gt").glob("*.png"))
    (root / "ds2_index.txt").write_text("\n".join([stems[0], stems[2] + ".png", "ghost"]) + "\n")
    datasets = json.loads((root / "datasets.json").read_text())
    datasets["DS2"]["index_file"] = str(root / "ds2_index.txt")
    (root / "indexed.json").write_text(json.dumps(datasets))
    assert _run(root, tmp_path / "out", datasets="indexed.json") == EXIT_INPUTS  # 'ghost' has no gt
    assert "ghost" in capsys.readouterr().err
    assert _run(root, tmp_path / "out", "--allow-missing", datasets="indexed.json") == 0
    assert _scored(tmp_path / "out")[("DS2", "A")] == 2


@pytest.mark.parametrize("entry, words", [
    ({"mask": {"path": "DS1/gt", "suffx": ".png"}}, ["'suffx'", "did you mean 'suffix'"]),
    ({"msk": {"path": "DS1/gt"}, "mask": {"path": "DS1/gt"}}, ["'msk'", "did you mean 'mask'"]),
    ({"image": {"path": "DS1/img"}, "masks": {"path": "DS1/gt"}}, ["'masks'", "did you mean 'mask'"]),
    ({"image": {"path": "DS1/img"}}, ["'mask' is missing"]),
])
def test_misspelt_keys_inside_entries_are_named(root, tmp_path, monkeypatch, capsys, entry, words):
    monkeypatch.chdir(root)
    (root / "typo.json").write_text(json.dumps({"DS1": entry}))
    assert _run(root, tmp_path / "out", datasets="typo.json") == EXIT_USAGE
    err = capsys.readouterr().err
    assert all(word in err for word in words), err


@pytest.mark.parametrize("key", ["masks", "Mask", "msk"])
def test_a_misspelt_mask_names_the_key_under_config_too(root, tmp_path, monkeypatch, capsys, key):
    """Given to ``--config`` (no role), a dataset JSON whose ``mask`` is misspelt is still a dataset JSON: the key is
    named, instead of the file being read as a method JSON (issue 35 item 11)."""
    monkeypatch.chdir(root)
    (root / "typo.json").write_text(json.dumps({n: {"image": {"path": f"{n}/img"}, key: {"path": f"{n}/gt"}}
                                                for n in ("DS1", "DS2")}))
    status = main(["eval", "--config", str(root / "typo.json"), str(root / "m1.json"), "--out", str(tmp_path / "o"),
                   *FAST])
    err = capsys.readouterr().err
    assert status == EXIT_USAGE and f"unknown key '{key}'; did you mean 'mask'?" in err, err
    assert "names dataset 'image'" not in err and "no dataset given" not in err


def test_a_misspelt_path_in_a_method_json_is_named(root, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(root)
    (root / "mtypo.json").write_text(json.dumps({"A": {"DS1": {"pth": "DS1/u8"}}}))
    status = main(["eval", "--config", str(root / "datasets.json"), str(root / "mtypo.json"), "--out",
                   str(tmp_path / "o"), *FAST])
    assert status == EXIT_USAGE and "unknown key 'pth'; did you mean 'path'?" in capsys.readouterr().err


# the command line: folders of one name, prefixes and suffixes, and the hint when nothing matches --------------


@pytest.fixture(scope="module")
def sal(tmp_path_factory, root) -> Path:
    """``preds/{A,B,C}/DS1`` (one folder name, three methods); ``B`` writes ``<stem>_sal.png``."""
    base = tmp_path_factory.mktemp("sal")
    for method in ("A", "B", "C"):
        (base / "preds" / method / "DS1").mkdir(parents=True)
        for path in (root / "DS1" / "u8").glob("*.png"):
            name = f"{path.stem}_sal.png" if method == "B" else path.name
            (base / "preds" / method / "DS1" / name).write_bytes(path.read_bytes())
    return base


def test_folders_of_one_name_are_named_after_their_parents(root, sal, tmp_path):
    gt = ["eval", "--gt", str(root / "DS1" / "gt"), *FAST]
    assert main([*gt, "--pred", str(sal / "preds" / "A" / "DS1"), str(sal / "preds" / "C" / "DS1"),
                 "--out", str(tmp_path / "a")]) == 0
    assert _scored(tmp_path / "a") == {("DS1", "A"): 3, ("DS1", "C"): 3}
    assert main([*gt, "--pred", str(sal / "preds" / "A" / "DS1"), str(sal / "preds" / "A" / "DS1"),
                 "--out", str(tmp_path / "b")]) == EXIT_USAGE  # the same folder twice: name them


def test_a_suffix_matches_the_predictions_and_a_hint_names_them_when_it_is_missing(root, sal, tmp_path, capsys):
    args = ["eval", "--gt", str(root / "DS1" / "gt"), "--pred", str(sal / "preds" / "B" / "DS1"), *FAST]
    assert main([*args, "--out", str(tmp_path / "a")]) == EXIT_INPUTS
    err = capsys.readouterr().err
    assert "hint:" in err and "_sal.png" in err and "--suffix" in err
    assert main([*args, "--suffix", "_sal.png", "--out", str(tmp_path / "b")]) == 0
    assert _scored(tmp_path / "b") == {("DS1", "DS1"): 3}
