"""Config files: ours (JSON and YAML, relative paths), PySODEvalToolkit's dataset + method JSON pair,
and the errors a bad config gets (exit status 2, a message, no traceback)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from nobg_metrics.cli.eval.main import main
from tests.cli.folders import make_dataset, read_results

FAST = ["--workers", "0", "--quiet", "--no-plots", "--metrics", "mae", "iou_metric"]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("cfg")
    make_dataset(base / "DS1", count=3, formats=("u8",))
    make_dataset(base / "DS2", count=4, shape=(33, 21), seed=5, formats=("u8",))
    # method "Pref" stores DS2 predictions as pre_<stem>_sal.png (PySODEvalToolkit prefix/suffix style)
    (base / "Pref").mkdir()
    for path in (base / "DS2" / "u8").glob("*.png"):
        shutil.copy(path, base / "Pref" / f"pre_{path.stem}_sal.png")
    return base


def _values(out: Path) -> dict[tuple[str, str], dict]:
    return {(r["dataset"], r["method"]): (r["images"], r["metrics"]) for r in read_results(out)["results"]}


@pytest.fixture(scope="module")
def expected(root: Path, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("expected")
    values = {}
    for ds in ("DS1", "DS2"):
        assert main(["eval", "--gt", f"{ds}={root / ds / 'gt'}", "--pred", f"M={root / ds / 'u8'}",
                     "--out", str(out / ds), *FAST]) == 0
        values.update(_values(out / ds))
    return values


def _ours(root: Path) -> dict:
    return {"datasets": {"DS1": {"gt": "DS1/gt", "suffix": ".png"}, "DS2": {"gt": {"path": "DS2/gt"}}},
            "methods": {"M": {"DS1": "DS1/u8", "DS2": {"path": "Pref", "prefix": "pre_", "suffix": "_sal.png"}}}}


@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_our_config(root: Path, expected: dict, tmp_path: Path, kind: str) -> None:
    config = root / f"run.{kind}"  # relative paths resolve against the config's folder
    config.write_text(json.dumps(_ours(root)) if kind == "json" else yaml.safe_dump(_ours(root)))
    assert main(["eval", "--config", str(config), "--out", str(tmp_path / "o"), *FAST]) == 0
    assert _values(tmp_path / "o") == expected


def test_pysodevaltoolkit_pair(root: Path, expected: dict, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(root)  # PySODEvalToolkit resolves relative paths against the working directory
    datasets = {name: {"image": {"path": f"{name}/images", "suffix": ".jpg"},
                       "mask": {"path": f"{name}/gt", "suffix": ".png"}} for name in ("DS1", "DS2")}
    methods = {"M": {"DS1": {"path": "DS1/u8", "suffix": ".png"},
                     "DS2": {"path": "Pref", "prefix": "pre_", "suffix": "_sal.png"}}}
    (tmp_path / "datasets.json").write_text(json.dumps(datasets))
    (tmp_path / "methods.json").write_text(json.dumps(methods))
    assert main(["eval", "--dataset-json", str(tmp_path / "datasets.json"), "--method-json",
                 str(tmp_path / "methods.json"), "--out", str(tmp_path / "o"), *FAST]) == 0
    assert _values(tmp_path / "o") == expected
    assert main(["eval", "--config", str(tmp_path / "datasets.json"), str(tmp_path / "methods.json"),
                 "--out", str(tmp_path / "o2"), *FAST]) == 0
    assert _values(tmp_path / "o2") == expected


@pytest.mark.parametrize("config, message", [
    ({"datasets": {"DS1": "DS1/gt"}, "methods": {"M": {"NOPE": "DS1/u8"}}}, "unknown datasets"),
    ({"datasets": {"DS1": "DS1/gt"}, "methods": {"M": {"DS1": "absent"}}}, "folder not found"),
    ({"datasets": {"DS1": "DS1/gt"}}, "no method"),
    ({"oops": 1}, "neither a nobg-metrics config"),
    ({"datasets": {"DS1": "DS1/gt"}, "oops": 1}, "unknown top-level keys"),
])
def test_bad_config_is_a_clean_error(root: Path, tmp_path: Path, capsys, config: dict, message: str) -> None:
    path = root / "bad.json"
    path.write_text(json.dumps(config))
    assert main(["eval", "--config", str(path), "--out", str(tmp_path / "o"), *FAST]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and not (tmp_path / "o").exists()


def test_run_options_in_our_config_and_the_command_line_wins(root: Path, expected: dict, tmp_path: Path) -> None:
    config = root / "with_options.yaml"
    options = {"metrics": ["mae", "iou_metric"], "out": "opt-out", "no-plots": True, "quiet": True, "workers": 0,
               "digits": 4}
    config.write_text(yaml.safe_dump({**_ours(root), "options": options}))
    assert main(["eval", "--config", str(config)]) == 0  # out resolves against the config's folder
    assert _values(root / "opt-out") == expected
    assert re.search(r"\| 0\.\d{4} \|", (root / "opt-out" / "table.md").read_text())  # digits: 4
    assert main(["eval", "--config", str(config), "--out", str(tmp_path / "cli"), "--metrics", "mae"]) == 0
    document = read_results(tmp_path / "cli")
    assert document["metrics"] == ["mae"]


@pytest.mark.parametrize("options, message", [
    ({"tierr": "cheap"}, "unknown option 'tierr'; did you mean 'tier'?"),
    ({"tier": "cheep"}, "options.tier: argument --tier: invalid choice: 'cheep'"),
    ({"batch_size": "many"}, "options.batch_size: argument --batch-size: invalid int value"),
    ({"no_per_image": "yes"}, "options.no_per_image: expected true or false"),
    ({"gt": "DS1/gt"}, "'gt' is an input"),
    ("fast", "options: must map option names to values"),
])
def test_bad_run_options_are_named(root: Path, tmp_path: Path, capsys, options, message: str) -> None:
    path = root / "bad_options.json"
    path.write_text(json.dumps({**_ours(root), "options": options}))
    assert main(["eval", "--config", str(path), "--out", str(tmp_path / "o"), *FAST[:3]]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and not (tmp_path / "o").exists()
