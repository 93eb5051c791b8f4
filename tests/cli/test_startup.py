"""The command answers --help, --version and usage errors without loading torch, and checks metric names."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from nobg_metrics.cli import names
from nobg_metrics.cli.main import EXIT_USAGE, main
from nobg_metrics.collection import TIERS


def _entry(*argv: str) -> subprocess.CompletedProcess:
    code = ("import sys\nfrom nobg_metrics.cli.entry import main\nstatus = main(sys.argv[1:])\n"
            "print('torch loaded' if 'torch' in sys.modules else 'no torch', file=sys.stderr)\nsys.exit(status)")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("argv", [["--help"], ["eval", "--help"], ["instances", "--help"], ["--version"], []])
def test_help_and_version_do_not_load_torch(argv):
    start = time.perf_counter()
    result = _entry(*argv)
    elapsed = time.perf_counter() - start
    assert result.returncode == 0, result.stderr
    if "--help" in argv or "--version" in argv:  # argparse exits inside parse_args
        assert "torch" not in result.stderr
    else:
        assert "no torch" in result.stderr
    assert "usage: nobg-metrics" in result.stdout or "nobg-metrics 0" in result.stdout
    assert elapsed < 10  # generous on a loaded CI machine; ~0.1 s idle (docs/cli.md)


def test_a_usage_error_is_answered_before_torch_loads():
    result = _entry("eval", "--protocol", "nope")
    assert result.returncode == EXIT_USAGE and "invalid choice" in result.stderr


def test_a_misspelt_metric_is_named_with_the_closest_valid_ones(capsys, tmp_path):
    assert main(["eval", "--metrics", "mae", "weighted_f_mesure", "--out", str(tmp_path / "out"), "--quiet"]) \
        == EXIT_USAGE
    err = capsys.readouterr().err
    assert "'weighted_f_mesure'" in err and "weighted_f_measure" in err
    assert not (tmp_path / "out").exists()


def test_the_parser_names_are_the_libraries():
    assert names.TIER_NAMES == tuple(TIERS)
