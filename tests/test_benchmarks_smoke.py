"""Smoke tests of the benchmark scripts: ``benchmarks/run.py`` and ``benchmarks/scaling.py --quick`` still run."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def _import_benchmarks():
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    import run
    import scaling

    return run, scaling


@pytest.mark.slow
def test_run_main_mae_64(capsys):
    run, _ = _import_benchmarks()
    assert run.main(["--sizes", "64", "--repeat", "1", "--only", "mae"]) == 0
    table = capsys.readouterr().out
    assert "| mae" in table and "64²" in table


@pytest.mark.slow
def test_scaling_quick_one_metric(tmp_path):
    _, scaling = _import_benchmarks()
    out_json, out_md, out_png = tmp_path / "s.json", tmp_path / "s.md", tmp_path / "s.png"
    code = scaling.main(["--quick", "--only", "mae", "--json", str(out_json), "--markdown", str(out_md),
                         "--plot", str(out_png)])
    assert code == 0
    result = json.loads(out_json.read_text())
    points = {(row["sweep"], row["size"], row["batch"]) for row in result["rows"]}
    assert points == {("resolution", 64, 1), ("resolution", 128, 1), ("batch", 64, 1), ("batch", 64, 2)}
    assert all(row["ms_per_image"] > 0 and row["peak_mib"] >= 0 for row in result["rows"])
    assert set(result["slopes"]) == {"mae"} and result["slopes"]["mae"]["time"] is not None
    assert "| mae |" in out_md.read_text()
    assert out_png.read_bytes()[:4] == b"\x89PNG"


def test_fitted_slope_is_the_log_log_slope():
    _, scaling = _import_benchmarks()
    assert abs(scaling.fitted_slope([1, 4, 16], [3, 12, 48]) - 1.0) < 1e-12
    assert abs(scaling.fitted_slope([1, 4], [1, 32]) - 2.5) < 1e-12
    assert scaling.fitted_slope([1], [1]) is None
