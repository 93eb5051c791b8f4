"""The console script ``nobg-metrics`` (and ``python -m nobg_metrics``): parse the arguments, import the command, run
it.

The parser (:mod:`nobg_metrics.cli.parser`) needs no torch: ``--help``, ``--version`` and usage errors answer at
once (measured: docs/cli.md).

Before torch loads, the scoring commands choose their OpenMP threads and wait policy from the machine's load
(:mod:`nobg_metrics.cli.core.threads`; docs/performance.md "A busy machine").

Importing the command loads torch (seconds). A Ctrl-C (SIGINT) in that time would print a traceback from
inside torch's import; here it ends the start-up quietly with the exit status of an interrupted run
(``128 + SIGINT``), before anything was read or written. An extension module interrupted half-way through its
import can turn the ``KeyboardInterrupt`` into another error (numpy: ``RuntimeError: CPU dispatcher tracer already
initialized`` when its core is imported again), and code that catches everything can swallow it, so the guard's own
SIGINT handler records the signal: any error after it counts as the interrupt, and a recorded one ends the start-up
even where nothing was raised. Once the command runs, its own handlers (:mod:`nobg_metrics.cli.core.signals`) take
over.

Leaving (:func:`console`): once the command has returned its status — outputs written, helpers reaped — the process
flushes its streams, runs its ``atexit`` handlers and ends with ``os._exit``, without the interpreter's teardown:
unloading torch's modules and C++ state took ~0.35 s of every run (measured: ``python -c "import torch"`` 1.32 s
against 0.97 s ending so). Where that is not safe it ends as usual: a thread other than the main one still runs, a
``torch.distributed`` process group is still up, or a tracer or profiler is set (coverage, ``python -m cProfile``:
they write their data at the interpreter's exit).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from types import FrameType
from typing import NoReturn

SCORING_COMMANDS = ("eval", "instances", "panoptic")
"""Commands that score on torch's CPU threads: their OpenMP threads and wait policy are chosen before torch loads
(:mod:`nobg_metrics.cli.core.threads`)."""

DEFERRING_COMMANDS = ("instances", "panoptic")
"""Commands whose handler imports the run itself: it runs inside :func:`deferred_imports` (``eval`` imports its run
here, inside the block)."""


class _StartupInterrupt:
    """SIGINT during start-up: remembered, then raised as ``KeyboardInterrupt`` (as Python's default handler)."""

    def __init__(self) -> None:
        self.received = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received = True
        raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the command with ``argv`` (``sys.argv[1:]`` by default); returns its exit status."""
    interrupt = _StartupInterrupt()
    main_thread = threading.current_thread() is threading.main_thread()  # signal handlers: main thread only
    previous = signal.signal(signal.SIGINT, interrupt) if main_thread else None
    try:
        # every import of the command inside the Ctrl-C guard: an interrupt while they load ends quietly
        from nobg_metrics.cli.core.startup import collector_paused, deferred_imports
        from nobg_metrics.cli.core.threads import apply_thread_policy
        from nobg_metrics.cli.parser import build_parser

        parser = build_parser()
        args = parser.parse_args(argv)  # --help, --version and usage errors end here, before torch loads
        if args.command is None:
            parser.print_help()
            return 0
        if args.command in SCORING_COMMANDS and "torch" not in sys.modules:  # torch in-process (tests): too late
            apply_thread_policy()  # libgomp reads its settings once, when torch loads it
        if args.command in DEFERRING_COMMANDS:  # their handlers check the flags, then import the run (torch)
            with deferred_imports():  # (the whole command: a deferred module loads for real on first use)
                return args.handler(args)
        if args.command != "eval":  # plot, merge: their own handlers (no scoring)
            return args.handler(args)
        with deferred_imports(), collector_paused():  # scipy.signal, matplotlib: torchmetrics' for nothing we use
            from nobg_metrics.cli.eval.main import run_guarded  # torch (seconds): only once the arguments ask for a run
        if interrupt.received:  # raised where something swallowed it
            raise KeyboardInterrupt
    except BaseException as error:
        if not (interrupt.received or isinstance(error, KeyboardInterrupt)):
            raise  # a usage error's SystemExit, a real failure
        print("nobg-metrics: interrupted (SIGINT) while starting; nothing was read or written", file=sys.stderr)
        return 128 + signal.SIGINT
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return run_guarded(args)


def console(argv: list[str] | None = None) -> NoReturn:
    """The console script and ``python -m nobg_metrics``: :func:`main`, then leave (module notes)."""
    status = main(argv)
    if threading.active_count() > 1 or _process_group_up() or sys.gettrace() or sys.getprofile():
        sys.exit(status)  # (a profiler or coverage writes its data at the interpreter's exit)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: the status still tells
            stream.flush()
    atexit._run_exitfuncs()  # logging's flush, weakref finalizers (temporary folders), ...
    os._exit(status)


def _process_group_up() -> bool:
    distributed = sys.modules.get("torch.distributed")
    return bool(distributed is not None and distributed.is_available() and distributed.is_initialized())
