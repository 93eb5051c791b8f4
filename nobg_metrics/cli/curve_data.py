"""The curves of a run: collected from the metrics after scoring, saved, and drawn.

Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module."""


def collect_curves(members: dict[str, Any]) -> dict[str, list[float]] | None:
    """A job's curves from its (synced) metrics ``name -> Metric``; None when no metric has any."""
    from nobg_metrics.cli.runner import _synced_curves

    for name in ("f_measure_max", "f_measure_mean", "f_measure_adaptive"):
        if name in members:
            return _synced_curves(members[name])
    return None


def curve_writers(jobs: list, scores: Any, args: argparse.Namespace) -> dict[str, Callable]:
    """``file name -> writer(path)`` for the curve files of the run (notes on stderr when none are drawn)."""
    from nobg_metrics.cli.plots import draw_curves, have_matplotlib

    writers: dict[str, Callable] = {}
    plotted = not args.no_plots and have_matplotlib() and bool(scores.curves)
    if plotted:
        writers["curves.png"] = lambda path: draw_curves(jobs, scores.curves, [path])
        writers["curves.pdf"] = lambda path: draw_curves(jobs, scores.curves, [path])
    if not args.no_plots and not plotted:
        why = "matplotlib is not installed (pip install 'nobg_metrics[plot]')" if not have_matplotlib() else \
            "no F-measure curves among the metrics"
        print(f"note: curves not drawn: {why}", file=sys.stderr)
    return writers
