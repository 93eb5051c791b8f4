"""``torchrun --nproc-per-node 2 -m nobg_metrics eval`` (gloo on CPU) and ``--procs 2`` (the command
starting its own ranks) write what one process writes; failures of a rank end the run with its status;
the console script / ``python -m`` entry points run."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.folders import make_dataset, read_results

ARGS = ["--workers", "0", "--quiet", "--device", "cpu"]


def _env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("WORLD_SIZE", None)
    return env


def _rows(out: Path) -> list[dict]:
    with (out / "per_image.csv").open() as handle:
        return list(csv.DictReader(handle))


@pytest.mark.slow
def test_two_ranks_write_the_single_process_results(tmp_path: Path) -> None:
    make_dataset(tmp_path / "data", count=7, formats=("u8", "rgba"))  # 7 images: uneven shares
    common = ["eval", "--gt", str(tmp_path / "data" / "gt"), "--pred", str(tmp_path / "data" / "u8"),
              "--pred", str(tmp_path / "data" / "rgba"), *ARGS]
    single = subprocess.run([sys.executable, "-m", "nobg_metrics", *common, "--out", str(tmp_path / "one")],
                            check=False, env=_env(), capture_output=True, text=True, timeout=120)
    assert single.returncode == 0, single.stderr
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    multi = subprocess.run([*launcher, "-m", "nobg_metrics", *common, "--out", str(tmp_path / "two")],
                           check=False, env=_env(), capture_output=True, text=True, timeout=180)
    assert multi.returncode == 0, multi.stderr[-3000:]
    one, two = read_results(tmp_path / "one"), read_results(tmp_path / "two")
    for a, b in zip(one["results"], two["results"]):
        assert (a["dataset"], a["method"], a["images"]) == (b["dataset"], b["method"], b["images"])
        for name, value in a["metrics"].items():
            assert b["metrics"][name] == pytest.approx(value, abs=1e-9), name
    assert _rows(tmp_path / "one") == _rows(tmp_path / "two")  # gathered per-image records, same order
    if "f_measure_max" in one["metrics"]:
        assert (tmp_path / "two" / "curves.png").exists()


@pytest.mark.slow
def test_procs_two_writes_the_single_process_results(tmp_path: Path) -> None:
    make_dataset(tmp_path / "data", count=7, formats=("u8",))
    common = ["eval", "--gt", str(tmp_path / "data" / "gt"), "--pred", str(tmp_path / "data" / "u8"), *ARGS]
    for procs, out in (("1", "one"), ("2", "two")):
        result = subprocess.run([sys.executable, "-m", "nobg_metrics", *common, "--procs", procs, "--out",
                                 str(tmp_path / out)], check=False, env=_env(), capture_output=True, text=True,
                                timeout=180)
        assert result.returncode == 0, result.stderr[-3000:]
    one, two = read_results(tmp_path / "one"), read_results(tmp_path / "two")
    assert one["results"][0]["images"] == two["results"][0]["images"] == 7
    for name, value in one["results"][0]["metrics"].items():
        assert two["results"][0]["metrics"][name] == pytest.approx(value, abs=1e-9), name
    assert [r["image"] for r in _rows(tmp_path / "one")] == [r["image"] for r in _rows(tmp_path / "two")]


@pytest.mark.slow
def test_procs_two_with_two_methods_and_allow_missing_records_the_same(tmp_path: Path) -> None:
    make_dataset(tmp_path / "data", count=7, formats=("u8", "u16"))
    sorted((tmp_path / "data" / "u16").glob("*.png"))[2].unlink()  # a missing prediction of the second method
    common = ["eval", "--gt", str(tmp_path / "data" / "gt"), "--pred", str(tmp_path / "data" / "u8"), "--pred",
              str(tmp_path / "data" / "u16"), "--allow-missing", *ARGS]
    for procs, out in (("1", "one"), ("2", "two")):
        result = subprocess.run([sys.executable, "-m", "nobg_metrics", *common, "--procs", procs, "--out",
                                 str(tmp_path / out)], check=False, env=_env(), capture_output=True, text=True,
                                timeout=180)
        assert result.returncode == 0, result.stderr[-3000:]
    one, two = read_results(tmp_path / "one"), read_results(tmp_path / "two")
    assert one["missing"] == two["missing"] and len(two["missing"]) == 1
    assert [(r["method"], r["images"]) for r in two["results"]] == [("u8", 7), ("u16", 6)]
    for a, b in zip(one["results"], two["results"]):
        for name, value in a["metrics"].items():
            assert b["metrics"][name] == pytest.approx(value, abs=1e-9), name
    assert _rows(tmp_path / "one") == _rows(tmp_path / "two")


@pytest.mark.slow
def test_procs_two_fails_by_name_on_an_unreadable_file(tmp_path: Path) -> None:
    make_dataset(tmp_path / "data", count=5, formats=("u8",))
    corrupt = sorted((tmp_path / "data" / "u8").glob("*.png"))[3]
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\ntruncated")  # read by rank 1 of 2
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "nobg_metrics", "eval", "--gt", str(tmp_path / "data" / "gt"),
                             "--pred", str(tmp_path / "data" / "u8"), *ARGS, "--procs", "2", "--out", str(out)],
                            check=False, env=_env(), capture_output=True, text=True, timeout=180)
    assert result.returncode == 1, result.stderr[-3000:]
    assert corrupt.name in result.stderr and "unreadable" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def test_procs_auto_is_one_process_for_few_images_on_cuda_and_under_torchrun(monkeypatch) -> None:
    import torch

    from nobg_metrics.cli.core.launch import IMAGES_PER_RANK, resolve_procs

    cpu = torch.device("cpu")
    assert resolve_procs("auto", cpu, IMAGES_PER_RANK - 1) == 1
    assert resolve_procs("auto", torch.device("cuda"), 10_000) == 1
    with pytest.raises(ValueError, match="torchrun"):
        resolve_procs("2", torch.device("cuda"), 10_000)
    assert resolve_procs("3", cpu, 1) == 3
    many = resolve_procs("auto", cpu, 100 * IMAGES_PER_RANK)
    assert 1 <= many <= (os.cpu_count() or 1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert resolve_procs("auto", cpu, 10_000) == 1 and resolve_procs("4", cpu, 10_000) == 1


def test_console_script_help() -> None:
    result = subprocess.run([sys.executable, "-m", "nobg_metrics", "eval", "--help"], capture_output=True, check=False,
                            text=True, timeout=60, env=_env())
    assert result.returncode == 0 and "--allow-missing" in result.stdout and "--protocol" in result.stdout
