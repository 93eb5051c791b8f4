"""Streaming evaluation of jobs: decode in DataLoader workers, score on the device, gather across ranks.

Memory is bounded whatever the folder size: one DataLoader streams every job's pairs (workers decode and
resize), the dataset numbers live in fixed-size metric states (one collection per job), and only the
per-image records (one short row per image) grow with the data. The batches run a dataset's methods side by
side, gt chunk by gt chunk (:mod:`~nobg_metrics.cli.eval.batching`), so that under
:func:`~nobg_metrics.ops.gt_reuse.reuse_gt_work` the gt-only work of a chunk is done once for all methods.

Per-image records (``per_image=True``, the default): each image is scored alone in a scratch
collection — its ``compute()`` is the image's row — and the scratch states are then added into the
job's collection (``Metric.merge_state``: every state is a sum). The dataset values therefore come
from the accumulated states, exactly as one ``update`` per batch would give. With ``per_image=False``
equal-size images are grouped and each group is one batched ``update``.

Input values: decoded maps are uint8 (any level is a valid prediction or gt; ``raw`` divides by 255,
exactly in [0, 1]), so the only value the metrics' ``validate_args`` checks could reject is a trimap level
other than 0/128/255 — which the reader already refuses while decoding
(:func:`~nobg_metrics.io.images.read_trimap`, in the loader's workers). The metrics still run with
``validate_args=True`` as the backstop: in a collection each input tensor is checked once per call, not once
per member (:mod:`nobg_metrics._shared_checks`), which is what made the checks cost 9-21 % of an update before.
Should the metrics reject an input, it is recorded against its file (``unreadable``, reason
``rejected by the metrics: ...``), never raised.

RGB images: a job whose metrics take one (:data:`~nobg_metrics.collection.IMAGE_NAMES`, CCm) reads each item's image
(:func:`~nobg_metrics.io.images.read_image`, in the workers) and passes it as ``update(..., image=...)``
(:math:`(B, 3, H, W)` uint8); the other jobs never open it. Such a job without an image folder is a usage error;
an unlistable folder or absent images fail the run (:class:`~nobg_metrics.cli.eval.config.InputError`) unless
``--allow-missing``, which scores the items that have one and records the others (``missing image``).

Decoding lives in :mod:`~nobg_metrics.cli.eval.loading`, the metric set and its collection in
:mod:`~nobg_metrics.cli.eval.metric_sets`.
"""

from __future__ import annotations

import functools
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import DataLoader
from torchmetrics import Metric, MetricCollection

from nobg_metrics.cli.core.dist import gather_objects, shard, world
from nobg_metrics.cli.core.names import PROTOCOLS
from nobg_metrics.cli.core.progress import Progress
from nobg_metrics.cli.core.signals import checkpoint
from nobg_metrics.cli.eval.batching import batches_by_gt
from nobg_metrics.cli.eval.config import ConfigError, InputError
from nobg_metrics.cli.eval.curve_collection import collect_curves
from nobg_metrics.cli.eval.jobs import Job, image_problems
from nobg_metrics.cli.eval.loading import Pairs, as_tensors, keep_list, worker_init
from nobg_metrics.cli.eval.metric_sets import build_collection, resolve_metrics
from nobg_metrics.cli.eval.protocols import job_metrics
from nobg_metrics.collection import IMAGE_NAMES
from nobg_metrics.metrics import torchmetrics_api as api
from nobg_metrics.ops.gt_reuse import reuse_gt_work

__all__ = ["PROTOCOLS", "RunOptions", "Scores", "build_collection", "resolve_metrics", "score"]

@dataclass
class RunOptions:
    """How to score (the ``eval`` flags that are not about which files)."""

    tier: str = "expensive"
    metrics: list[str] | None = None
    protocol: str = "pysodmetrics"
    task: str = "sod"
    batch_size: int = 8
    workers: int = 2
    allow_missing: bool = False
    per_image: bool = True
    progress: bool = True


@dataclass
class Scores:
    """Everything the outputs need, complete on every rank."""

    metric_names: list[str]
    skipped_metrics: list[str]
    higher_is_better: dict[str, bool | None]
    values: dict[int, dict[str, float]] = field(default_factory=dict)
    images: dict[int, int] = field(default_factory=dict)
    resized: dict[int, int] = field(default_factory=dict)
    per_image: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[dict[str, str]] = field(default_factory=list)
    curves: dict[int, dict[str, list[float]]] = field(default_factory=dict)


def _rejected(job: Job, sample: dict, error: Exception) -> dict[str, str]:
    item = sample["item"]
    inputs = f"gt {item.gt.name}" + (f", trimap {item.trimap.name}" if item.trimap is not None else "")
    inputs += f", image {item.image.name}" if sample.get("image") is not None else ""
    return {"dataset": job.dataset, "method": job.method, "file": item.pred.name,
            "reason": f"rejected by the metrics ({inputs}): {error}"}


def _update(collection: MetricCollection, pred: torch.Tensor, gt: torch.Tensor, trimap: torch.Tensor | None,
            image: torch.Tensor | None = None) -> None:
    """One collection update; ``trimap`` / ``image`` only when there is one (the members that take them)."""
    extra = {key: value for key, value in (("trimap", trimap), ("image", image)) if value is not None}
    collection.update(pred, gt, **extra)


def _image_jobs(jobs: list[Job], per_job: dict[int, list[str]], allow_missing: bool) -> tuple[frozenset[int], list]:
    """The jobs whose metrics take the RGB image, and the ``missing image`` records (``--allow-missing``).

    Raises:
        ConfigError: such a job's dataset has no image folder.
        InputError: its image folder cannot be listed, or (without ``allow_missing``) images are absent.
    """
    needing = [job for job in jobs if any(name in IMAGE_NAMES for name in per_job[job.index])]
    missing: list[dict[str, str]] = []
    for job in needing:
        names = [name for name in per_job[job.index] if name in IMAGE_NAMES]
        problems = image_problems(job)
        if not job.has_image:
            raise ConfigError(f"{', '.join(names)} reads the RGB images: {problems[0]}")
        if job.image_problem is not None:
            raise InputError(f"{', '.join(names)} reads the RGB images; {job.image_problem}")
        if problems and not allow_missing:
            shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
            raise InputError(f"{job.dataset} / {job.method}: {', '.join(names)} reads the RGB images: {shown} "
                             f"(use --allow-missing to score the images that exist)")
        missing += [{"dataset": job.dataset, "method": job.method, "file": name, "reason": "missing image"}
                    for name in job.missing_images]
    return frozenset(job.index for job in needing), missing


def _merge(target: dict[str, Metric], scratch: dict[str, Metric]) -> None:
    """Add the scratch states into the job's metrics (all states are sums)."""
    for name, metric in target.items():
        metric.merge_state(scratch[name])  # merged data counts as an update (no "compute before update" warning)
        if metric.update_count == 0:  # a share with no item: its empty states still count as scored
            api.count_update(metric, 1)


def score(jobs: list[Job], options: RunOptions, device: torch.device, plan_jobs: list[Job] | None = None) -> Scores:
    """Score every job's items (this rank's share of them) and return the complete, gathered scores.

    ``jobs`` may be a subset of the plan's ``plan_jobs`` (``--cache``: the others are cached); the columns are
    those of the whole plan, so a cached run prints the same table.
    """
    # the methods of a gt chunk share its gt-only work (exact; ops.gt_reuse, cli.eval.batching): one entry per gt of a
    # chunk (per-image mode keeps single gts) for the weighted F-measure, the one metric using it
    with reuse_gt_work(capacity=max(options.batch_size, 1) + 2):
        return _score(jobs, options, device, plan_jobs)


def _score(jobs: list[Job], options: RunOptions, device: torch.device, plan_jobs: list[Job] | None) -> Scores:
    names, skipped = resolve_metrics(options.tier, options.metrics, options.protocol, options.task)
    rank, size = world()
    by_index = {job.index: job for job in jobs}  # keyed by index: ``jobs`` may be a subset of the plan
    per_job = {job.index: job_metrics(names, options.protocol, job.dataset, job.has_trimap) for job in jobs}
    plan_jobs = jobs if plan_jobs is None else plan_jobs
    if options.protocol != "birefnet" and plan_jobs:  # a column no job scores (P3M's trimap metrics) is left out
        columns = [job_metrics(names, options.protocol, job.dataset, job.has_trimap) for job in plan_jobs]
        names = [n for n in names if any(n in job_names for job_names in columns)]
        if not names:
            raise ConfigError("no metric to compute: the trimap metrics of --protocol p3m need a trimap folder")
    image_jobs, missing_images = _image_jobs(jobs, per_job, options.allow_missing)
    collections = {index: build_collection(job_names, options.protocol, device) for index, job_names in per_job.items()}
    higher: dict[str, bool | None] = {}
    for collection in collections.values():
        higher.update({n: getattr(m, "higher_is_better", None) for n, m in collection.items(keep_base=True,
                                                                                              copy_state=False)})
    scores = Scores(names, skipped, {n: higher.get(n) for n in names})
    scratches: dict[tuple[str, ...], MetricCollection] = {}  # one per metric set (a job may score fewer names)
    for job_names in per_job.values():
        if tuple(job_names) not in scratches:
            scratches[tuple(job_names)] = build_collection(job_names, options.protocol, device, sync=False)
    targets = {index: dict(c.items(keep_base=True, copy_state=False)) for index, c in collections.items()}
    scored = {job.index: [item for item in job.items if job.index not in image_jobs or item.image is not None]
              for job in jobs}  # --allow-missing: an image job's items without image are recorded, not scored
    own = {job.index: shard(scored[job.index], rank, size) for job in jobs}  # this rank's share of each job
    items = [item for job in jobs for item in own[job.index]]
    init = functools.partial(worker_init, os.getpid()) if options.workers else None
    batches = batches_by_gt(items, {job.index: job.dataset for job in jobs}, options.batch_size)
    loader = DataLoader(Pairs(items, options.protocol, image_jobs), batch_sampler=batches,
                        num_workers=options.workers,
                        collate_fn=keep_list, worker_init_fn=init, pin_memory=device.type == "cuda")
    counts = {job.index: 0 for job in jobs}
    resized = dict(counts)
    rows: list[dict[str, Any]] = []
    unreadable: list[dict[str, str]] = list(missing_images) if rank == 0 else []  # gathered: once
    bars: dict[str, Progress] = {}  # one per dataset: its methods are scored side by side (cli.eval.batching)
    own_totals: dict[str, int] = {}
    methods: dict[str, list[str]] = {}
    for job in jobs:
        own_totals[job.dataset] = own_totals.get(job.dataset, 0) + len(own[job.index])
        methods.setdefault(job.dataset, []).append(job.method)
    iterator = iter(loader)
    try:
        checkpoint()  # a signal during the workers' start (an at-fork callback) was dropped by Python
        for samples in iterator:
            checkpoint()
            batch_start = time.perf_counter()  # a bar opened after this batch counts its rate from here
            groups: dict[tuple, list[dict]] = {}
            for sample in samples:
                job = by_index[sample["item"].job]
                if sample["error"] is not None:
                    file, reason = sample["error"]
                    unreadable.append({"dataset": job.dataset, "method": job.method, "file": file, "reason": reason})
                    continue
                key = (job.index, sample["gt"].shape, sample["trimap"] is not None, sample["image"] is not None)
                groups.setdefault(key, []).append(sample)
            for (job_index, *_), group in groups.items():
                job = by_index[job_index]
                pred, gt, trimap, image = as_tensors(group, options.protocol, device)
                if options.per_image:
                    kept, values = [], []
                    job_names = per_job[job_index]
                    scratch = scratches[tuple(job_names)]
                    scratch_metrics = dict(scratch.items(keep_base=True, copy_state=False))
                    for i, sample in enumerate(group):
                        scratch.reset()
                        try:
                            _update(scratch, pred[i:i + 1], gt[i:i + 1], None if trimap is None else trimap[i:i + 1],
                                    None if image is None else image[i:i + 1])
                        except ValueError as error:  # an input the metrics' checks reject: recorded by name
                            unreadable.append(_rejected(job, sample, error))
                            continue
                        computed = scratch.compute()
                        values.append(torch.stack([computed[n].double().reshape(()) for n in job_names]))
                        _merge(targets[job_index], scratch_metrics)
                        kept.append(sample)
                    table = torch.stack(values).cpu().tolist() if values else []
                    for sample, row in zip(kept, table):
                        rows.append({"dataset": job.dataset, "method": job.method, "image": sample["item"].name,
                                     "resized": sample["resized"], **dict.fromkeys(names),
                                     **dict(zip(job_names, row))})
                else:
                    kept = _batched_update(collections[job_index], pred, gt, trimap, image, group, job, unreadable)
                counts[job_index] += len(kept)
                resized[job_index] += sum(bool(s["resized"]) for s in kept)
            dataset = by_index[samples[0]["item"].job].dataset  # a batch holds one job's items
            if dataset not in bars:
                for other in bars.values():
                    other.close()
                named = methods[dataset]
                label = f"{dataset} / {named[0]}" if len(named) == 1 else f"{dataset} ({len(named)} methods)"
                bars = {dataset: Progress(label, own_totals[dataset], enabled=options.progress and rank == 0,
                                          start=batch_start)}
            bars[dataset].update(len(samples))
    finally:  # interrupted or failed: stop the decoding workers now, not when the iterator is collected
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if callable(shutdown):
            shutdown()
    for bar in bars.values():
        bar.close()
    return _finish(jobs, collections, scores, counts, resized, rows, unreadable, options)


def _batched_update(collection: MetricCollection, pred: torch.Tensor, gt: torch.Tensor, trimap: torch.Tensor | None,
                    image: torch.Tensor | None, group: list[dict], job: Job, unreadable: list) -> list[dict]:
    """One batched update of a group; when the metrics reject it (updates are all-or-nothing), one image at
    a time, recording the rejected ones. Returns the samples that were scored."""
    try:
        _update(collection, pred, gt, trimap, image)
        return group
    except ValueError:
        pass
    kept = []
    for i, sample in enumerate(group):
        try:
            _update(collection, pred[i:i + 1], gt[i:i + 1], None if trimap is None else trimap[i:i + 1],
                    None if image is None else image[i:i + 1])
        except ValueError as error:
            unreadable.append(_rejected(job, sample, error))
            continue
        kept.append(sample)
    return kept


def _finish(jobs: list[Job], collections: dict[int, MetricCollection], scores: Scores, counts: dict[int, int],
            resized: dict[int, int], rows: list, unreadable: list, options: RunOptions) -> Scores:
    """Gather problems and records from all ranks; compute (and sync) the dataset values unless failing."""
    gathered = gather_objects((counts, resized, rows, unreadable))
    for part_counts, part_resized, part_rows, part_unreadable in gathered:
        for index in part_counts:
            scores.images[index] = scores.images.get(index, 0) + part_counts[index]
            scores.resized[index] = scores.resized.get(index, 0) + part_resized[index]
        scores.per_image.extend(part_rows)
        scores.unreadable.extend(part_unreadable)
    order = {(job.dataset, job.method, item.name): (job.index, i) for job in jobs for i, item in enumerate(job.items)}
    scores.per_image.sort(key=lambda r: order[(r["dataset"], r["method"], r["image"])])
    if scores.unreadable and not options.allow_missing:
        return scores  # the run fails: nothing to compute (every rank decides the same, from gathered data)
    for job in jobs:
        members = dict(collections[job.index].items(keep_base=True, copy_state=False))
        members = {**{n: members[n] for n in scores.metric_names if n in members}, **members}  # the run's order
        with warnings.catch_warnings():  # a rank (or a job) without images is harmless: sums of zero
            warnings.filterwarnings("ignore", message=".*was called before the ``update`` method.*")
            scores.values[job.index] = {name: float(members[name].compute()) for name in scores.metric_names
                                        if name in members}
            curves = collect_curves(members)
        if curves is not None:
            scores.curves[job.index] = curves
    return scores

