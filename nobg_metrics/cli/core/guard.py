"""One guard for every scoring command (``eval``, ``instances``, ``panoptic``): each outcome an exit status and one
line on stderr, never a traceback except for a bug.

=========================================  ======  ==================================================================
outcome                                    status  message
=========================================  ======  ==================================================================
scored                                     0       (the command's own output)
:class:`~nobg_metrics.cli.core.errors.InputError` (missing or unreadable inputs) 1  ``failed: ...; nothing was written``
:class:`~nobg_metrics.cli.core.errors.ConfigError` (a run the arguments cannot describe)  2  ``error: ...``
a bug (any other exception)                3       ``internal error (please report it ...)`` and the traceback
:class:`~nobg_metrics.cli.core.writing.OutputBusy` (``--out`` held by another run)  4  ``error: ...``
a signal (SIGINT, SIGTERM, SIGHUP)         128+n   ``interrupted (SIG...); ...``
=========================================  ======  ==================================================================

A lost decoding worker or rank (its error names the process, not a bug here) is status 3 without a traceback.
Importable without torch (the commands' parsers import it).
"""

from __future__ import annotations

import signal
import sys
import traceback
from collections.abc import Callable

from nobg_metrics.cli.core.errors import ConfigError, InputError
from nobg_metrics.cli.core.os_names import readable
from nobg_metrics.cli.core.signals import exit_status, interruptible, signal_name
from nobg_metrics.cli.core.statuses import EXIT_BUSY, EXIT_INPUTS, EXIT_INTERNAL, EXIT_USAGE
from nobg_metrics.cli.core.writing import OutputBusy


def lost_process(error: BaseException) -> str | None:
    """A short explanation for errors that mean another process of the run died (no traceback then)."""
    text = str(error)
    if isinstance(error, RuntimeError) and "DataLoader worker (pid" in text:  # killed or exited, not an error in it
        return f"a decoding worker stopped unexpectedly ({text.splitlines()[0]})"
    if type(error).__name__ in ("DistBackendError", "DistNetworkError", "DistError") or \
            (isinstance(error, RuntimeError) and ("Connection closed by peer" in text or "Connection reset" in text)):
        return f"lost contact with another rank ({text.splitlines()[0] if text else type(error).__name__})"
    return None


def guarded(run: Callable[[], int], *, say: bool = True, report_interrupt: bool = True) -> int:
    """``run()``'s exit status, with every failure turned into its status and message (module docstring).

    Interrupting signals raise :class:`~nobg_metrics.cli.core.signals.Interrupted` meanwhile (all cleanup runs).

    Args:
        run: the command's work; returns its status on success, raises on failure.
        say: print the messages of expected failures (``False`` on the ranks other than 0).
        report_interrupt: print the interruption's line (``False`` where a launcher reports it).
    """
    with interruptible():
        try:
            return run()
        except ConfigError as error:
            if say:
                print(readable(f"nobg-metrics: error: {error}"), file=sys.stderr)
            return EXIT_USAGE
        except InputError as error:
            if say:
                print(readable(f"nobg-metrics: failed: {error}; nothing was written"), file=sys.stderr)
            return EXIT_INPUTS
        except OutputBusy as error:
            if say:
                print(f"nobg-metrics: error: {error}", file=sys.stderr)
            return EXIT_BUSY
        except KeyboardInterrupt as interrupt:  # Interrupted (SIGINT, SIGTERM, SIGHUP) or a bare Ctrl-C
            signum = getattr(interrupt, "signum", signal.SIGINT)
            if say and report_interrupt:
                done = "the outputs had been written completely" if getattr(interrupt, "deferred", False) else \
                    "nothing was written; earlier outputs are unchanged"
                print(f"nobg-metrics: interrupted ({signal_name(signum)}); {done}", file=sys.stderr)
            return exit_status(signum)
        except Exception as error:  # noqa: BLE001 - the last resort: a bug, reported as one
            lost = lost_process(error)
            if lost is not None:
                print(f"nobg-metrics: failed: {lost}; nothing was written", file=sys.stderr)
            else:
                print("nobg-metrics: internal error (please report it with the traceback below); nothing was written",
                      file=sys.stderr)
                traceback.print_exc()
            return EXIT_INTERNAL
