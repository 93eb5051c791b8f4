"""Statistics and the report page of a run (from the per-image records).

Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module."""


def report_writers(document: dict[str, Any], rows: list[dict[str, Any]], jobs: list,
                   args: argparse.Namespace) -> dict[str, Callable]:
    """``file name -> writer(path)`` for the statistics and the report page."""
    return {}
