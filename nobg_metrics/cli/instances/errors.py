"""``nobg-metrics instances --errors tide``: TIDE's error analysis (docs/tide.md "The command") of the results file,
with the run's IoU type (``segm``: tidecv's MASK mode; ``boundary``: Boundary IoU).

:class:`TideKeeper` is fed the same ``(preds, targets)`` batches as the AP metric, in the same loop over images
(one decoding of each mask, shared by both); per batch it keeps TIDE's matching statistics
(:class:`~nobg_metrics.functional.instance.tide_match.TideStatistics`: scores, classes, per-threshold status and
error codes — no pixels) and at the end merges them in image order and computes the values
(``tide_error_values``). TIDE needs IoUs AP does not compute (every detection against every gt, across
categories, for Cls errors; its own top-100 detections over all classes), so each batch's masks go through one
more IoU product — on the masks already decoded, never read from the file again.

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
    """TIDE's statistics of the batches seen (tidecv 1.0.1's ``TIDE(pos_threshold=0.5, background_threshold=0.1)``,
    100 detections per image, ``evaluate_range`` over COCO's thresholds)."""

    def __init__(self, iou_type: str, dilation_ratio: float) -> None:
        self.iou_type, self.dilation_ratio = iou_type, dilation_ratio
        self.parts: list[Any] = []

    def update(self, preds: list[dict[str, Any]], targets: list[dict[str, Any]]) -> None:
        """Add a batch of images (the AP metric's ``update`` inputs), in image order."""
        # torch and TIDE: loaded once a run asks for the errors (the parser imports this module for its flag)
        from nobg_metrics.functional.instance.tide import COCO_THRESHOLDS, tide_error_statistics

        def dense(masks: Any) -> Any:  # the CPU path hands row bands over: TIDE reads the masks
            return masks.dense() if hasattr(masks, "dense") else masks

        if preds:
            self.parts.append(tide_error_statistics(
                [{**p, "masks": dense(p["masks"])} for p in preds],
                [{"masks": dense(t["masks"]), "labels": t["labels"], "iscrowd": t["iscrowd"]} for t in targets],
                iou_type=self.iou_type,  # type: ignore[arg-type]  # the command's choices: segm, boundary
                thresholds=COCO_THRESHOLDS, pos_threshold=0.5, background_threshold=0.1,
                max_detections=100, dilation_ratio=self.dilation_ratio))

    def document(self) -> dict[str, Any]:
        """``errors.json``: ``{iou type: {"ap", "main", "special", "counts", "thresholds", "ap_per_threshold",
        "ap_range"}}`` (dAP and AP in points, 0-100)."""
        # (the same: torch, for the run only)
        from nobg_metrics.functional.instance.tide import tide_error_values
        from nobg_metrics.functional.instance.tide_match import merge_statistics

        if not self.parts:
            return {self.iou_type: None}
        values = tide_error_values(merge_statistics(self.parts))

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
