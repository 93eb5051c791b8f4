"""``nobg-metrics panoptic``: PQ / Boundary PQ of COCO panoptic PNG + JSON predictions (docs/panoptic.md).

boundary-iou-api's ``tools/coco_panoptic_evaluation.py`` (on panopticapi's ``pq_compute``) and, with
``--cityscapes``, its ``tools/cityscapes_panoptic_evaluation.py`` (the layout cityscapesScripts'
``createPanopticImgs.py`` writes, ratio 0.005)::

    nobg-metrics panoptic --gt-json-file panoptic_val2017.json --pred-json-file preds.json \\
        --gt-folder panoptic_val2017 --pred-folder preds --iou-type boundary --out results/

Prints the table panopticapi prints (Cityscapes: its per-category table first) on stdout, writes
``--out/results.json`` (panopticapi's result dict: ``All`` / ``Things`` / ``Stuff`` -> ``pq``, ``sq``, ``rq``,
``n``; ``per_class`` keyed by category id) atomically; with ``--bootstrap N`` / ``--compare PRED_JSON`` also
``stats.json`` / ``stats.md`` (image-level intervals, a paired test: :mod:`nobg_metrics.cli.panoptic.stats`).
Images are scored by ``--procs`` processes (default: one per core, as pq_compute), each summing exact integer
statistics, so the numbers do not depend on the split.

Exit status: 0 scored; 1 missing or inconsistent inputs (the message names the image and the segment); 2 a bad
command line or ``--out``. Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from nobg_metrics.cli.core.errors import ConfigError
from nobg_metrics.cli.core.guard import guarded
from nobg_metrics.cli.core.startup import collector_paused
from nobg_metrics.cli.outputs import structured_report
from nobg_metrics.cli.panoptic.stats import add_arguments as stats_arguments

CITYSCAPES_JSON = "cityscapes_panoptic_val.json"
"""The JSON name cityscapesScripts writes for the val split (gt under ``gtFine``, predictions under ``results``)."""


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register the ``panoptic`` sub-command (its handler: ``args.handler(args)`` returns the exit status)."""
    parser = commands.add_parser(
        "panoptic", help="PQ / Boundary PQ of COCO panoptic predictions (panopticapi, boundary-iou-api)",
        description="Panoptic quality of COCO panoptic PNG + JSON predictions as panopticapi's pq_compute (segm) "
                    "and boundary-iou-api's Boundary PQ (boundary) compute it.")
    parser.add_argument("--gt-json-file", "--gt_json_file", type=Path, help="gt JSON (COCO panoptic format)")
    parser.add_argument("--pred-json-file", "--pred_json_file", "--prediction-json-file", type=Path,
                        help="prediction JSON (COCO panoptic results format)")
    parser.add_argument("--gt-folder", "--gt_folder", type=Path, default=None,
                        help="gt PNG folder (default: the gt JSON's path without .json)")
    parser.add_argument("--pred-folder", "--pred_folder", "--prediction-folder", type=Path, default=None,
                        help="prediction PNG folder (default: the prediction JSON's path without .json)")
    parser.add_argument("--iou-type", choices=("segm", "boundary"), default="segm",
                        help="segm: mask IoU (PQ); boundary: min(mask IoU, boundary IoU) (Boundary PQ)")
    parser.add_argument("--dilation-ratio", type=float, default=None,
                        help="boundary band width as a fraction of the image diagonal (default 0.02; 0.005 with "
                             "--cityscapes)")
    parser.add_argument("--cityscapes", action="store_true",
                        help="Cityscapes panoptic: ratio 0.005, its per-category table, and the JSON paths "
                             f"$CITYSCAPES_DATASET/gtFine/{CITYSCAPES_JSON} and $CITYSCAPES_RESULTS/{CITYSCAPES_JSON} "
                             "when not given")
    parser.add_argument("--boundary-id-collision", choices=("reference", "exact"), default="reference",
                        help="a segment whose id is max category id + 1 (the reference's interior marker): "
                             "reference (default) scores it as boundary-iou-api does; exact takes every band "
                             "from its own segment (docs/panoptic.md)")
    parser.add_argument("--out", type=Path, default=None, help="write OUT/results.json (default: print only)")
    parser.add_argument("--procs", type=_positive, default=None,
                        help="scoring processes (default: one per core when there are at least 2 images each)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (the table is still printed)")
    stats_arguments(parser)
    structured_report.add_arguments(parser)
    parser.set_defaults(handler=run_panoptic)


def _positive(text: str) -> int:
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")


def resolve_paths(args: argparse.Namespace) -> tuple[Path, Path, Path, Path]:
    """``(gt JSON, pred JSON, gt folder, pred folder)`` with the defaults of the module notes."""

    gt_json, pred_json = args.gt_json_file, args.pred_json_file
    if args.cityscapes:
        dataset = Path(os.environ.get("CITYSCAPES_DATASET", "."))
        gt_json = gt_json or dataset / "gtFine" / CITYSCAPES_JSON
        results = Path(os.environ["CITYSCAPES_RESULTS"]) if "CITYSCAPES_RESULTS" in os.environ else dataset / "results"
        pred_json = pred_json or results / CITYSCAPES_JSON
    if gt_json is None or pred_json is None:
        raise ConfigError("panoptic needs --gt-json-file and --pred-json-file (or --cityscapes with "
                          "$CITYSCAPES_DATASET set)")
    return (gt_json, pred_json, args.gt_folder or default_folder(gt_json),
            args.pred_folder or default_folder(pred_json))


def default_folder(json_path: Path) -> Path:
    """panopticapi's default PNG folder: the JSON's path without ``.json``."""
    return json_path.with_suffix("") if json_path.suffix == ".json" else json_path


def run_panoptic(args: argparse.Namespace) -> int:
    """The ``panoptic`` command; returns the exit status (messages on stderr, :mod:`~nobg_metrics.cli.core.guard`)."""

    def run() -> int:
        with collector_paused():  # torch, numpy, Pillow: only once a run is asked
            from nobg_metrics.cli.panoptic.run import run as score_files

        return score_files(args, *resolve_paths(args))

    return guarded(run)
