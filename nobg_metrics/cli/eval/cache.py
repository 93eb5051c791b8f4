"""Incremental runs (``eval --cache DIR``): each job's results cached by the content of its files; only new or
changed jobs are scored (docs/incremental.md).

The key of a job (dataset x method) is a BLAKE2b digest of everything its numbers depend on: the package and torch
versions, the device type, the protocol, task and every scoring option of
:class:`~nobg_metrics.cli.eval.runner.RunOptions` (not the decoding workers, progress bars or ``--allow-missing``;
``--batch-size`` only with ``--no-per-image``), the job's metric names, its dataset and method names, and per item its
name and the BLAKE2b digest of the bytes of every file it names (gt, prediction, trimap; the RGB image only for metrics
that read it). A job whose key has an entry is not scored: its values, image counts, per-image rows, curves and
unreadable entries come from the entry (``missing`` / ``extra`` / ``not_scored`` come from the folder listing, done
every run).

Layout of ``DIR``::

    nobg-metrics-cache-v1/jobs/<key[:2]>/<key>.json     one job's results (JSON; NaN allowed)
    nobg-metrics-cache-v1/files/<folder digest>.json    the digests of a folder's files, by (size, mtime, inode, ctime)

The second is the fast path (:mod:`nobg_metrics.cli.eval.file_digests`): a file whose ``stat`` matches its record is not
read again. Every file is written to a temporary name and renamed into place, so two runs sharing
a cache at worst both score a job; an entry that cannot be read is ignored with a note (and rewritten).

Importable without torch (the argument parser uses it).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any

from nobg_metrics._version import __version__
from nobg_metrics.cli.core.errors import ConfigError
from nobg_metrics.cli.eval.file_digests import (
    Digests,
    text_digest,
    write_json,
)
from nobg_metrics.cli.outputs import curve_data

FORMAT = 1
"""Version of the cache layout and entry format (part of every key and of the folder name)."""

ROOT = f"nobg-metrics-cache-v{FORMAT}"

_NOT_NUMBERS = ("workers", "progress", "allow_missing", "skip_unreadable")
"""RunOptions fields that never change a number (every other field is part of the key)."""

def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module."""
    group.add_argument("--cache", metavar="DIR", type=Path, default=None,
                       help="keep each job's results in DIR, keyed by the content of its files and the options; "
                            "a later run scores only new or changed jobs (docs/incremental.md)")


def _plain(value: Any) -> bool:
    """JSON gives back exactly this value (dicts with str keys, lists, str, int, float, bool, None)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _pack_curves(curves: Any) -> dict[str, Any] | None:
    if curves is None:
        return None
    if _plain(curves):
        return {"json": curves}
    return {"pickle": base64.b64encode(pickle.dumps(curves, protocol=4)).decode("ascii")}


def _unpack_curves(packed: dict[str, Any] | None) -> Any:
    if packed is None:
        return None
    if "json" in packed:
        return packed["json"]
    return pickle.loads(base64.b64decode(packed["pickle"]))  # the user's own cache (docs/incremental.md)


def _note(text: str) -> None:
    if os.environ.get("RANK", "0") == "0":
        print(f"note: {text}", file=sys.stderr)


class JobCache:
    """The cache of one run (``--cache DIR``); a no-op without one."""

    def __init__(self, args: argparse.Namespace, options: Any) -> None:
        self.args, self.options = args, options
        folder = getattr(args, "cache", None)
        self.root = None if folder is None else Path(os.path.abspath(folder)) / ROOT
        self.keys: dict[int, str | None] = {}
        self.digests = None if self.root is None else Digests(self.root)

    @property
    def active(self) -> bool:
        return self.root is not None

    @property
    def _active_root(self) -> Path:
        assert self.root is not None, "read only when the cache is active"
        return self.root

    @property
    def _active_digests(self) -> Digests:
        assert self.digests is not None, "read only when the cache is active"
        return self.digests

    # ------------------------------------------------------------------------------------------------- keys
    def _names(self) -> tuple[list[str], list[str]]:
        from nobg_metrics.cli.eval.runner import resolve_metrics  # torch: not for the parser, which imports this module

        o = self.options
        return resolve_metrics(o.tier, o.metrics, o.protocol, o.task)

    def _job_names(self, job: Any, names: list[str]) -> list[str]:
        from nobg_metrics.cli.eval.protocols import job_metrics  # loads the metric registry (torch): not for the parser

        return job_metrics(names, self.options.protocol, job.dataset, job.has_trimap)

    def _settings(self, skipped: list[str]) -> dict[str, Any]:
        """Everything but the files that changes a job's numbers."""
        import torch  # not for the parser, which imports this module

        options = {k: v for k, v in dataclasses.asdict(self.options).items() if k not in _NOT_NUMBERS}
        if options.get("per_image", True):
            options.pop("batch_size", None)  # one image per update: the batch size changes nothing
        device = getattr(self.args, "device", "auto")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        return {"format": FORMAT, "version": __version__, "torch": torch.__version__,
                "curves": [getattr(curve_data, "VERSION", None), getattr(curve_data, "SOURCES_RULE", None)],
                "device": device, "options": options,
                "skipped": skipped}

    def _key(self, job: Any, job_names: list[str], settings: dict[str, Any]) -> str | None:
        """The job's key, or None when one of its files cannot be read (then it is scored, and not stored)."""
        from nobg_metrics.collection import IMAGE_NAMES  # the metric registry (torch): not for the parser

        reads_image = any(name in IMAGE_NAMES for name in job_names)  # an unread RGB image changes no number
        try:
            items = [[item.name, *((f, self._active_digests.digest(p)) for f, p in _files(item)
                                   if f != "image" or reads_image)] for item in job.items]
        except OSError:
            return None
        material = {**settings, "dataset": job.dataset, "method": job.method, "has_trimap": job.has_trimap,
                    "metrics": job_names, "items": items}
        return text_digest(json.dumps(material, sort_keys=True))

    def _entry_path(self, key: str) -> Path:
        return self._active_root / "jobs" / key[:2] / f"{key}.json"

    def _check_location(self, jobs: list) -> None:
        cache = Path(os.path.realpath(self._active_root.parent))
        if cache.exists() and not cache.is_dir():
            raise ConfigError(f"--cache {self.args.cache}: not a folder")
        folders = {Path(os.path.realpath(p.parent)) for job in jobs for item in job.items for _, p in _files(item)}
        for folder in sorted(folders):
            if cache == folder or folder in cache.parents:
                raise ConfigError(f"--cache {self.args.cache} lies inside the input folder {folder}; "
                                  f"choose a folder outside the inputs")

    # ------------------------------------------------------------------------------------------------ lookup
    def _read(self, key: str, job: Any, job_names: list[str]) -> dict[str, Any] | None:
        path = self._entry_path(key)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            problem = _entry_problem(entry, key, job, job_names)
            if problem is None:
                entry["curves"] = _unpack_curves(entry.get("curves"))
        except Exception as error:  # noqa: BLE001 - any damage (bad JSON, bad pickle) means: score again
            problem = f"{type(error).__name__}: {error}"
        if problem is not None:
            _note(f"--cache: ignoring the damaged entry {path} ({problem}); {job.dataset} / {job.method} is scored")
            return None
        return entry

    def lookup(self, jobs: list) -> dict[int, Any]:
        """``job index -> cached result`` for the jobs whose files and options are unchanged (the same on every
        rank: the ranks keep only the jobs all of them found)."""
        if not self.active:
            return {}
        self._check_location(jobs)
        names, skipped = self._names()
        settings = self._settings(skipped)
        hits: dict[int, Any] = {}
        for job in jobs:
            job_names = self._job_names(job, names)
            self.keys[job.index] = key = self._key(job, job_names, settings)
            entry = None if key is None else self._read(key, job, job_names)
            if entry is not None:
                hits[job.index] = entry
        from nobg_metrics.cli.core.dist import gather_objects  # torch.distributed: not for the parser

        agreed = set.intersection(*(set(found) for found in gather_objects(sorted(hits))))
        hits = {index: entry for index, entry in hits.items() if index in agreed}
        if jobs:
            _note(f"--cache {self.args.cache}: {len(hits)} of {len(jobs)} jobs unchanged (not scored again)")
        return hits

    # -------------------------------------------------------------------------------------------------- fill
    def fill(self, scores: Any, hits: dict[int, Any], jobs: list) -> None:
        """Put the cached results of ``hits`` into ``scores`` (as if they had been scored now): the run's metric
        columns and directions as a run of all jobs has them, rows and unreadable entries in job order."""
        if not self.active:
            return
        order = {(job.dataset, job.method): job.index for job in jobs}
        if hits:
            names, _ = self._names()
            per_job = {job.index: self._job_names(job, names) for job in jobs}
            if self.options.protocol != "birefnet":  # as score() prunes the columns no job scores
                names = [n for n in names if any(n in job_names for job_names in per_job.values())]
            fresh = {n for job in jobs if job.index not in hits for n in per_job[job.index]}
            higher = {n: scores.higher_is_better.get(n) for n in fresh}
            for entry in hits.values():
                for n, value in entry["higher"].items():
                    higher.setdefault(n, value)
            for index, entry in hits.items():
                scores.values[index] = entry["values"]
                scores.images[index] = entry["images"]
                scores.resized[index] = entry["resized"]
                if entry["curves"] is not None:
                    scores.curves[index] = entry["curves"]
                scores.per_image.extend(entry["rows"])
                scores.unreadable.extend(entry["unreadable"])
            scores.metric_names = names
            scores.higher_is_better = {n: higher.get(n) for n in names}
            keep = ("dataset", "method", "image", "resized")
            scores.per_image[:] = [{**{k: row[k] for k in keep}, **{n: row.get(n) for n in names}}
                                   for row in scores.per_image]
            position = {(job.index, item.name): i for job in jobs for i, item in enumerate(job.items)}
            scores.per_image.sort(key=lambda r: (order[(r["dataset"], r["method"])],
                                                 position.get((order[(r["dataset"], r["method"])], r["image"]), 0)))
        scores.unreadable.sort(key=lambda e: order.get((e["dataset"], e["method"]), len(order)))

    # ------------------------------------------------------------------------------------------------- store
    def store(self, scores: Any, jobs: list, scored: list) -> None:
        """Save the results of the freshly ``scored`` jobs (rank 0); a cache that cannot be written is a note."""
        if not self.active:
            return
        try:
            for job in scored:
                key = self.keys.get(job.index)
                if key is None or job.index not in scores.values:
                    continue
                files = [p for item in job.items for _, p in _files(item)]
                if not all(self._active_digests.unchanged(p) for p in files):
                    _note(f"--cache: {job.dataset} / {job.method} changed while it was scored; not cached")
                    continue
                write_json(self._entry_path(key), self._entry(key, job, scores))
            self._active_digests.save()
        except OSError as error:
            _note(f"--cache {self.args.cache}: cannot write there ({error}); results not cached")

    def _entry(self, key: str, job: Any, scores: Any) -> dict[str, Any]:
        names = list(scores.values[job.index])
        job_names = self._job_names(job, self._names()[0])
        rows = [{**{k: r[k] for k in ("dataset", "method", "image", "resized")}, **{n: r.get(n) for n in job_names}}
                for r in scores.per_image if r["dataset"] == job.dataset and r["method"] == job.method]
        return {"format": FORMAT, "key": key, "dataset": job.dataset, "method": job.method, "metrics": job_names,
                "higher": {n: scores.higher_is_better.get(n) for n in job_names},
                "values": {n: scores.values[job.index][n] for n in names},
                "images": scores.images.get(job.index, 0), "resized": scores.resized.get(job.index, 0),
                "rows": rows,
                "unreadable": [e for e in scores.unreadable if e["dataset"] == job.dataset and
                               e["method"] == job.method],
                "curves": _pack_curves(scores.curves.get(job.index))}


def _files(item: Any) -> list[tuple[str, Path]]:
    """``(field, path)`` of every file an item names (gt, pred, trimap, image, ...), in field order."""
    return [(f.name, value) for f in dataclasses.fields(item) if isinstance(value := getattr(item, f.name), Path)]


def _entry_problem(entry: Any, key: str, job: Any, job_names: list[str]) -> str | None:
    """What is wrong with an entry read back (None: usable)."""
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
        return "not an entry of this key"
    if (entry.get("dataset"), entry.get("method"), entry.get("metrics")) != (job.dataset, job.method, job_names):
        return "written for another job"
    values, rows = entry.get("values"), entry.get("rows")
    if not isinstance(values, dict) or not set(values) <= set(job_names) or \
            not all(v is None or isinstance(v, (int, float)) for v in values.values()):
        return "bad values"
    if not isinstance(entry.get("images"), int) or not isinstance(entry.get("resized"), int):
        return "bad image counts"
    if not isinstance(entry.get("higher"), dict) or not isinstance(entry.get("unreadable"), list):
        return "bad fields"
    names = {item.name for item in job.items}
    if not isinstance(rows, list) or not all(isinstance(r, dict) and r.get("image") in names and
                                             (r.get("dataset"), r.get("method")) == (job.dataset, job.method)
                                             for r in rows):
        return "bad per-image rows"
    return None
