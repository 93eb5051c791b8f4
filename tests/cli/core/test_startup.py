"""The command answers --help, --version and usage errors without loading torch, and checks metric names."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from nobg_metrics.cli.core import names
from nobg_metrics.cli.eval.main import EXIT_USAGE, main
from nobg_metrics.collection import TIERS
from tests.cli.core.lean_runs import lean_runs


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
    assert tuple(TIERS) == names.TIER_NAMES


def test_a_deferred_module_is_a_stand_in_until_used(tmp_path, monkeypatch):
    """``deferred_imports``: inside the block an import of a deferred module gives a stand-in that
    answers the listed attribute without loading it; any other attribute loads the real module; after the block an
    import loads the real module. A package on disk counts its own loads."""
    import importlib
    import sys

    from nobg_metrics.cli.core.startup import deferred_imports

    package = tmp_path / "heavypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "signal.py").write_text("import builtins\n"
                                       "builtins.HEAVY_LOADS = getattr(builtins, 'HEAVY_LOADS', 0) + 1\n"
                                       "def windowed(n):\n    return [1.0] * n\nvalue = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    monkeypatch.setattr(builtins, "HEAVY_LOADS", 0, raising=False)
    with deferred_imports({"heavypkg.signal": {"hamming": "windowed"}}):
        import heavypkg.signal

        assert hasattr(heavypkg.signal, "hamming") and builtins.HEAVY_LOADS == 0  # torchmetrics' check: no load
        assert heavypkg.signal.hamming(2) == [1.0, 1.0] and builtins.HEAVY_LOADS == 1  # used: the real one
    assert type(sys.modules["heavypkg.signal"]).__name__ == "module"
    with deferred_imports({"heavypkg.other": {}}):
        pass
    for name in ("heavypkg.signal", "heavypkg"):
        sys.modules.pop(name, None)
    with deferred_imports({"heavypkg.signal": {"hamming": "windowed"}}):
        import heavypkg.signal
    assert "heavypkg.signal" not in sys.modules and "signal" not in vars(sys.modules["heavypkg"])
    assert importlib.import_module("heavypkg.signal").value == 42 and builtins.HEAVY_LOADS == 2
    for name in ("heavypkg.signal", "heavypkg"):
        sys.modules.pop(name, None)


@pytest.mark.slow
def test_the_command_does_not_load_scipy_signal(tmp_path):
    """``nobg-metrics eval`` scores without importing scipy.signal (torchmetrics would, for audio metrics)."""
    from tests.cli.folders import make_dataset

    make_dataset(tmp_path / "d", count=2, formats=("u8",))
    code = ("import sys\nfrom nobg_metrics.cli.entry import main\n"
            f"status = main(['eval', '--gt', {str(tmp_path / 'd' / 'gt')!r}, '--pred', {str(tmp_path / 'd' / 'u8')!r}, "
            f"'--out', {str(tmp_path / 'out')!r}, '--metrics', 'mae', 's_measure', 'f_measure_max', '--quiet', "
            "'--workers', '0', '--no-plots'])\n"
            "print('scipy.signal loaded' if 'scipy.signal' in sys.modules else 'scipy.signal not loaded')\n"
            "sys.exit(status)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert "scipy.signal not loaded" in result.stdout


@pytest.mark.slow
def test_instances_and_panoptic_do_not_load_scipy_signal(tmp_path):
    """``instances`` and ``panoptic`` run inside the same deferral: a 1-image instances run never imports
    scipy.signal, and panoptic's import of its run (up to the missing file) neither."""
    for argv, status in lean_runs(tmp_path):
        code = ("import sys\nfrom nobg_metrics.cli.entry import main\nstatus = main(sys.argv[1:])\n"
                "print('scipy.signal loaded' if 'scipy.signal' in sys.modules else 'scipy.signal not loaded')\n"
                "sys.exit(status)")
        result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300)
        assert result.returncode == status, result.stderr
        assert "scipy.signal not loaded" in result.stdout


def _interrupted_import(error: BaseException):
    """A start-up step hit by SIGINT, whose import turns the KeyboardInterrupt into ``error`` (as numpy's core does
    when it is imported again after an interrupted first import)."""

    def build_parser():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs here
        except KeyboardInterrupt:
            raise error from None
        raise AssertionError("no SIGINT arrived")

    return build_parser


def test_an_interrupt_turned_into_another_error_at_start_still_ends_quietly(monkeypatch, capsys):
    from nobg_metrics.cli import entry, parser

    previous = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(parser, "build_parser", _interrupted_import(RuntimeError("CPU dispatcher tracer already")))
    assert entry.main(["eval", "--gt", "x"]) == 128 + signal.SIGINT
    assert "interrupted (SIGINT) while starting" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is previous


def test_an_interrupt_swallowed_at_start_still_ends_quietly(monkeypatch, capsys):
    from nobg_metrics.cli import entry, parser

    real = parser.build_parser

    def swallowing():  # as a start-up step that catches everything would
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except BaseException:  # noqa: BLE001 - the point of the test
            pass
        return real()

    monkeypatch.setattr(parser, "build_parser", swallowing)
    assert entry.main(["eval", "--gt", "g", "--pred", "p"]) == 128 + signal.SIGINT  # arguments that parse
    assert "interrupted (SIGINT) while starting" in capsys.readouterr().err


def test_an_error_at_start_without_an_interrupt_is_raised(monkeypatch):
    from nobg_metrics.cli import entry, parser

    def broken():
        raise RuntimeError("a real failure")

    previous = signal.getsignal(signal.SIGINT)
    monkeypatch.setattr(parser, "build_parser", broken)
    with pytest.raises(RuntimeError, match="a real failure"):
        entry.main(["eval"])
    assert signal.getsignal(signal.SIGINT) is previous  # the start-up handler is removed again
