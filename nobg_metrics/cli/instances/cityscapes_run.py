"""The evaluation of ``nobg-metrics instances --cityscapes`` (the flags:
:mod:`nobg_metrics.cli.instances.cityscapes_command`).

Steps: find the gts and match each with its prediction list (:mod:`.cityscapes_files`); per image, read the gt map
and the listed masks of evaluated classes and pass them to :class:`nobg_metrics.CityscapesInstanceAP` in one
``update``; print the reference's table; write ``--out/results.json`` atomically (the reference's result structure
beside the flat values; NaN written as ``null``).

Unlike the reference tool, nothing is cached between runs: it keeps ``RESULT_DIR/gtInstances.json`` and reuses it
silently unless ``--clear-results`` is given (a stale cache after a gt change), and it reads its iou type and ratio
from the flags only — the module's ``IOU_TYPE`` / ``DILATION_RATIO`` environment variables are overwritten by them
(``DILATION_RATIO`` is kept as a string, which fails in ``mask_to_boundary`` when the module runs on its own). Both
are reported as notes when present.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from typing import Any

import torch
from torch import Tensor

from nobg_metrics._version import __version__
from nobg_metrics.cli.core.dist import pick_device
from nobg_metrics.cli.core.progress import Progress
from nobg_metrics.cli.core.signals import checkpoint
from nobg_metrics.cli.core.statuses import EXIT_OK
from nobg_metrics.cli.core.writing import OutputLock, json_writer, write_atomically
from nobg_metrics.cli.eval.config import ConfigError
from nobg_metrics.cli.instances.cityscapes_command import (
    CLASS_NAMES,
    reference_averages,
    table_lines,
)
from nobg_metrics.functional.instance.cityscapes_matching import OVERLAPS
from nobg_metrics.io.cityscapes import (
    EVAL_LABEL_IDS,
    ImagePair,
    find_gts,
    match_predictions,
    read_gt,
    read_masks,
    read_prediction_list,
)
from nobg_metrics.io.errors import InputError
from nobg_metrics.metrics.instance.cityscapes_instances import CityscapesInstanceAP


def image_inputs(pair: ImagePair, device: torch.device, counts: dict[str, int]) -> tuple[dict[str, Tensor], Tensor]:
    """One image's prediction dict and gt map for ``CityscapesInstanceAP.update``; ``counts`` tallies the masks."""
    gt = read_gt(pair.gt)
    listed = read_prediction_list(pair.predictions)
    evaluated = [p for p in listed if p.label in EVAL_LABEL_IDS]  # the reference opens only these
    counts["listed"] += len(listed)
    counts["other_classes"] += len(listed) - len(evaluated)
    masks = torch.from_numpy(read_masks(evaluated, gt.shape))
    pred = {"masks": masks.to(device),
            "scores": torch.tensor([p.score for p in evaluated], dtype=torch.float64, device=device),
            "labels": torch.tensor([p.label for p in evaluated], dtype=torch.int64, device=device)}
    return pred, torch.from_numpy(gt).to(device)


def _plain(value: Tensor) -> Any:
    """A tensor as JSON values: NaN -> ``None``."""
    def clean(item: Any) -> Any:
        if isinstance(item, list):
            return [clean(x) for x in item]
        return None if isinstance(item, float) and math.isnan(item) else item
    return clean(value.tolist())


def _notes(args: argparse.Namespace) -> list[str]:
    notes = []
    for name in ("IOU_TYPE", "DILATION_RATIO"):
        if name in os.environ:
            notes.append(f"{name}={os.environ[name]!r} is set: ignored, as the reference tool ignores it (its "
                         f"--iou-type / --dilation-ratio overwrite it); the flags are {args.iou_type}, "
                         f"{args.dilation_ratio}")
    cache = args.result_dir / "gtInstances.json"
    if cache.exists():
        notes.append(f"{cache} exists: the reference tool would reuse that gt cache unless --clear-results; the gts "
                     f"are read from the PNGs here")
    return notes


def results_document(args: argparse.Namespace, values: dict[str, Tensor], lines: list[str], images: int,
                     counts: dict[str, int], notes: list[str]) -> dict[str, Any]:
    """``results.json``: flags, counts, flat values, per class, and the reference's ``evaluateImgLists`` dict."""
    plain = {key: _plain(value) for key, value in values.items()}
    return {
        "command": "instances", "protocol": "cityscapes", "version": __version__,
        "gt_dir": str(args.gt_dir), "result_dir": str(args.result_dir), "iou_type": args.iou_type,
        "dilation_ratio": args.dilation_ratio, "min_region_size": 100, "images": images, "predictions": counts,
        "results": {"ap": plain["ap"], "ap_50": plain["ap_50"]},
        "per_class": [{"label_id": label, "name": name, "ap": a, "ap_50": b} for label, name, a, b in
                      zip(plain["classes"], CLASS_NAMES, plain["ap_per_class"], plain["ap_50_per_class"])],
        "reference": {"averages": reference_averages(plain), "overlaps": list(OVERLAPS), "minRegionSizes": [100],
                      "instLabels": list(CLASS_NAMES), "resultApMatrix": [plain["ap_matrix"]]},
        "table": lines, "notes": notes,
    }


def run(args: argparse.Namespace) -> int:
    """Evaluate; errors are raised (``nobg_metrics.cli.instances.run.run_guarded`` turns them into exit statuses)."""
    try:
        device = pick_device(args.device)
    except RuntimeError as error:
        raise ConfigError(str(error)) from None
    with OutputLock(args.out) if args.out is not None else contextlib.nullcontext():
        pairs = match_predictions(find_gts(args.gt_dir), args.result_dir)
        notes = _notes(args)
        if not args.quiet:
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
        metric = CityscapesInstanceAP(iou_type=args.iou_type, dilation_ratio=args.dilation_ratio,
                                      validate_args=False)  # the files' values are checked as they are read
        metric = metric.to(device)
        counts = {"listed": 0, "other_classes": 0, "empty": 0, "evaluated": 0}
        progress = Progress(f"instances cityscapes {args.iou_type}", len(pairs), enabled=not args.quiet)
        for pair in pairs:  # one update per image: each reads its own files
            checkpoint()
            pred, gt = image_inputs(pair, device, counts)
            metric.update([pred], [gt])
            progress.update()
        progress.close()
        values = metric.compute()
        kept = int(metric.prediction_count.sum())  # evaluated classes and non-empty masks
        counts["empty"], counts["evaluated"] = counts["listed"] - counts["other_classes"] - kept, kept
        plain = {key: _plain(value) for key, value in values.items()}
        lines = table_lines(plain["ap_per_class"], plain["ap_50_per_class"], plain["ap"], plain["ap_50"])
        print("\n".join(lines))
        if args.out is not None:
            document = results_document(args, values, lines, len(pairs), counts, notes)
            try:
                write_atomically(args.out, {"results.json": json_writer(document)})
            except OSError as error:
                raise InputError(f"could not write {args.out}/results.json: {error}") from None
            if not args.quiet:
                print(f"wrote results.json to {args.out}", file=sys.stderr)
    return EXIT_OK
