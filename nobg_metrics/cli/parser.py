"""The ``nobg-metrics`` argument parser, importable without torch: ``--help``, ``--version`` and usage errors are
answered before the command loads torch (:mod:`nobg_metrics.cli.entry`).

Metric names are not parser choices (listing them would import the metrics): the command checks them before
scoring and names the closest valid one (:func:`nobg_metrics.cli.eval.main.check_metric_names`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nobg_metrics._version import __version__
from nobg_metrics.cli.core.names import PROTOCOLS, TASKS, TIER_NAMES
from nobg_metrics.cli.eval import cache, presets, toolkit
from nobg_metrics.cli.instances import command as instances_command
from nobg_metrics.cli.merge import command as merge
from nobg_metrics.cli.outputs import curve_data, report, tables
from nobg_metrics.cli.panoptic import command as panoptic_command
from nobg_metrics.cli.plot import command as plot_command
from nobg_metrics.cli.video import options as davis_options

DEFAULT_OUT = Path("nobg-metrics-out")


def build_parser() -> argparse.ArgumentParser:
    """The ``nobg-metrics`` parser (every flag is documented in docs/cli.md)."""
    parser = argparse.ArgumentParser(prog="nobg-metrics", description="Score folders of saliency/segmentation "
                                     "maps and alpha mattes the way benchmark tables are made.")
    parser.add_argument("--version", action="version", version=f"nobg-metrics {__version__}")
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("eval", help="score prediction folders against gt folders",
                              description="Score prediction folders. With no arguments: the bundled sample.")
    files = run.add_argument_group("inputs")
    files.add_argument("--gt", metavar="[NAME=]DIR", help="gt mask folder of one dataset (name: folder name)")
    files.add_argument("--pred", metavar="[NAME=]DIR", nargs="+", action="extend", default=[],
                       help="prediction folder(s); method name = folder name unless NAME=DIR")
    files.add_argument("--prefix", metavar="TEXT", help="prediction file names are TEXT + gt stem (+ suffix)")
    files.add_argument("--suffix", metavar="TEXT",
                       help="prediction file names end in TEXT instead of the gt's extension (e.g. _sal.png)")
    files.add_argument("--trimap", metavar="DIR", help="trimap folder (matting: metrics on the unknown region)")
    files.add_argument("--image", metavar="DIR",
                       help="RGB image folder, matched by gt stem (camouflage_context_measure)")
    files.add_argument("--config", metavar="FILE", nargs="+", action="extend", default=[], type=Path,
                       help="JSON/YAML config(s): ours, or PySODEvalToolkit's dataset + method JSON")
    files.add_argument("--dataset-json", metavar="FILE", nargs="+", action="extend", default=[], type=Path,
                       help="PySODEvalToolkit dataset JSON(s)")
    files.add_argument("--method-json", metavar="FILE", nargs="+", action="extend", default=[], type=Path,
                       help="PySODEvalToolkit method JSON(s)")
    for kind in ("datasets", "methods"):
        files.add_argument(f"--include-{kind}", metavar="NAME", nargs="+", default=None,
                           help=f"score only these {kind} of the config (PySODEvalToolkit's flag)")
        files.add_argument(f"--exclude-{kind}", metavar="NAME", nargs="+", default=None,
                           help=f"leave these {kind} of the config out (PySODEvalToolkit's flag)")
    files.add_argument("--categories", metavar="FILE", type=Path,
                       help="JSON {image stem: {grouping: group}} (AIM-500's aim_category_type.json): every metric "
                            "averaged per group too (groups.md, results.json 'groups')")
    files.add_argument("--allow-missing", action="store_true",
                       help="score what can be read; record missing/unreadable files instead of failing")
    files.add_argument("--skip-unreadable", action="store_true",
                       help="record files that cannot be decoded and score the rest (a missing file still fails)")
    what = run.add_argument_group("metrics")
    what.add_argument("--task", choices=TASKS, default=None,
                      help="sod (default), matting, or a BiRefNet task (DIS5K, COD, HRSOD, General, General-2K, "
                           "Matting) for --protocol birefnet")
    what.add_argument("--tier", choices=TIER_NAMES, default=None, help="metric set (default: expensive; sod only)")
    what.add_argument("--metrics", nargs="+", metavar="NAME",
                      help="explicit metric names instead of a tier (with a matting/BiRefNet protocol: a subset); "
                           "the names are listed in docs/cli.md (a wrong one is named with the closest valid one)")
    what.add_argument("--protocol", choices=PROTOCOLS, default=None,
                      help="sod: pysodmetrics (default: uint8, min-max stretch, reference empty-gt values) or raw "
                           "(pred / 255, no stretch, empty gt by agreement); matting: dim (default, Composition-1k) "
                           "or p3m (P3M-10k, AM-2k, AIM-500); birefnet: BiRefNet's eval_existingOnes.py table")
    where = run.add_argument_group("execution and outputs")
    where.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default ./nobg-metrics-out)")
    where.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    where.add_argument("--batch-size", type=int, default=8,
                       help="gts per batch: the methods are scored on a chunk of that many gts in turn, sharing "
                            "the gt-only work (default 8)")
    where.add_argument("--procs", default="auto", type=_procs_value,
                       help="scoring processes on CPU (auto: one per core when there are >= 64 images each)")
    where.add_argument("--workers", type=int, default=None,
                       help="decoding processes per scoring process (default: min(4, cores) / procs; "
                            "0: decode in the scoring process)")
    where.add_argument("--no-per-image", action="store_true",
                       help="skip per_image.csv; score equal-size images as one batched update")
    where.add_argument("--no-plots", action="store_true",
                       help="skip curves.png / curves.pdf (the curve data, curves.npz / curves.csv, is still saved)")
    where.add_argument("--quiet", action="store_true", help="no progress bars and no table on the console")
    # each output's own flags live beside its code (all importable without torch)
    presets.add_arguments(what)
    davis_options.add_arguments(run.add_argument_group("DAVIS (--preset davis)"))
    tables.add_arguments(run.add_argument_group("tables"))
    curve_data.add_arguments(run.add_argument_group("curves"))
    report.add_arguments(run.add_argument_group("statistics and report"))
    cache.add_arguments(run.add_argument_group("incremental runs"))
    toolkit.add_arguments(run.add_argument_group("PySODEvalToolkit's flags (docs/cli.md)"))
    plot_command.add_parser(commands)
    merge.add_parser(commands, run)  # merge's runs start from eval's defaults
    instances_command.add_parser(commands)
    panoptic_command.add_parser(commands)
    return parser


def _procs_value(text: str) -> str:
    if text == "auto" or (text.isdigit() and int(text) >= 1):
        return text
    raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, got {text!r}")
