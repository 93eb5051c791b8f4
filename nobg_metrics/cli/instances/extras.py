"""What ``nobg-metrics instances`` adds beside AP when asked: ``--errors tide`` (errors.json / errors.md,
:mod:`~nobg_metrics.cli.instances.errors`) and ``--bootstrap`` / ``--compare`` (stats.json / stats.md,
:mod:`~nobg_metrics.cli.instances.stats`).

:class:`Extras` is fed every batch the AP metric is fed, in the same loop over images: it keeps, per scored image,
its id and its number of gts (to place the metric's per-gt records on images). TIDE's statistics are the AP
metric's own state (built with ``errors="tide"``), read at the end. Without these flags it keeps nothing and
writes nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from nobg_metrics.cli.core.writing import json_writer, text_writer
from nobg_metrics.cli.instances import errors as instance_errors
from nobg_metrics.cli.instances import stats as instance_stats
from nobg_metrics.io.coco.annotations import GroundTruth

STATE_NAMES = ("det_scores", "det_labels", "det_keys", "det_outcomes", "gt_labels", "gt_counted")


def kept_statistics(metric: Any, image_ids: list[int], gt_counts: list[int], units: Tensor) -> dict[str, Tensor]:
    """The metric's per-detection / per-gt records (on the CPU) with each record's image index among ``units``
    (the annotation file's image ids, sorted)."""
    states: dict[str, Tensor] = {}
    for name in STATE_NAMES:
        value = getattr(metric, name)
        if isinstance(value, list):
            value = torch.cat(value) if value else None
        if value is None:  # nothing recorded: an empty record of the layout
            dtype, shape = metric._list_layouts[name]
            value = torch.zeros((0, *shape), dtype=dtype)
        states[name] = value.cpu()
    states["det_image"] = torch.searchsorted(units, states["det_keys"][:, 0].contiguous())
    gt_images = torch.searchsorted(units, torch.tensor(image_ids, dtype=torch.int64))
    states["gt_image"] = torch.repeat_interleave(gt_images, torch.tensor(gt_counts, dtype=torch.int64))
    return states


class Extras:
    """The statistics and errors of one run (module notes)."""

    def __init__(self, args: argparse.Namespace, gt: GroundTruth) -> None:
        self.args, self.gt = args, gt
        self.errors = instance_errors.TideKeeper(args.iou_type) if getattr(args, "errors", None) == "tide" else None
        self.stats = instance_stats.wanted(args)
        self.image_ids: list[int] = []
        self.gt_counts: list[int] = []

    def update(self, preds: list[dict[str, Tensor]], targets: list[dict[str, Any]]) -> None:
        """One batch, as the AP metric's ``update`` got it."""
        if self.stats:
            self.image_ids += [int(t["image_id"]) for t in targets]
            self.gt_counts += [int(t["labels"].shape[0]) for t in targets]

    def writers(self, metric: Any, values: dict[str, Any],
                score: Callable[[Path], tuple[Any, dict[str, Any], list[int], list[int]]]) -> dict[str, Any]:
        """The files to write beside results.json (printed on stdout without ``--out``); ``score(path)`` scores
        ``--compare``'s results file as this run was scored: ``(metric, values, image ids, gt counts)``."""
        writers: dict[str, Any] = {}
        texts = []
        if self.errors is not None:
            document = self.errors.document(metric)
            text = instance_errors.markdown(document)
            writers.update({"errors.json": json_writer(document), "errors.md": text_writer(text)})
            texts.append(text)
        if self.stats:
            units = torch.tensor(sorted(image.id for image in self.gt.images), dtype=torch.int64)
            keys = [key for key in values if key.startswith(("map", "mar")) and not key.endswith("_per_class")
                    and key not in ("map_rare", "map_common", "map_frequent")]
            prefix = f"{self.args.iou_type}/"
            label_a = str(self.args.dt_json_file)
            kept = {label_a: kept_statistics(metric, self.image_ids, self.gt_counts, units)}
            estimates = {label_a: {prefix + key: float(values[key]) for key in keys}}
            if getattr(self.args, "compare", None) is not None:
                other, other_values, ids, counts = score(self.args.compare)
                label_b = str(self.args.compare)
                if label_b == label_a:
                    label_b += " (compared)"
                kept[label_b] = kept_statistics(other, ids, counts, units)
                estimates[label_b] = {prefix + key: float(other_values[key]) for key in keys}
            # numpy: the statistics' writer, loaded when they are asked for
            from nobg_metrics.cli.outputs.summary_stats import markdown

            document = instance_stats.statistics(self.args, kept, estimates, units.shape[0], metric.options)
            text = markdown(document, title=f"Instance AP statistics ({self.args.iou_type})")
            writers.update({"stats.json": json_writer(document), "stats.md": text_writer(text)})
            texts.append(text)
        if self.args.out is None and texts:
            print("\n".join(texts))
        return writers
