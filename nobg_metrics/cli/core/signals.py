"""Interruption: SIGINT, SIGTERM and SIGHUP become one :class:`Interrupted` exception, raised once.

The command's processes (the launcher of ``--procs``, each rank, a single-process run) install
:func:`interruptible` around a run: the first signal raises :class:`Interrupted` in the main thread, so
every ``finally`` runs (decoding workers are shut down, temporary outputs removed, the ``--out`` lock
released); later signals are ignored while that cleanup runs. Python drops an exception raised where it
cannot propagate (a ``__del__``, an at-fork callback of ``os.fork``: a signal that arrives while a
decoding worker is being started); so the signal is remembered and :func:`checkpoint`, called at every
step of normal work (each loaded batch, before writing, the launcher's wait loop), raises it again.
Inside :func:`deferred` (the few renames that commit the outputs) a signal is held and raised when the
block ends, so outputs are never half replaced. Processes started by the run are also tied to their parent with
:func:`die_with_parent` (Linux ``PR_SET_PDEATHSIG``): none outlives the process that started it, however that one ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals that interrupt a run."""

_PR_SET_PDEATHSIG = 1


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal; ``signum`` is the signal, ``deferred`` whether it arrived while the
    outputs were being committed (they were then written completely)."""

    def __init__(self, signum: int, deferred: bool = False) -> None:
        super().__init__(signal_name(signum))
        self.signum, self.deferred = signum, deferred


class _State:
    interrupting = False
    depth = 0
    pending: int | None = None
    received: int | None = None


_state = _State()


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15 (the number itself where the platform has no name for it).

    Examples:
        >>> signal_name(2)
        'SIGINT'
    """
    try:
        return signal.Signals(signum).name
    except ValueError:
        return str(signum)


def exit_status(signum: int) -> int:
    """The shell's status of a process stopped by ``signum``: 128 + ``signum`` (130 for SIGINT).

    Examples:
        >>> exit_status(2), exit_status(15)
        (130, 143)
    """
    return 128 + int(signum)


def _handler(signum: int, _frame: FrameType | None) -> None:
    if _state.interrupting:
        return  # one interruption at a time: its cleanup runs undisturbed
    if _state.depth:
        _state.pending = signum
        return
    _state.interrupting, _state.received = True, signum
    raise Interrupted(signum)


def checkpoint() -> None:
    """Raise the interruption again if one was received but normal work goes on (Python dropped it).

    Call it only from normal work, never from cleanup: reaching it after a signal means the exception
    did not unwind this code.
    """
    if _state.received is not None:
        raise Interrupted(_state.received)


def _unraisable(hook: Callable[[sys.UnraisableHookArgs], Any]) -> Callable[[sys.UnraisableHookArgs], None]:
    def quiet(unraisable: sys.UnraisableHookArgs) -> None:
        # a dropped Interrupted is raised again by checkpoint(): no noise
        if not isinstance(unraisable.exc_value, Interrupted):
            hook(unraisable)
    return quiet


@contextmanager
def interruptible() -> Iterator[None]:
    """Within: SIGINT/SIGTERM/SIGHUP raise :class:`Interrupted` (once); the previous handlers afterwards.

    Only in the main thread (elsewhere signals cannot be handled and this does nothing).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    previous_hook = sys.unraisablehook
    _state.interrupting, _state.depth, _state.pending, _state.received = False, 0, None, None
    sys.unraisablehook = _unraisable(previous_hook)
    for signum in SIGNALS:
        signal.signal(signum, _handler)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        sys.unraisablehook = previous_hook


@contextmanager
def deferred() -> Iterator[None]:
    """Hold an interrupting signal until the block has finished, then raise it (``deferred=True``)."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth == 0 and _state.pending is not None and not _state.interrupting:
            signum, _state.pending = _state.pending, None
            _state.interrupting = True
            raise Interrupted(signum, deferred=True)  # the block is done: "received" stays unset


def _forward_and_exit(parent: int, signum: int, _frame: FrameType | None) -> None:
    with contextlib.suppress(OSError):
        os.kill(parent, signum)
    os._exit(0)


def worker_signals(parent: int) -> None:
    """Signals in a decoding worker (a child the scoring process ``parent`` started).

    SIGINT and SIGHUP are passed on to the scoring process, which stops the run in order, and the worker
    leaves at once (exiting normally could wait forever to flush its queue to a parent that no longer
    reads). SIGTERM keeps its default (immediate death): it is what the loader itself sends to a worker
    that does not stop in time, and a worker killed that way ends the run as a failure (exit status 3).
    """
    die_with_parent(parent)
    if threading.current_thread() is not threading.main_thread():
        return
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for signum in SIGNALS:
        if signum != getattr(signal, "SIGTERM", None):
            signal.signal(signum, lambda number, frame: _forward_and_exit(parent, number, frame))


def die_with_parent(parent: int | None = None, signum: int = signal.SIGKILL) -> None:
    """Have the kernel send ``signum`` to this process when its parent ends (Linux; elsewhere nothing).

    ``parent``: the pid the parent had when it started us; if it has already ended, exit at once.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if parent is not None and os.getppid() != parent:
        os._exit(exit_status(signum))  # the parent ended before we asked to follow it
