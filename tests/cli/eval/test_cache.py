"""``eval --cache DIR``: unchanged jobs are not scored again and give the same outputs byte for byte; a new method,
changed bytes or another metric set are scored; damaged entries are ignored with a note."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from nobg_metrics.cli.eval import file_digests
from nobg_metrics.cli.eval import main as main_module
from nobg_metrics.cli.eval.main import EXIT_USAGE, main
from tests.cli.folders import make_dataset, make_matting_dataset

FAST = ["--workers", "0", "--quiet", "--no-plots", "--procs", "1"]
METRICS = ["--metrics", "mae", "s_measure", "f_measure_max", "iou_metric"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache-data")
    make_dataset(root / "D1", count=4, formats=("u8", "rgba", "u16"))
    return root


@pytest.fixture
def scored(monkeypatch) -> list[list[tuple[str, str]]]:
    """Per run: the (dataset, method) of every job handed to ``score``."""
    calls: list[list[tuple[str, str]]] = []
    real = main_module.score

    def recording(jobs, options, device, **kwargs):
        calls.append([(job.dataset, job.method) for job in jobs])
        return real(jobs, options, device, **kwargs)

    monkeypatch.setattr(main_module, "score", recording)
    return calls


def _eval(data: Path, out: Path, cache: Path | None, methods=("u8", "rgba"), metrics=METRICS, gt="D1") -> int:
    preds = [a for m in methods for a in ("--pred", f"{m}={data / gt / m}")]
    extra = [] if cache is None else ["--cache", str(cache)]
    return main(["eval", "--gt", f"{gt}={data / gt / 'gt'}", *preds, "--out", str(out), *metrics, *FAST, *extra])


def test_a_second_run_scores_nothing_and_writes_the_same_bytes(data, tmp_path, scored, capsys):
    assert _eval(data, tmp_path / "plain", None) == 0
    assert _eval(data, tmp_path / "first", tmp_path / "cache") == 0
    assert _eval(data, tmp_path / "second", tmp_path / "cache") == 0
    assert scored[1] == [("D1", "u8"), ("D1", "rgba")] and scored[2] == []
    assert "2 of 2 jobs unchanged" in capsys.readouterr().err
    for name in ("results.json", "per_image.csv", "table.md", "table.tex", "curves.csv", "stats.json"):
        plain = (tmp_path / "plain" / name).read_bytes()
        assert (tmp_path / "first" / name).read_bytes() == plain, name
        assert (tmp_path / "second" / name).read_bytes() == plain, name


def test_a_new_method_is_the_only_job_scored(data, tmp_path, scored):
    assert _eval(data, tmp_path / "a", tmp_path / "cache") == 0
    assert _eval(data, tmp_path / "b", tmp_path / "cache", methods=("u8", "rgba", "u16")) == 0
    assert scored[1] == [("D1", "u16")]
    assert _eval(data, tmp_path / "plain", None, methods=("u8", "rgba", "u16")) == 0
    for name in ("results.json", "per_image.csv"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()


def test_changed_bytes_rescore_only_their_job(data, tmp_path, scored):
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    assert _eval(copy, tmp_path / "a", tmp_path / "cache") == 0
    pred = copy / "D1" / "rgba" / "img_00.png"
    pred.write_bytes(pred.read_bytes() + b"\0")  # same decoded image, other bytes: keyed by content, rescored
    assert _eval(copy, tmp_path / "b", tmp_path / "cache") == 0
    assert scored[1] == [("D1", "rgba")]
    first, second = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("a", "b"))
    assert first == second


def test_another_metric_set_is_scored_again(data, tmp_path, scored):
    assert _eval(data, tmp_path / "a", tmp_path / "cache") == 0
    assert _eval(data, tmp_path / "b", tmp_path / "cache", metrics=["--metrics", "mae"]) == 0
    assert _eval(data, tmp_path / "c", tmp_path / "cache", metrics=["--metrics", "mae"]) == 0
    assert scored[1] == [("D1", "u8"), ("D1", "rgba")] and scored[2] == []
    assert json.loads((tmp_path / "c" / "results.json").read_text())["metrics"] == ["mae"]


def test_a_damaged_entry_is_ignored_with_a_note(data, tmp_path, scored, capsys):
    assert _eval(data, tmp_path / "a", tmp_path / "cache") == 0
    entries = sorted((tmp_path / "cache").rglob("jobs/*/*.json"))
    assert len(entries) == 2
    entries[0].write_text('{"format": 1, "key": "x"')  # cut short
    capsys.readouterr()
    assert _eval(data, tmp_path / "b", tmp_path / "cache") == 0
    assert len(scored[1]) == 1 and "ignoring the damaged entry" in capsys.readouterr().err
    assert (tmp_path / "a" / "results.json").read_bytes() == (tmp_path / "b" / "results.json").read_bytes()
    assert _eval(data, tmp_path / "c", tmp_path / "cache") == 0  # rewritten by the second run
    assert scored[2] == []


def test_unchanged_files_are_not_read_again(data, tmp_path, scored, monkeypatch):
    monkeypatch.setattr(file_digests, "RACY_S", 0.0)
    hashed: list[str] = []
    real = file_digests.file_digest
    monkeypatch.setattr(file_digests, "file_digest", lambda path: hashed.append(path.name) or real(path))
    assert _eval(data, tmp_path / "a", tmp_path / "cache") == 0
    assert len(hashed) == 4 + 2 * 4  # the gt once, each prediction once
    hashed.clear()
    assert _eval(data, tmp_path / "b", tmp_path / "cache") == 0
    assert hashed == [] and scored[1] == []


def test_a_cache_inside_an_input_folder_is_refused(data, tmp_path, capsys):
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    assert _eval(copy, tmp_path / "a", copy / "D1" / "u8" / "cache") == EXIT_USAGE
    assert "lies inside the input folder" in capsys.readouterr().err


def test_matting_jobs_with_and_without_trimaps_fill_the_columns_of_a_whole_run(tmp_path, scored):
    """P3M's trimap columns exist only where a trimap does: a cached trimap job adds them back."""
    make_matting_dataset(tmp_path / "M", methods=("A", "B"), count=3)
    make_matting_dataset(tmp_path / "N", methods=("A",), count=2, seed=3)
    config = tmp_path / "run.json"
    datasets = {"M": {"gt": str(tmp_path / "M" / "alpha"), "trimap": str(tmp_path / "M" / "trimaps")},
                "N": {"gt": str(tmp_path / "N" / "alpha")}}
    methods = {"A": {"M": str(tmp_path / "M" / "A"), "N": str(tmp_path / "N" / "A")},
               "B": {"M": str(tmp_path / "M" / "B")}}
    config.write_text(json.dumps({"datasets": datasets, "methods": methods}))
    run = ["eval", "--config", str(config), "--task", "matting", "--protocol", "p3m", *FAST,
           "--cache", str(tmp_path / "cache")]
    assert main([*run, "--out", str(tmp_path / "a"), "--exclude-datasets", "N"]) == 0  # with trimaps
    assert main([*run, "--out", str(tmp_path / "b")]) == 0
    assert scored[1] == [("N", "A")]  # scored alone it has no trimap column
    plain = ["eval", "--config", str(config), "--task", "matting", "--protocol", "p3m", *FAST]
    assert main([*plain, "--out", str(tmp_path / "plain")]) == 0
    for name in ("results.json", "per_image.csv"):
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes(), name


def test_unreadable_entries_come_back_from_the_cache(data, tmp_path, scored):
    copy = tmp_path / "data"
    shutil.copytree(data, copy)
    (copy / "D1" / "rgba" / "img_01.png").write_bytes(b"not a png")
    argv = ["--allow-missing"]
    for out in ("a", "b"):
        assert main(["eval", "--gt", f"D1={copy / 'D1' / 'gt'}", "--pred", f"u8={copy / 'D1' / 'u8'}",
                     "--pred", f"rgba={copy / 'D1' / 'rgba'}", "--out", str(tmp_path / out), *METRICS, *FAST,
                     *argv, "--cache", str(tmp_path / "cache")]) == 0
    assert scored[1] == []
    document = json.loads((tmp_path / "b" / "results.json").read_text())
    assert [e["file"] for e in document["unreadable"]] == ["img_01.png"]
    assert (tmp_path / "a" / "results.json").read_bytes() == (tmp_path / "b" / "results.json").read_bytes()


def test_cache_files_follow_the_umask(data, tmp_path):
    previous = os.umask(0o027)
    try:
        assert _eval(data, tmp_path / "a", tmp_path / "cache") == 0
    finally:
        os.umask(previous)
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o640 for p in files)


@pytest.mark.slow
def test_ranks_of_procs_agree_and_only_new_jobs_are_scored(data, tmp_path):
    """``--procs 2``: every rank looks the jobs up, rank 0 stores; the second run scores nothing (its note)."""
    import subprocess
    import sys

    def run(out: str, methods: tuple[str, ...]) -> str:
        preds = [a for m in methods for a in ("--pred", f"{m}={data / 'D1' / m}")]
        argv = [sys.executable, "-m", "nobg_metrics", "eval", "--gt", f"D1={data / 'D1' / 'gt'}", *preds, *METRICS,
                "--workers", "0", "--quiet", "--no-plots", "--procs", "2", "--cache", str(tmp_path / "cache"),
                "--out", str(tmp_path / out)]
        result = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return result.stderr

    assert "0 of 2 jobs unchanged" in run("a", ("u8", "rgba"))
    assert run("b", ("u8", "rgba")).count("2 of 2 jobs unchanged") == 1  # said once (rank 0)
    assert "2 of 3 jobs unchanged" in run("c", ("u8", "rgba", "u16"))
    assert (tmp_path / "a" / "results.json").read_bytes() == (tmp_path / "b" / "results.json").read_bytes()
