"""``nobg-metrics plot RUN``: redraw a run's curves from its saved curve data, without rescoring.

Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register the ``plot`` sub-command (its handler: ``args.handler(args)`` returns the exit status)."""
