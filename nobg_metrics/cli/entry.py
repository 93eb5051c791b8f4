"""The console script ``nobg-metrics`` (and ``python -m nobg_metrics``): parse the arguments, import the command, run
it.

The parser (:mod:`nobg_metrics.cli.parser`) needs no torch: ``--help``, ``--version`` and usage errors answer at
once (measured: docs/cli.md).

Importing the command loads torch (seconds). A Ctrl-C (SIGINT) in that time would print a traceback from
inside torch's import; here it ends the start-up quietly with the exit status of an interrupted run
(``128 + SIGINT``), before anything was read or written. Once the command runs, its own handlers
(:mod:`nobg_metrics.cli.signals`) take over.
"""

from __future__ import annotations

import signal
import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command with ``argv`` (``sys.argv[1:]`` by default); returns its exit status."""
    try:
        # every import of the command inside the Ctrl-C guard: an interrupt while they load ends quietly
        from nobg_metrics.cli.parser import build_parser
        from nobg_metrics.cli.startup import deferred_imports

        parser = build_parser()
        args = parser.parse_args(argv)  # --help, --version and usage errors end here, before torch loads
        if args.command is None:
            parser.print_help()
            return 0
        if args.command != "eval":  # plot, merge: their own handlers (no scoring)
            return args.handler(args)
        with deferred_imports():  # scipy.signal, which torchmetrics imports for nothing the command uses
            from nobg_metrics.cli.main import run_guarded  # torch (seconds): only once the arguments ask for a run
    except KeyboardInterrupt:
        print("nobg-metrics: interrupted (SIGINT) while starting; nothing was read or written", file=sys.stderr)
        return 128 + signal.SIGINT
    return run_guarded(args)
