"""Every scoring command's outcome is an exit status and one line on stderr (nobg_metrics.cli.core.guard)."""

from __future__ import annotations

import signal

import pytest

from nobg_metrics.cli.core.errors import ConfigError, InputError
from nobg_metrics.cli.core.guard import guarded
from nobg_metrics.cli.core.signals import Interrupted
from nobg_metrics.cli.core.statuses import EXIT_BUSY, EXIT_INPUTS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from nobg_metrics.cli.core.writing import OutputBusy


def _raising(error: BaseException):
    def run() -> int:
        raise error

    return run


@pytest.mark.parametrize(("error", "status", "message"), [
    (ConfigError("no --gt"), EXIT_USAGE, "nobg-metrics: error: no --gt"),
    (InputError("gt/a.png unreadable"), EXIT_INPUTS, "failed: gt/a.png unreadable; nothing was written"),
    (InputError("bad json"), EXIT_INPUTS, "failed: bad json; nothing was written"),
    (OutputBusy("out is in use"), EXIT_BUSY, "nobg-metrics: error: out is in use"),
    (Interrupted(signal.SIGTERM), 128 + signal.SIGTERM, "interrupted (SIGTERM); nothing was written"),
    (KeyboardInterrupt(), 128 + signal.SIGINT, "interrupted (SIGINT)"),
    (RuntimeError("DataLoader worker (pid 12) is killed"), EXIT_INTERNAL, "a decoding worker stopped unexpectedly"),
    (ZeroDivisionError("a bug"), EXIT_INTERNAL, "internal error (please report it"),
], ids=["config", "input", "instances-input", "busy", "signal", "ctrl-c", "lost-worker", "bug"])
def test_each_outcome_has_its_status_and_line(error, status, message, capsys):
    assert guarded(_raising(error)) == status
    err = capsys.readouterr().err
    assert message in err
    assert ("Traceback" in err) == isinstance(error, ZeroDivisionError)  # a traceback for a bug only


def test_success_and_silent_ranks(capsys):
    assert guarded(lambda: EXIT_OK) == EXIT_OK
    assert guarded(_raising(InputError("x")), say=False) == EXIT_INPUTS
    assert guarded(_raising(Interrupted(signal.SIGINT)), report_interrupt=False) == 128 + signal.SIGINT
    assert capsys.readouterr().err == ""
