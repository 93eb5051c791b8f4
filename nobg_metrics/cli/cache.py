"""Incremental runs: each job's results cached by the content of its files; only new jobs are scored.

Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse
from typing import Any


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module."""


class JobCache:
    """The cache of one run (``--cache DIR``); a no-op without one."""

    def __init__(self, args: argparse.Namespace, options: Any) -> None:
        self.args, self.options = args, options

    def lookup(self, jobs: list) -> dict[int, Any]:
        """``job index -> cached result`` for the jobs whose files and options are unchanged."""
        return {}

    def fill(self, scores: Any, hits: dict[int, Any], jobs: list) -> None:
        """Put the cached results of ``hits`` into ``scores`` (as if they had been scored now)."""

    def store(self, scores: Any, jobs: list, scored: list) -> None:
        """Save the results of the freshly ``scored`` jobs (rank 0)."""
