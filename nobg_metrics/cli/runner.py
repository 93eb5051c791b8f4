"""Streaming evaluation of jobs: decode in DataLoader workers, score on the device, gather across ranks.

Memory is bounded whatever the folder size: one DataLoader streams every job's pairs (workers decode and
resize), the dataset numbers live in fixed-size metric states (one collection per job), and only the
per-image records (one short row per image) grow with the data. The batches run a dataset's methods side by
side, gt chunk by gt chunk (:mod:`~nobg_metrics.cli.batching`), so that under
:func:`~nobg_metrics.ops.gt_reuse.reuse_gt_work` the gt-only work of a chunk is done once for all methods.

Per-image records (``per_image=True``, the default): each image is scored alone in a scratch
collection — its ``compute()`` is the image's row — and the scratch states are then added into the
job's collection (``Metric.merge_state``: every state is a sum). The dataset values therefore come
from the accumulated states, exactly as one ``update`` per batch would give. With ``per_image=False``
equal-size images are grouped and each group is one batched ``update``.

Input values: decoded maps are uint8 (any level is a valid prediction or gt; ``raw`` divides by 255,
exactly in [0, 1]), so the only value the metrics' ``validate_args`` checks could reject is a trimap level
other than 0/128/255 — which the reader already refuses while decoding
(:func:`~nobg_metrics.cli.files.read_trimap`, in the loader's workers). The metrics still run with
``validate_args=True`` as the backstop: in a collection each input tensor is checked once per call, not once
per member (:mod:`nobg_metrics._shared_checks`), which is what made the checks cost 9-21 % of an update before.
Should the metrics reject an input, it is recorded against its file (``unreadable``, reason
``rejected by the metrics: ...``), never raised.

RGB images: a job whose metrics take one (:data:`~nobg_metrics.collection.IMAGE_NAMES`, CCm) reads each item's image
(:func:`~nobg_metrics.cli.files.read_image`, in the workers) and passes it as ``update(..., image=...)``
(:math:`(B, 3, H, W)` uint8); the other jobs never open it. Such a job without an image folder is a usage error;
an unlistable folder or absent images fail the run (:class:`~nobg_metrics.cli.config.InputError`) unless
``--allow-missing``, which scores the items that have one and records the others (``missing image``).
"""

from __future__ import annotations

import functools
import os
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torchmetrics import Metric, MetricCollection

from nobg_metrics.cli.batching import batches_by_gt
from nobg_metrics.cli.config import ConfigError, InputError
from nobg_metrics.cli.curve_data import collect_curves
from nobg_metrics.cli.dist import gather_objects, shard, world
from nobg_metrics.cli.files import (
    InvalidMap,
    ReadError,
    read_image,
    read_mask,
    read_prediction,
    read_trimap,
    resize_prediction,
)
from nobg_metrics.cli.jobs import Item, Job, image_problems
from nobg_metrics.cli.progress import Progress
from nobg_metrics.cli.protocols import (
    PROTOCOLS,
    job_metrics,
    protocol_metrics,
    reader_protocol,
)
from nobg_metrics.cli.signals import checkpoint, worker_signals
from nobg_metrics.collection import (
    IMAGE_NAMES,
    METRIC_NAMES,
    TIERS,
    accepted_options,
    make_collection,
    metric_class,
)
from nobg_metrics.ops.arith import divide
from nobg_metrics.ops.gt_reuse import reuse_gt_work

__all__ = ["PROTOCOLS", "RunOptions", "Scores", "build_collection", "resolve_metrics", "score"]

VALIDATE_ARGS = True
"""The metrics' value checks (NaN/inf, float ranges, trimap levels): on, once per input tensor (module notes)."""


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


def resolve_metrics(tier: str, names: list[str] | None, protocol: str = "pysodmetrics",
                    task: str = "sod") -> tuple[list[str], list[str]]:
    """``(available names, skipped names)``: a tier skips metrics this build lacks; an explicit list may not.

    The matting and BiRefNet protocols have fixed sets (:func:`~nobg_metrics.cli.protocols.protocol_metrics`);
    ``names`` then picks among them (in the protocol's order). BiRefNet's HCE is skipped (with a note) when this
    build has no HCE class.
    """
    fixed = protocol_metrics(protocol, task)
    if fixed is not None:
        if names is not None:
            outside = [n for n in names if n not in fixed]
            if outside:
                raise ConfigError(f"--metrics {outside} are not part of --protocol {protocol}; choose among {list(fixed)}")
        wanted = [n for n in fixed if names is None or n in names]
        available = [n for n in wanted if n not in _EXTRAS or _EXTRAS[n]() is not None]
        return available, [n for n in wanted if n not in available]
    if names is not None:
        unknown = [n for n in names if n not in METRIC_NAMES]
        if unknown:
            raise ConfigError(f"unknown metrics {unknown}; choose among {list(METRIC_NAMES)}")
    wanted = list(dict.fromkeys(names)) if names is not None else list(TIERS[tier])
    available = [n for n in wanted if _available(n)]
    skipped = [n for n in wanted if n not in available]
    if names is not None and skipped:
        raise ConfigError(f"metrics {skipped} are not available in this nobg_metrics build")
    if not available:
        raise ConfigError("no metric to compute")
    return available, skipped


def build_collection(names: list[str], protocol: str, device: torch.device, sync: bool = True) -> MetricCollection:
    """The protocol's collection: pysodmetrics (and birefnet) = ``normalize=True, empty_gt="reference"``; raw, dim,
    p3m = defaults; BiRefNet's own columns (:data:`_EXTRAS`) are added as they are built there.

    ``allow_host_sync``: the command has no training step for the host to run ahead of, so on a GPU the
    connectivity error labels with lists sized by the data — far less device work (no effect on CPU).
    """
    stretch = protocol in ("pysodmetrics", "birefnet")
    registered = [n for n in names if n not in _EXTRAS]
    options = {"normalize": stretch, "empty_gt": "reference" if stretch else "agreement",
               "validate_args": VALIDATE_ARGS, "allow_host_sync": True}
    accepted = set().union(*(accepted_options(name) for name in registered))
    options = {k: v for k, v in options.items() if k in accepted}
    # the scratch collection of one image never syncs
    collection = make_collection(metrics=registered, sync_on_compute=sync, **options)
    extras = {n: _EXTRAS[n]()(sync_on_compute=sync) for n in names if n in _EXTRAS}
    if extras:
        collection.add_metrics(extras)  # each its own compute group
    return collection.to(device)


def _birefnet_hce() -> type | None:
    """BiRefNet's HCE column: the DIS tool's rule (``pred_u8 > 128``, skeleton of ``gt > 128``), or ``None`` in a
    build without the HCE class."""
    try:
        from nobg_metrics.metrics.hce import HCE
    except ImportError:
        return None
    return functools.partial(HCE, protocol="dis", validate_args=VALIDATE_ARGS)


def _birefnet_mba() -> type:
    """BiRefNet's mBA column: raw bytes ``> 128`` (no stretch); an empty band is NaN, as there."""
    from nobg_metrics.metrics.mba import MBA

    return functools.partial(MBA, empty_gt="reference", validate_args=VALIDATE_ARGS)


def _birefnet_mse() -> type:
    from nobg_metrics.cli.birefnet import BinarisedGtMSE

    return functools.partial(BinarisedGtMSE, validate_args=VALIDATE_ARGS)


_EXTRAS = {"birefnet_hce": _birefnet_hce, "birefnet_mba": _birefnet_mba, "birefnet_mse": _birefnet_mse}
"""Metrics of the BiRefNet protocol built with options of their own (not collection names)."""


def _available(name: str) -> bool:
    try:
        metric_class(name)
    except AttributeError:
        return False
    return True


_KEPT_GTS = 64
"""Decoded gts a loader worker keeps (64 MiB at 1024²): more than a gt chunk of the default batch size."""


class _Pairs(Dataset):
    """Decoded ``(gt, pred, trimap, image)`` uint8 maps (``image`` :math:`(H, W, 3)` RGB, only for the jobs in
    ``image_jobs``); a decoding problem is returned, not raised."""

    def __init__(self, items: list[Item], protocol: str = "pysodmetrics", image_jobs: frozenset[int] = frozenset()
                 ) -> None:
        self.items = items
        self.protocol = reader_protocol(protocol)  # how predictions are read and resized (files.read_prediction)
        self.image_jobs = image_jobs
        self._gts: OrderedDict[Path, np.ndarray] = OrderedDict()  # the last gts read (cli.batching: methods of a
        # gt chunk follow each other, so a loader worker meets the same gt again within a few batches)

    def _read_gt(self, path: Path) -> np.ndarray:
        if path in self._gts:
            self._gts.move_to_end(path)
            return self._gts[path]
        gt = self._gts[path] = read_mask(path)
        while len(self._gts) > _KEPT_GTS:
            self._gts.popitem(last=False)
        return gt

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        item = self.items[index]
        out: dict[str, Any] = {"item": item, "error": None, "resized": False}
        read_pred = functools.partial(read_prediction, protocol=self.protocol)
        image = item.image if item.job in self.image_jobs else None
        for key, path, reader in (("gt", item.gt, self._read_gt), ("pred", item.pred, read_pred),
                                  ("trimap", item.trimap, read_trimap), ("image", image, read_image)):
            if path is None:
                out[key] = None
                continue
            try:
                out[key] = reader(path)
            except InvalidMap as error:
                out["error"] = (path.name, f"invalid {key}: {error}")
                return out
            except (ReadError, OSError) as error:
                out["error"] = (path.name, f"unreadable {key}: {error}")
                return out
        gt, pred, trimap = out["gt"], out["pred"], out["trimap"]
        if pred.shape != gt.shape:
            out["pred"], out["resized"] = resize_prediction(pred, *gt.shape, self.protocol), True
        if trimap is not None and trimap.shape != gt.shape:
            out["error"] = (item.trimap.name, f"trimap size {trimap.shape} differs from gt size {gt.shape}")
        if out["image"] is not None and out["image"].shape[:2] != gt.shape:
            out["error"] = (f"image/{image.name}", f"image size {out['image'].shape[:2]} differs from gt size {gt.shape}")
        return out


def _keep_list(samples: list) -> list:
    return samples


def _worker_init(parent: int, _: int) -> None:
    worker_signals(parent)  # never outlives the scoring process; Ctrl-C of a worker stops the run in order
    torch.set_num_threads(1)


def _rejected(job: Job, sample: dict, error: Exception) -> dict[str, str]:
    item = sample["item"]
    inputs = f"gt {item.gt.name}" + (f", trimap {item.trimap.name}" if item.trimap is not None else "")
    inputs += f", image {item.image.name}" if sample.get("image") is not None else ""
    return {"dataset": job.dataset, "method": job.method, "file": item.pred.name,
            "reason": f"rejected by the metrics ({inputs}): {error}"}


def _as_tensors(samples: list[dict], protocol: str, device: torch.device) -> tuple[torch.Tensor | None, ...]:
    """Stack equal-size decoded maps: pred (B, H, W) uint8 (raw protocol: float64 / 255), gt, trimap, image
    (B, 3, H, W) uint8 RGB (``None`` when the samples have none)."""
    pred = torch.from_numpy(np.stack([s["pred"] for s in samples])).to(device)
    gt = torch.from_numpy(np.stack([s["gt"] for s in samples])).to(device)
    trimap = None
    if samples[0]["trimap"] is not None:
        trimap = torch.from_numpy(np.stack([s["trimap"] for s in samples])).to(device)
    image = None
    if samples[0]["image"] is not None:
        image = torch.from_numpy(np.stack([s["image"] for s in samples])).permute(0, 3, 1, 2).contiguous().to(device)
    if protocol == "raw":
        pred = divide(pred.double(), 255)  # true division on every device, as numpy
    return pred, gt, trimap, image


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
        metric.merge_state(scratch[name])
        metric._update_count += 1  # merged data counts as an update (no "compute before update" warning)


def score(jobs: list[Job], options: RunOptions, device: torch.device, plan_jobs: list[Job] | None = None) -> Scores:
    """Score every job's items (this rank's share of them) and return the complete, gathered scores.

    ``jobs`` may be a subset of the plan's ``plan_jobs`` (``--cache``: the others are cached); the columns are
    those of the whole plan, so a cached run prints the same table.
    """
    # the methods of a gt chunk share its gt-only work (exact; ops.gt_reuse, cli.batching): one entry per gt of a
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
    items = [item for job in jobs for item in shard(scored[job.index], rank, size)]
    worker_init = functools.partial(_worker_init, os.getpid()) if options.workers else None
    batches = batches_by_gt(items, {job.index: job.dataset for job in jobs}, options.batch_size)
    loader = DataLoader(_Pairs(items, options.protocol, image_jobs), batch_sampler=batches,
                        num_workers=options.workers,
                        collate_fn=_keep_list, worker_init_fn=worker_init, pin_memory=device.type == "cuda")
    counts = {job.index: 0 for job in jobs}
    resized = dict(counts)
    rows: list[dict[str, Any]] = []
    unreadable: list[dict[str, str]] = list(missing_images) if rank == 0 else []  # gathered: once
    bars: dict[str, Progress] = {}  # one per dataset: its methods are scored side by side (cli.batching)
    own_totals: dict[str, int] = {}
    methods: dict[str, list[str]] = {}
    for job in jobs:
        own_totals[job.dataset] = own_totals.get(job.dataset, 0) + len(shard(scored[job.index], rank, size))
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
                pred, gt, trimap, image = _as_tensors(group, options.protocol, device)
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
                dataset_methods = methods[dataset]
                label = f"{dataset} / {dataset_methods[0]}"
                if len(dataset_methods) > 1:
                    label = f"{dataset} ({len(dataset_methods)} methods)"
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
        with warnings.catch_warnings():  # a rank (or a job) without images is harmless: sums of zero
            warnings.filterwarnings("ignore", message=".*was called before the ``update`` method.*")
            scores.values[job.index] = {name: float(members[name].compute()) for name in scores.metric_names
                                        if name in members}
            curves = collect_curves(members)
        if curves is not None:
            scores.curves[job.index] = curves
    return scores

