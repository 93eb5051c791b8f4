"""``nobg-metrics instances --errors tide``: TIDE's error analysis (docs/tide.md "The command") of the results file,
with the run's IoU type (``segm``: tidecv's MASK mode; ``boundary``: Boundary IoU).

The run's AP metric is built with ``errors="tide"``: its update keeps TIDE's matching statistics beside AP's
(scores, classes, per-threshold status and error codes — no pixels), taken from the IoU matrices AP's matching
computes (every detection against every gt of the image, categories crossed), so each mask is decoded once and
goes through one IoU product. :class:`TideKeeper` reads the values off the metric
(:meth:`~nobg_metrics.MeanAveragePrecision.tide_errors`) once the images are scored.

Importable without torch (the parser adds the flag).
"""

from __future__ import annotations

import argparse
from typing import Any

ERRORS = ("tide",)
MAIN = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")
SPECIAL = ("FalsePos", "FalseNeg")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--errors`` flag."""
    parser.add_argument("--errors", choices=ERRORS, default=None,
                        help="tide: TIDE's error analysis (Cls, Loc, Both, Dupe, Bkg, Miss and FalsePos / FalseNeg "
                             "as dAP points at IoU 0.5) with the run's IoU type; writes errors.json and errors.md")


class TideKeeper:
    """TIDE's values of the run (tidecv 1.0.1's ``TIDE(pos_threshold=0.5, background_threshold=0.1)``, 100
    detections per image, ``evaluate_range`` over COCO's thresholds), read off the AP metric."""

    def __init__(self, iou_type: str) -> None:
        self.iou_type = iou_type

    def document(self, metric: Any) -> dict[str, Any]:
        """``errors.json`` from the run's metric (built with ``errors="tide"``): ``{iou type: {"ap", "main",
        "special", "counts", "thresholds", "ap_per_threshold", "ap_range"}}`` (dAP and AP in points, 0-100), or
        ``{iou type: None}`` when no image was scored."""
        if int(metric.image_count) == 0:
            return {self.iou_type: None}
        values = metric.tide_errors()

        def plain(value: Any) -> Any:
            if isinstance(value, dict):
                return {key: plain(item) for key, item in value.items()}
            return value.item() if value.ndim == 0 else value.tolist()

        return {self.iou_type: {key: plain(values[key]) for key in ("ap", "main", "special", "counts", "thresholds",
                                                                    "ap_per_threshold", "ap_range")}}


def markdown(document: dict[str, Any]) -> str:
    """``errors.md``: one row per IoU type, dAP points."""
    lines = ["# TIDE errors", "", "dAP points at IoU 0.5 (tidecv 1.0.1's rules; docs/tide.md).", "",
             "| iou type | AP@0.5 | " + " | ".join(MAIN + SPECIAL) + " | AP 0.5:0.95 |",
             "|---" * (len(MAIN) + len(SPECIAL) + 3) + "|"]
    for iou_type, values in document.items():
        if values is None:
            lines.append(f"| {iou_type} | - |" + " - |" * (len(MAIN) + len(SPECIAL) + 1))
            continue
        cells = [values["main"][name] for name in MAIN] + [values["special"][name] for name in SPECIAL]
        lines.append(f"| {iou_type} | {values['ap']:.2f} | " + " | ".join(f"{c:.2f}" for c in cells)
                     + f" | {values['ap_range']:.2f} |")
    return "\n".join(lines) + "\n"
