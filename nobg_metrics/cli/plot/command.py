"""``nobg-metrics plot RUN_DIR``: redraw a run's curves from its saved curve data, without rescoring.

Reads ``RUN_DIR/curves.npz`` (else ``curves.csv``; :mod:`nobg_metrics.cli.outputs.curve_data`) and writes
``curves.png`` and ``curves.pdf`` (``--format``) into ``--out`` (default: ``RUN_DIR``), each through a
temporary file renamed into place. Needs numpy and matplotlib, never torch or the metrics: a redraw with
another style takes about as long as matplotlib takes to draw.

Exit status (as ``eval``'s, :mod:`nobg_metrics.cli.eval.main`): 0 drawn; 1 no or unreadable curve data, or no curve of
the requested kinds; 2 a usage problem (a wrong ``--highlight`` name, a style file error, no matplotlib).

Importable without torch (the argument parser uses it).

Examples:
    ``nobg-metrics plot results --out paper --plot-style style.yaml --highlight Ours --kinds pr f --pr-xlim 0.6 1``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nobg_metrics.cli.core.errors import closest
from nobg_metrics.cli.outputs.curve_data import CurveDataError, add_drawing_arguments, load_curves
from nobg_metrics.cli.outputs.plots import figure_writers, have_matplotlib, write_replacing

EXIT_OK, EXIT_INPUTS, EXIT_USAGE = 0, 1, 2
"""The statuses of :mod:`nobg_metrics.cli.eval.main` (not imported from there: it loads torch)."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register the ``plot`` sub-command (its handler: ``args.handler(args)`` returns the exit status)."""
    parser = commands.add_parser(
        "plot", help="redraw a run's curves from its curves.npz / curves.csv (no scoring)",
        description="Redraw curves.png / curves.pdf of an eval output folder from its saved curve data, "
                    "with another style, highlight, zoom or choice of kinds; nothing is scored again.")
    parser.add_argument("run", metavar="RUN_DIR", type=Path, help="an `nobg-metrics eval` output folder")
    parser.add_argument("--out", type=Path, default=None, help="folder for the figures (default: RUN_DIR)")
    parser.add_argument("--format", nargs="+", choices=("png", "pdf", "svg"), default=["png", "pdf"],
                        help="figure formats (default: png pdf)")
    add_drawing_arguments(parser, "--kinds")
    parser.set_defaults(handler=run_plot)


def run_plot(args: argparse.Namespace) -> int:
    """The ``plot`` command; returns the exit status (messages on stderr)."""
    if not have_matplotlib():
        print("nobg-metrics: error: plot needs matplotlib (pip install 'nobg_metrics[plot]')", file=sys.stderr)
        return EXIT_USAGE
    try:
        entries = load_curves(args.run)
    except CurveDataError as error:
        print(f"nobg-metrics: failed: {error}", file=sys.stderr)
        return EXIT_INPUTS
    methods = list(dict.fromkeys(e["method"] for e in entries))
    style_highlight = list(args.plot_style.highlight) if args.plot_style is not None else []
    for name in list(args.highlight) + style_highlight:
        if name not in methods:
            print(f"nobg-metrics: error: --highlight {name!r}: no such method in {args.run}{closest(name, methods)} "
                  f"(methods: {', '.join(methods)})", file=sys.stderr)
            return EXIT_USAGE
    writers = figure_writers(entries, args, args.format, note=lambda text: print(f"note: {text}", file=sys.stderr))
    if not writers:
        print(f"nobg-metrics: failed: none of the kinds {' '.join(args.curve_kinds or ())} is in the curve data of "
              f"{args.run}", file=sys.stderr)
        return EXIT_INPUTS
    out = args.out if args.out is not None else args.run
    try:
        out.mkdir(parents=True, exist_ok=True)
        for fmt, writer in writers.items():
            write_replacing(out / f"curves.{fmt}", writer)
    except OSError as error:
        print(f"nobg-metrics: failed: could not write into {out}: {error}", file=sys.stderr)
        return EXIT_INPUTS
    print(f"wrote {', '.join(f'curves.{fmt}' for fmt in writers)} to {out}", file=sys.stderr)
    return EXIT_OK
