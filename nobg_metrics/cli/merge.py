"""``nobg-metrics merge RUN RUN ... --out DIR``: one run's outputs from several runs' records.

Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register the ``merge`` sub-command (its handler: ``args.handler(args)`` returns the exit status)."""
