"""``nobg-metrics instances``: COCO / LVIS mask AP and Boundary AP of a results file (docs/instance_segmentation.md).

The offline evaluation of boundary-iou-api's ``tools/coco_instance_evaluation.py`` and
``tools/lvis_instance_evaluation.py``, with their flags::

    nobg-metrics instances --gt-json-file instances_val2017.json --dt-json-file coco_instances_results.json \\
        --iou-type boundary --out results/

A benchmark's layout is a ``--preset`` of the subcommand that scores its kind of input (docs/cli.md "Subcommands"):
``--preset coco`` (the default), ``--preset lvis`` (``--lvis``) and ``--preset cityscapes --gt-dir DIR --result-dir
DIR`` (``--cityscapes``), the Cityscapes evaluation of ``tools/cityscapes_instance_evaluation.py``
(:mod:`nobg_metrics.cli.instances.cityscapes_command`).

Exit status: 0 evaluated; 1 an input file that cannot be used (missing, not JSON, a missing key, a detection of an
image not in the annotation file, a mask of another size than its image, a malformed RLE or polygon: the message
names the file, the entry and its image id; with ``--strict`` also an empty results file or a detection of a
category not in the annotation file, otherwise warnings), or outputs that could not be written; 2 a bad command
line; 3 an internal error (with a traceback); 4 ``--out`` in use by another run; 128 + N stopped by signal N.

Importable without torch (the argument parser uses it); the evaluation itself is :mod:`nobg_metrics.cli.instances.run`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from nobg_metrics.cli.core.startup import collector_paused
from nobg_metrics.cli.core.statuses import EXIT_USAGE
from nobg_metrics.cli.core.threads import leave_a_core, share_cores
from nobg_metrics.cli.instances import cityscapes_command
from nobg_metrics.cli.instances import errors as instance_errors
from nobg_metrics.cli.instances import stats as instance_stats
from nobg_metrics.cli.outputs import structured_report


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def _positive(text: str) -> int:
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")


PRESETS = ("coco", "lvis", "cityscapes")
"""``--preset`` of ``instances``: the layouts it reads (``--lvis`` and ``--cityscapes`` are their flags)."""


def preset_problem(args: argparse.Namespace) -> str | None:
    """Apply ``--preset`` to the flags it stands for; what is wrong when it contradicts them (``None``: nothing)."""
    preset = getattr(args, "preset", None)
    if preset is None:
        return None
    others = [flag for flag, given in (("--lvis", args.lvis), ("--cityscapes", args.cityscapes)) if given
              and flag != f"--{preset}"]
    if others:
        return f"--preset {preset} contradicts {' and '.join(others)}"
    args.lvis, args.cityscapes = preset == "lvis", preset == "cityscapes"
    return None


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register the ``instances`` sub-command (its handler: ``args.handler(args)`` returns the exit status)."""
    parser = commands.add_parser(
        "instances", help="COCO / LVIS mask AP or Boundary AP of a detectron2-style results file",
        description="Evaluate instance segmentation results (COCO / LVIS JSON) with mask IoU (segm) or Boundary "
                    "IoU (boundary), as boundary-iou-api's tools/coco_instance_evaluation.py and "
                    "tools/lvis_instance_evaluation.py do; prints the reference's summary.")
    parser.add_argument("--gt-json-file", type=Path, metavar="GT.json",
                        help="COCO or LVIS annotation file (images, annotations, categories)")
    parser.add_argument("--dt-json-file", type=Path, metavar="DT.json",
                        help="results file: a list of {image_id, category_id, score, segmentation[, bbox]}")
    parser.add_argument("--iou-type", choices=("segm", "boundary"), default="segm",
                        help="segm: mask IoU; boundary: min(mask IoU, Boundary IoU) (default: segm)")
    parser.add_argument("--dilation-ratio", type=_ratio, default=None,
                        help="boundary width as a fraction of the image diagonal (default 0.02; the paper uses "
                             "0.02 for COCO / LVIS, 0.005 for Cityscapes, --cityscapes' default)")
    parser.add_argument("--preset", choices=PRESETS, default=None,
                        help="the benchmark's layout: coco (default), lvis (= --lvis) or cityscapes (= --cityscapes)")
    parser.add_argument("--lvis", action="store_true",
                        help="LVIS's evaluation (lvis_instance_evaluation.py): 300 detections per image, "
                             "federated filters, APr/APc/APf")
    parser.add_argument("--max-dets", type=_positive, default=None,
                        help="with --lvis: detections kept per image (default 300; lvis_instance_evaluation.py's "
                             "--max-dets)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write DIR/results.json (every value, per class too); default: print only")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where masks are scored (default: CUDA when available)")
    parser.add_argument("--strict", action="store_true",
                        help="a results file the reference would not score as given (no detections, detections of "
                             "categories not in the annotation file) is an error (exit 1) instead of a warning")
    parser.add_argument("--workers", choices=("auto", "0", "1"), default="auto",
                        help="processes that read the files and decode the masks ahead of the scoring: 1 (auto: "
                             "where two cores or more are usable, on Linux) or 0 (the scoring process reads)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar, notes or warnings on stderr (warnings stay in results.json)")
    cityscapes_command.add_arguments(parser)
    instance_errors.add_arguments(parser)
    instance_stats.add_arguments(parser)
    structured_report.add_arguments(parser)
    parser.set_defaults(handler=run_instances)


def run_instances(args: argparse.Namespace) -> int:
    """The ``instances`` command; returns the exit status (messages on stderr, the summary on stdout)."""
    problem = preset_problem(args) or cityscapes_command.usage_problem(args) or instance_stats.usage_problem(args)
    if problem is not None:
        print(f"nobg-metrics instances: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.cityscapes:
        with collector_paused():  # torch: once a run is asked for
            from nobg_metrics.cli.instances.cityscapes_run import run as run_cityscapes
            from nobg_metrics.cli.instances.run import run_guarded

        return run_guarded(args, run_cityscapes)
    if args.dilation_ratio is None:
        args.dilation_ratio = 0.02
    if args.max_dets is not None and not args.lvis:
        print("nobg-metrics: error: --max-dets applies to --lvis (COCO's are 1, 10, 100 per image and category)",
              file=sys.stderr)
        return EXIT_USAGE
    from nobg_metrics.cli.instances import reader_process, shared_scoring  # numpy: only once a run is asked for

    reading: reader_process.ForkedReading | shared_scoring.ForkedScoring | None = None
    kind = reader_process.helper_kind(args)
    if kind == "share":  # forked before torch is loaded: it reads the files while torch loads, then scores too
        share_cores(2)  # (each process its half of the cores: threads would wait for one that shares a core)
        reading = shared_scoring.ForkedScoring(args)
    elif kind == "read":
        leave_a_core()  # (the reading process's core)
        reading = reader_process.ForkedReading(args)
    try:
        with collector_paused():  # torch and the metric: only once a run is asked for
            from nobg_metrics.cli.instances.run import run_guarded
    except BaseException:
        if reading is not None:
            reading.close()
        raise
    return run_guarded(args, reading=reading)
