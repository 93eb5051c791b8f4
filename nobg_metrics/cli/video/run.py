"""``nobg-metrics eval --preset davis``: DAVIS 2017 semi-supervised J & F, as davis2017-evaluation's
``evaluation_method.py --task semi-supervised`` prints and writes them (docs/boundary_measures.md "The command").

    nobg-metrics eval --preset davis --gt DAVIS --pred OSVOS=results/osvos --pred results/premvos --out out/

Every method's results folder is scored against the layout of :mod:`nobg_metrics.io.davis`: per object
(``<seq>_<id>``) and frame, J and F by :class:`nobg_metrics.DavisJAndF` (on ``--device``, ``--batch-size`` frames
per update), then each object's mean, recall and decay (:mod:`nobg_metrics.cli.video.tables`). Written into
``--out`` all at once: ``<method>/global_results-<set>.csv`` and ``<method>/per-sequence_results-<set>.csv``
(the reference's two files, which it writes into the results folder), ``results.json`` (every number, per object
too), ``table.md`` (the methods' global numbers), unless ``--no-per-image`` ``per_frame.csv``, and unless
``--bootstrap 0`` ``stats.json`` / ``stats.md`` (sequence-level intervals, paired tests: :mod:`~nobg_metrics.cli.
video.stats`). The console
shows each method's two tables as the reference prints them (unless ``--quiet``).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nobg_metrics._version import __version__
from nobg_metrics.cli.core.dist import pick_device
from nobg_metrics.cli.core.writing import (
    OutputLock,
    json_writer,
    text_writer,
    write_atomically,
)
from nobg_metrics.cli.eval.config import (
    ConfigError,
    InputError,
    folder_problem,
    resolved,
    split_named,
)
from nobg_metrics.cli.outputs.summary_stats import markdown as markdown_stats
from nobg_metrics.cli.video.layout import read_layout
from nobg_metrics.cli.video.stats import statistics as davis_statistics
from nobg_metrics.cli.video.tables import (
    GLOBAL_COLUMNS,
    SEQUENCE_COLUMNS,
    console_block,
    db_statistics,
    global_csv_rows,
    global_row,
    markdown,
    sequence_csv_rows,
    write_csv,
)
from nobg_metrics.io.davis import DavisLayout, gt_objects, result_objects
from nobg_metrics.metrics.video.davis import DavisJAndF

_OTHER_FLAGS = ("config", "dataset_json", "method_json", "trimap", "image", "metrics", "tier", "protocol", "task",
                "categories", "prefix", "suffix")
"""Flags of the image-pair runs that --preset davis does not take (refused, not silently ignored)."""

ROW_NAMES = ("J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay")


def _methods(args: argparse.Namespace) -> dict[str, Path]:
    methods: dict[str, Path] = {}
    for value in args.pred:
        name, path = split_named(value)
        folder = Path(path)
        problem = folder_problem(folder)
        if problem is not None:
            raise ConfigError(f"--pred {folder} {problem}")
        method = name or resolved(folder).name
        if not method or "/" in method or "\\" in method or method.startswith("."):
            raise ConfigError(f"--pred {value}: the method name {method!r} names its output folder; use one without "
                              f"slashes or a leading dot (NAME=DIR)")
        if method in methods:
            raise ConfigError(f"--pred: two methods named {method!r} (name them with NAME=DIR)")
        methods[method] = folder
    if not methods:
        raise ConfigError("--preset davis needs --pred [NAME=]DIR: a results folder of <sequence>/<frame>.png")
    return methods


def _check_args(args: argparse.Namespace, layout: DavisLayout, methods: dict[str, Path]) -> None:
    given = [name for name in _OTHER_FLAGS if getattr(args, name, None) not in (None, [], False)]
    if given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise ConfigError(f"--preset davis scores DAVIS J and F from --gt and --pred only; it does not take {flags}")
    target = resolved(args.out)
    for folder in [layout.annotations, *methods.values()]:
        folder = resolved(folder)
        if target == folder or folder in target.parents:
            raise ConfigError(f"--out {args.out} lies inside the input folder {folder}; outputs never go there")
    if args.batch_size < 1:
        raise ConfigError("--batch-size must be >= 1")


def _score(layout: DavisLayout, folder: Path, device: torch.device, batch_size: int, decay_index: str,
           gt_cache: dict[str, tuple[np.ndarray, int]]) -> tuple[dict[str, tuple[float, ...]], list[list[Any]]]:
    """Per-object statistics ``{"<seq>_<id>": (JM, JR, JD, FM, FR, FD)}`` and per-frame rows of one method."""
    metric = DavisJAndF(validate_args=False).to(device)
    names: list[tuple[str, str, int]] = []
    for sequence in layout.sequences:
        if sequence.name not in gt_cache:
            gt_cache[sequence.name] = gt_objects(sequence)
        gt_ids, count = gt_cache[sequence.name]
        pred_ids = result_objects(folder, sequence, gt_ids.shape[1:], count)
        gt_t, pred_t = torch.from_numpy(gt_ids).to(device), torch.from_numpy(pred_ids).to(device)
        for obj in range(1, count + 1):  # one object at a time, each its own sequence key (a loop over objects)
            key = f"{sequence.name}_{obj}"
            names.append((key, sequence.name, obj))
            for start in range(0, gt_t.shape[0], batch_size):  # bounded memory: --batch-size frames per update
                stop = start + batch_size
                metric.update(pred_t[start:stop] == obj, gt_t[start:stop] == obj, sequence=key, frame=start)
    if not names:
        raise InputError("no object to score: every sequence's first gt frame is empty")
    frames = metric.per_frame()
    by_key: dict[str, dict[str, list[float]]] = {}
    for key, j, f in zip(frames["sequence"], frames["J"].tolist(), frames["F"].tolist()):
        values = by_key.setdefault(key, {"J": [], "F": []})
        values["J"].append(j)
        values["F"].append(f)
    per_object: dict[str, tuple[float, ...]] = {
        key: (*db_statistics(np.array(by_key[key]["J"]), decay_index),
              *db_statistics(np.array(by_key[key]["F"]), decay_index)) for key, _, _ in names}
    frame_ids = {sequence.name: sequence.ids[1:-1] for sequence in layout.sequences}
    rows: list[list[Any]] = [[seq, obj, frame_id, j, f] for key, seq, obj in names
            for frame_id, j, f in zip(frame_ids[seq], by_key[key]["J"], by_key[key]["F"])]
    return per_object, rows


def _clean(value: float) -> float | None:
    return None if not math.isfinite(value) else value


def _document(layout: DavisLayout, results: dict[str, tuple[dict[str, float], dict[str, tuple[float, ...]]]],
              decay_index: str) -> dict[str, Any]:
    return {
        "version": __version__, "preset": "davis", "task": "semi-supervised",
        "protocol": "davis2017-evaluation", "set": layout.set_name, "decay_index": decay_index,
        "sequences": [s.name for s in layout.sequences],
        "results": [{"method": method, "metrics": {k: _clean(v) for k, v in globals_.items()},
                     "per_object": {name: {k: _clean(v) for k, v in zip(ROW_NAMES, row)}
                                    for name, row in per_object.items()}}
                    for method, (globals_, per_object) in results.items()],
    }


def _per_frame_writer(rows: list[list[Any]]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["method", "sequence", "object", "frame", "J", "F"])
            writer.writerows(rows)
    return write


def run_davis(args: argparse.Namespace) -> int:
    """Score and write (module doc); errors are raised as :class:`ConfigError` / :class:`InputError`."""
    if args.gt is None:
        raise ConfigError("--preset davis needs --gt: the DAVIS root (Annotations/480p/<sequence>/*.png)")
    layout = read_layout(args.gt, args.davis_set, args.davis_resolution)
    methods = _methods(args)
    _check_args(args, layout, methods)
    try:
        device = pick_device(args.device)
    except RuntimeError as error:
        raise ConfigError(str(error)) from None
    with OutputLock(args.out):
        results: dict[str, tuple[dict[str, float], dict[str, tuple[float, ...]]]] = {}
        frame_rows: list[list[Any]] = []
        gt_cache: dict[str, tuple[np.ndarray, int]] = {}  # each sequence's gt is read once for all methods
        for method, folder in methods.items():
            per_object, rows = _score(layout, folder, device, args.batch_size, args.davis_decay, gt_cache)
            results[method] = (global_row(per_object), per_object)
            frame_rows += [[method, *row] for row in rows]
        writers = {"results.json": json_writer(_document(layout, results, args.davis_decay)),
                   "table.md": text_writer(markdown({m: g for m, (g, _) in results.items()}))}
        for method, (globals_, per_object) in results.items():
            writers[f"{method}/global_results-{layout.set_name}.csv"] = _csv(GLOBAL_COLUMNS, global_csv_rows(globals_))
            writers[f"{method}/per-sequence_results-{layout.set_name}.csv"] = _csv(SEQUENCE_COLUMNS,
                                                                                  sequence_csv_rows(per_object))
        if not args.no_per_image:
            writers["per_frame.csv"] = _per_frame_writer(frame_rows)
        if getattr(args, "bootstrap", 0) > 0:  # sequence-level intervals and paired tests (cli.video.stats)
            stats = davis_statistics(args, results, layout.set_name)
            writers["stats.json"] = json_writer(stats)
            writers["stats.md"] = text_writer(markdown_stats(stats, 3, f"DAVIS statistics ({layout.set_name})"))
        for method in methods:  # the reference's two files of each method, in a folder of its own
            (Path(args.out) / method).mkdir(exist_ok=True)
        try:
            write_atomically(args.out, writers)
        except OSError as error:
            raise InputError(f"could not write the outputs into {args.out}: {error}") from None
    if not args.quiet:
        for method, (globals_, per_object) in results.items():
            print(f"{method}:\n{console_block(layout.set_name, globals_, per_object)}")
    long = [s.name for s in layout.sequences if len(s.frames) - 2 >= 256]
    if long and args.davis_decay == "reference":
        print(f"note: {', '.join(long)} score(s) 256 frames or more: their decay is NaN, as davis2017-evaluation's "
              f"uint8 bin indices give it (--davis-decay exact: integer bins)", file=sys.stderr)
    print(f"wrote {', '.join(sorted(writers))} to {args.out}", file=sys.stderr)
    return 0


def _csv(columns: tuple[str, ...], rows: list[list[Any]]) -> Callable[[Path], None]:
    """A writer of one of the reference's CSVs into ``<method>/`` (made in the temporary folder first)."""
    def write(path: Path) -> None:
        path.parent.mkdir(exist_ok=True)
        write_csv(path, columns, rows)
    return write
