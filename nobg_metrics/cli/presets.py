"""``--preset``: the metric sets and column orders of the field's benchmark tables (owner: presets/tables work).

Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module."""


def apply_preset(args: argparse.Namespace) -> None:
    """Fill ``args`` (task, protocol, metrics) from ``args.preset``; flags given explicitly win."""
