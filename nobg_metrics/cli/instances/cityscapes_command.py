"""The ``--cityscapes`` mode of ``nobg-metrics instances``: its flags, their checks and the printed table (no torch).

boundary-iou-api's ``tools/cityscapes_instance_evaluation.py --gt_dir GT_DIR --result_dir RESULT_DIR --iou-type
boundary [--dilation-ratio 0.005]`` is::

    nobg-metrics instances --cityscapes --gt-dir GT_DIR --result-dir RESULT_DIR --iou-type boundary [--out DIR]

The table is cityscapesScripts' ``printResults`` without colours (the tool sets ``colorized = False``), NaN for a
class without gts; ``--out DIR`` writes ``DIR/results.json``. The evaluation itself is
:mod:`nobg_metrics.cli.instances.cityscapes_run`.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

CITYSCAPES_RATIO = 0.005
"""The paper's (and the reference tool's default) band width for Cityscapes: 0.5 % of the diagonal."""
CLASS_NAMES = ("person", "rider", "car", "truck", "bus", "train", "motorcycle", "bicycle")
"""The evaluated classes in the printed order (``labels.py`` order)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--cityscapes``, ``--gt-dir`` and ``--result-dir`` to the ``instances`` parser."""
    group = parser.add_argument_group("Cityscapes (--cityscapes)")
    group.add_argument("--cityscapes", action="store_true",
                       help="Cityscapes instance AP (tools/cityscapes_instance_evaluation.py): *_instanceIds.png gts "
                            "and per-image .txt lists of mask PNGs; --dilation-ratio defaults to 0.005")
    group.add_argument("--gt-dir", type=Path, metavar="DIR",
                       help="with --cityscapes: DIR/CITY/*_gtFine_instanceIds.png")
    group.add_argument("--result-dir", type=Path, metavar="DIR",
                       help="with --cityscapes: the CITY_SEQ_FRAME*.txt files (searched recursively) and their masks")


def usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags of either mode (``None``: nothing); fills in the mode's ``--dilation-ratio``."""
    if args.cityscapes:
        if args.gt_dir is None or args.result_dir is None:
            return "--cityscapes needs --gt-dir and --result-dir"
        for flag, value in (("--gt-json-file", args.gt_json_file), ("--dt-json-file", args.dt_json_file),
                            ("--lvis", args.lvis or None), ("--max-dets", args.max_dets)):
            if value is not None:
                return f"{flag} is a COCO / LVIS flag; --cityscapes reads --gt-dir and --result-dir"
        if args.dilation_ratio is None:
            args.dilation_ratio = CITYSCAPES_RATIO
        return None
    if args.gt_dir is not None or args.result_dir is not None:
        return "--gt-dir and --result-dir need --cityscapes"
    if args.gt_json_file is None or args.dt_json_file is None:
        return "the following arguments are required: --gt-json-file, --dt-json-file (or --cityscapes)"
    return None


def _cell(value: float | None) -> str:
    return f"{math.nan if value is None else value:>15.3f}"


def table_lines(ap_per_class: Sequence[float | None], ap_50_per_class: Sequence[float | None],
                ap: float | None, ap_50: float | None) -> list[str]:
    """cityscapesScripts' ``printResults`` lines (no colours, no CSV), from per-class values in :data:`CLASS_NAMES`
    order.

    Examples:
        >>> lines = table_lines([0.5] + [None] * 7, [0.75] + [None] * 7, 0.5, 0.75)
        >>> print("\\n".join(lines[:5]))
        <BLANKLINE>
        ##################################################
        what           :             AP         AP_50%
        ##################################################
        person         :          0.500          0.750
        >>> lines[5], lines[-2]
        ('rider          :            nan            nan', 'average        :          0.500          0.750')
    """
    rule = "#" * 50
    lines = ["", rule, "{:<15}".format("what") + ":" + "{:>15}".format("AP") + "{:>15}".format("AP_50%"), rule]
    for name, value, value_50 in zip(CLASS_NAMES, ap_per_class, ap_50_per_class):
        lines.append(f"{name:<15}:" + _cell(value) + _cell(value_50))
    lines += ["-" * 50, "{:<15}".format("average") + ":" + _cell(ap) + _cell(ap_50), ""]
    return lines


def reference_averages(values: Mapping[str, object]) -> dict[str, object]:
    """The reference's ``averages`` dict (``computeAverages``) from the metric's plain values (NaN as ``None``)."""
    per_class, per_class_50 = values["ap_per_class"], values["ap_50_per_class"]
    assert isinstance(per_class, list) and isinstance(per_class_50, list)
    return {"allAp": values["ap"], "allAp50%": values["ap_50"],
            "classes": {name: {"ap": a, "ap50%": b} for name, a, b in zip(CLASS_NAMES, per_class, per_class_50)}}
