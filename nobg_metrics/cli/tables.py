"""The benchmark tables of a run (table.md, table.tex, ...), from ``results.json``'s document.

Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module."""


def table_writers(document: dict[str, Any], args: argparse.Namespace) -> dict[str, Callable]:
    """``file name -> writer(path)`` for every table of the run."""
    from nobg_metrics.cli.outputs import latex_table, markdown_table, text_writer

    return {"table.md": text_writer(markdown_table(document)), "table.tex": text_writer(latex_table(document))}
