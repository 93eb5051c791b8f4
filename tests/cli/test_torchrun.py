"""``torchrun --nproc-per-node 2 -m nobg_metrics eval`` (gloo on CPU) writes what one process writes,
and the console script / ``python -m`` entry points run."""

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
                            env=_env(), capture_output=True, text=True, timeout=120)
    assert single.returncode == 0, single.stderr
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    multi = subprocess.run([*launcher, "-m", "nobg_metrics", *common, "--out", str(tmp_path / "two")],
                           env=_env(), capture_output=True, text=True, timeout=180)
    assert multi.returncode == 0, multi.stderr[-3000:]
    one, two = read_results(tmp_path / "one"), read_results(tmp_path / "two")
    for a, b in zip(one["results"], two["results"]):
        assert (a["dataset"], a["method"], a["images"]) == (b["dataset"], b["method"], b["images"])
        for name, value in a["metrics"].items():
            assert b["metrics"][name] == pytest.approx(value, abs=1e-9), name
    assert _rows(tmp_path / "one") == _rows(tmp_path / "two")  # gathered per-image records, same order
    if "f_measure_max" in one["metrics"]:
        assert (tmp_path / "two" / "curves.png").exists()


def test_console_script_help() -> None:
    result = subprocess.run([sys.executable, "-m", "nobg_metrics", "eval", "--help"], capture_output=True,
                            text=True, timeout=60, env=_env())
    assert result.returncode == 0 and "--allow-missing" in result.stdout and "--protocol" in result.stdout
