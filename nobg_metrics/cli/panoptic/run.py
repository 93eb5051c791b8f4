"""The ``panoptic`` command's run: score every image (in ``--procs`` processes), print the table, write results.json.

The scores accumulate in :class:`~nobg_metrics.metrics.panoptic.PanopticQuality`, as a training loop's would: each
batch of images read from the PNGs adds its per-category statistics
(:func:`~nobg_metrics.functional.panoptic.panoptic_quality.batch_statistics`, int64) to a worker's share through
``merge_state``, the shares are merged into one metric, and its ``compute()`` gives the values. Integer states make
any split over processes and batches give the same values.

With ``--bootstrap`` / ``--compare`` each image is scored as a batch of its own and its per-category statistics
are kept as a row of the statistics table (:mod:`nobg_metrics.cli.panoptic.stats`; no pixels are kept); the
metric's states, and so every value, are the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from nobg_metrics._panoptic_batch import SegmentBatch
from nobg_metrics.allocator import tune_cpu_allocator
from nobg_metrics.cli.core.launch import usable_cores
from nobg_metrics.cli.core.progress import Progress
from nobg_metrics.cli.core.signals import worker_signals
from nobg_metrics.cli.core.writing import OutputLock, json_writer, text_writer, write_atomically
from nobg_metrics.cli.eval.config import ConfigError, InputError
from nobg_metrics.cli.outputs import structured_report
from nobg_metrics.cli.outputs.summary_stats import markdown
from nobg_metrics.cli.panoptic import stats as panoptic_stats
from nobg_metrics.functional.panoptic.panoptic_quality import batch_statistics, iou_sums
from nobg_metrics.functional.panoptic.segments import STAT_NAMES, stack_batches
from nobg_metrics.io.panoptic import (
    PanopticTask,
    categories_of,
    check_areas,
    check_folder,
    image_batch,
    load_json,
    matched_annotations,
)
from nobg_metrics.metrics.panoptic import PanopticQuality

CHUNK = 8
"""Images a worker scores per task (the progress bar moves by chunks)."""

BATCH_PIXELS = 1 << 20
"""At most this many pixels (3 images of 640x480; larger ones alone) are scored as one batch (larger batches
measured no faster: the passes over the maps are memory-bound)."""

_TASK: PanopticTask | None = None
_PER_IMAGE = False


def _init_worker(task: PanopticTask, parent: int, per_image: bool = False) -> None:
    global _TASK, _PER_IMAGE
    _TASK, _PER_IMAGE = task, per_image
    worker_signals(parent)  # SIGTERM (the pool's end) kills at once; SIGINT goes to the command
    torch.set_num_threads(1)


def new_metric(task: PanopticTask) -> PanopticQuality:
    """An empty :class:`PanopticQuality` for ``task``: its categories in the JSON's order (the order the images are
    read with), IoU type and band width."""
    things = [category for category, thing in zip(task.category_ids, task.isthing) if thing]
    stuffs = [category for category, thing in zip(task.category_ids, task.isthing) if not thing]
    try:
        return PanopticQuality(things, stuffs, iou_type=task.iou_type, dilation_ratio=task.dilation_ratio,
                               output="panopticapi", rules="panopticapi", category_order=task.category_ids)
    except (TypeError, ValueError) as error:  # e.g. a category id outside [-2^62, 2^62)
        raise InputError(f"the gt JSON's categories cannot be scored: {error}") from None


def add_statistics(metric: PanopticQuality, statistics: dict[str, torch.Tensor]) -> None:
    """Add one batch's per-category statistics (:data:`STAT_NAMES` -> :math:`(C,)` int64) to ``metric``'s states."""
    metric.merge_state({name: statistics[name] if name in STAT_NAMES else torch.zeros_like(cast(torch.Tensor, state))
                        for name, state in metric.metric_state.items()})


def _score(items: list[tuple[dict, dict]], task: PanopticTask, metric: PanopticQuality,
           rows: list[tuple[int, torch.Tensor]] | None = None) -> list[Any]:
    """Add the statistics of ``items`` to ``metric``; return the image ids that hold a segment with the marker id.

    The images of one size are scored as one batch (up to :data:`BATCH_PIXELS` pixels), as the metric class
    scores a batch: the per-op costs are paid once per batch. With ``rows``, each image is a batch of its own and
    ``(its index in items, its (C, 4) float64 statistics)`` is appended (:data:`~nobg_metrics.cli.panoptic.stats.
    FIELDS`).
    """
    collided = []
    groups: dict[tuple[int, ...], list[tuple[dict, dict, SegmentBatch, int]]] = {}
    for position, (gt_ann, pred_ann) in enumerate(items):
        batch, collision = image_batch(gt_ann, pred_ann, task)
        groups.setdefault(tuple(batch.gt.shape[1:]), []).append((gt_ann, pred_ann, batch, position))
        if collision:
            collided.append(gt_ann.get("image_id"))
    for (height, width), group in groups.items():
        step = 1 if rows is not None else max(1, BATCH_PIXELS // (height * width))
        for start in range(0, len(group), step):
            part = group[start:start + step]
            batch = stack_batches([entry[2] for entry in part])
            stats = batch_statistics(batch, len(task.category_ids), task.iou_type, task.dilation_ratio,
                                     with_areas=True)
            for index, (gt_ann, pred_ann, _, _) in enumerate(part):
                check_areas(stats["gt_area"][index].tolist(), gt_ann, "gt", True)
                check_areas(stats["pred_area"][index].tolist(), pred_ann, "pred", False)
            add_statistics(metric, stats)
            if rows is not None:
                rows.append((part[0][3], _image_row(stats)))
    return collided


def _image_row(stats: dict[str, torch.Tensor]) -> torch.Tensor:
    """One image's :math:`(C, 4)` float64 statistics (TP, FP, FN, IoU sum) from its batch of one."""
    iou = iou_sums(stats["iou_sum_high"], stats["iou_sum_low"])
    return torch.stack([stats["true_positives"].double(), stats["false_positives"].double(),
                        stats["false_negatives"].double(), iou], dim=1)


def _table(rows: list[tuple[int, torch.Tensor]], count: int) -> Any:
    """The rows as an :math:`(count, C, 4)` numpy array in the items' order."""
    ordered = sorted(rows, key=lambda row: row[0])
    assert [row[0] for row in ordered] == list(range(count))
    return torch.stack([row[1] for row in ordered]).numpy()


def _score_in_worker(items: list[tuple[dict, dict]]) -> tuple[dict[str, Any], list[Any], Any] | InputError:
    """The states of a :class:`PanopticQuality` share that scored ``items``, as Python ints (pickled back: tensors
    would travel through shared memory, slower for a few hundred ints), the ids of :func:`_score`, and with
    per-image statistics their :math:`(len(items), C, 4)` numpy table (else ``None``)."""
    assert _TASK is not None
    try:
        share = new_metric(_TASK)
        rows: list[tuple[int, torch.Tensor]] | None = [] if _PER_IMAGE else None
        collided = _score(items, _TASK, share, rows)
        table = None if rows is None else _table(rows, len(items))
        return ({name: cast(torch.Tensor, state).tolist() for name, state in share.metric_state.items()}, collided,
                table)
    except InputError as error:  # sent back as a value: the pool would print a traceback for an exception
        return error


def _chunks(pairs: list[tuple[dict, dict]]) -> Iterator[list[tuple[dict, dict]]]:
    for start in range(0, len(pairs), CHUNK):
        yield pairs[start:start + CHUNK]


def score_all(pairs: list[tuple[dict, dict]], task: PanopticTask, procs: int, progress: Progress,
              per_image: bool = False) -> tuple[PanopticQuality, list[Any], Any]:
    """The metric that scored every pair (the shares of ``procs`` processes merged: fork on Linux; no torch op has
    run in this one yet), the image ids that hold a segment with the marker id, and with ``per_image`` the
    :math:`(n, C, 4)` per-image statistics in the pairs' order (else ``None``)."""
    metric = new_metric(task)
    collided: list[Any] = []
    tables: list[Any] = []
    if procs <= 1:
        torch.set_num_threads(1)
        for chunk in _chunks(pairs):
            rows: list[tuple[int, torch.Tensor]] | None = [] if per_image else None
            collided.extend(_score(chunk, task, metric, rows))
            if rows is not None:
                tables.append(_table(rows, len(chunk)))
            progress.update(len(chunk))
        return metric, collided, np.concatenate(tables) if per_image else None
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    context = multiprocessing.get_context(method)
    with context.Pool(procs, initializer=_init_worker, initargs=(task, os.getpid(), per_image)) as pool:
        chunks = list(_chunks(pairs))
        for chunk, result in zip(chunks, pool.imap(_score_in_worker, chunks)):
            if isinstance(result, InputError):
                raise result
            metric.merge_state({name: torch.tensor(state, dtype=torch.int64) for name, state in result[0].items()})
            collided.extend(result[1])
            if per_image:
                tables.append(result[2])
            progress.update(len(chunk))
    return metric, collided, np.concatenate(tables) if per_image else None


def results_dict(metric: PanopticQuality, task: PanopticTask) -> dict[str, Any]:
    """panopticapi's result dict (``All`` / ``Things`` / ``Stuff`` / ``per_class``, the classes in ``task``'s
    order: the metric's): its ``compute()`` (``output="panopticapi"``)."""
    values = metric.compute()
    assert isinstance(values, dict) and list(values["per_class"]) == list(task.category_ids)
    return values


def coco_table(results: dict[str, Any]) -> str:
    """The table panopticapi's ``pq_compute`` prints."""
    lines = ["{:10s}| {:>5s}  {:>5s}  {:>5s} {:>5s}".format("", "PQ", "SQ", "RQ", "N"), "-" * (10 + 7 * 4)]
    for name in ("All", "Things", "Stuff"):
        row = results[name]
        lines.append("{:10s}| {:5.1f}  {:5.1f}  {:5.1f} {:5d}".format(
            name, 100 * row["pq"], 100 * row["sq"], 100 * row["rq"], row["n"]))
    return "\n".join(lines)


def cityscapes_table(results: dict[str, Any], names: dict[int, str]) -> str:
    """The tables cityscapesScripts' ``evalPanopticSemanticLabeling.py`` prints (per category, then the means)."""
    lines = ["{:14s}| {:>5s}  {:>5s}  {:>5s}".format("Category", "PQ", "SQ", "RQ")]
    for label in sorted(results["per_class"]):
        row = results["per_class"][label]
        lines.append("{:14s}| {:5.1f}  {:5.1f}  {:5.1f}".format(
            names[label], 100 * row["pq"], 100 * row["sq"], 100 * row["rq"]))
    lines += ["-" * 41, "{:14s}| {:>5s}  {:>5s}  {:>5s} {:>5s}".format("", "PQ", "SQ", "RQ", "N")]
    for name in ("All", "Things", "Stuff"):
        row = results[name]
        lines.append("{:14s}| {:5.1f}  {:5.1f}  {:5.1f} {:5d}".format(
            name, 100 * row["pq"], 100 * row["sq"], 100 * row["rq"], row["n"]))
    return "\n".join(lines)


def _check_out(out: Path, folders: list[Path]) -> None:
    target = Path(os.path.realpath(out))
    for folder in folders:
        folder = Path(os.path.realpath(folder))
        if target == folder or folder in target.parents:
            raise ConfigError(f"--out {out} lies inside the input folder {folder}; outputs never go there")


def run(args: argparse.Namespace, gt_json: Path, pred_json: Path, gt_folder: Path, pred_folder: Path) -> int:
    """Score, print, write (see :mod:`nobg_metrics.cli.panoptic.command`)."""
    tune_cpu_allocator()
    ratio = args.dilation_ratio if args.dilation_ratio is not None else (0.005 if args.cityscapes else 0.02)
    if not ratio >= 0:
        raise ConfigError(f"--dilation-ratio must be >= 0, got {ratio}")
    gt, pred = load_json(gt_json, "gt JSON"), load_json(pred_json, "prediction JSON")
    ids, isthing, names = categories_of(gt, gt_json)
    check_folder(gt_folder, "ground truth")
    check_folder(pred_folder, "predicted")
    pairs = matched_annotations(gt, pred)
    if not pairs:
        raise InputError(f"gt JSON {gt_json} lists no annotations: nothing to score")
    task = PanopticTask(gt_folder, pred_folder, ids, isthing, names, args.iou_type, float(ratio),
                        args.boundary_id_collision)
    procs = args.procs or max(1, min(usable_cores(), len(pairs) // 2))
    per_image = panoptic_stats.wanted(args) or structured_report.wanted(args)  # the report's worst images
    compared = panoptic_stats.compare_folder(args)
    lock = None
    if args.out is not None:
        _check_out(args.out, [gt_folder, pred_folder, *([compared] if compared else [])])
        lock = OutputLock(args.out).__enter__()
    try:
        progress = Progress(f"panoptic {args.iou_type}", len(pairs), enabled=not args.quiet)
        metric, collided, per_image_table = score_all(pairs, task, procs, progress, per_image)
        progress.close()
        results = results_dict(metric, task)
        if collided:
            policy = ("scored as boundary-iou-api scores them" if task.collision == "reference"
                      else "every band taken from its own segment")
            print(f"note: {len(collided)} image(s) hold a segment whose id is {task.marker_id} (max category id + 1, "
                  f"boundary-iou-api's BOUNDARY_ID), e.g. image_id {collided[0]!r}: {policy} "
                  f"(--boundary-id-collision {task.collision}; docs/panoptic.md)", file=sys.stderr)
        table = cityscapes_table(results, dict(zip(ids, names))) if args.cityscapes else coco_table(results)
        print(table)
        statistics = panoptic_stats.wanted(args)
        writers = {} if not statistics else _stats_writers(args, gt, task, procs, pred_json, results, per_image_table)
        if args.out is not None:
            document = {key: results[key] for key in ("All", "Things", "Stuff")}
            document["per_class"] = {str(k): v for k, v in results["per_class"].items()}
            write_atomically(args.out, {"results.json": json_writer(document), **writers})
            if structured_report.wanted(args):  # after the other files: the page reads them
                from nobg_metrics.cli.outputs.structured_report_data import panoptic_report

                panoptic_report(args, per_image_table, pairs, task, gt)
    finally:
        if lock is not None:
            lock.__exit__(None, None, None)
    return 0


def _stats_writers(args: argparse.Namespace, gt: dict[str, Any], task: PanopticTask, procs: int, pred_json: Path,
                   results: dict[str, Any], table: Any) -> dict[str, Any]:
    """Score ``--compare`` (if given) the same way; ``stats.json`` / ``stats.md`` writers (printed without --out)."""
    labels = [pred_json.name]
    tables, scored = {labels[0]: table}, {labels[0]: results}
    if args.compare is not None:
        other = dataclasses.replace(task, pred_folder=cast(Path, panoptic_stats.compare_folder(args)))
        pairs = matched_annotations(gt, load_json(args.compare, "--compare prediction JSON"))
        progress = Progress(f"panoptic {args.iou_type} (--compare)", len(pairs), enabled=not args.quiet)
        metric, _, other_table = score_all(pairs, other, procs, progress, True)
        progress.close()
        label = args.compare.name if args.compare.name != labels[0] else str(args.compare)
        tables[label], scored[label] = other_table, results_dict(metric, other)
    stats = panoptic_stats.statistics(args, tables, scored, task.isthing, task.category_ids)
    text = markdown(stats, title=f"Panoptic statistics ({args.iou_type})")
    if args.out is None:
        print(text)
    return {"stats.json": json_writer(stats), "stats.md": text_writer(text)}
