"""Turn a :class:`~nobg_metrics.cli.eval.config.Plan` into jobs: one per dataset x method, files matched by stem.

Every gt stem of a dataset is expected in each method's folder. Problems are recorded, never silently
skipped: ``missing`` (a gt without prediction, or without trimap), ``extra`` (a prediction without gt,
or a file dropped as a duplicate stem), ``not_scored`` (every other entry of an input folder, with its
reason: hidden, unsupported extension, subfolder, name not matching the prefix/suffix, a trimap that cannot be
read for a gt that has no prediction, ...), ``unreadable`` (a gt that is a broken or looping symlink, found from
the listing whether or not a prediction asks for it: named once per dataset, ``method`` ``*``, instead of its
prediction being called missing). Missing files fail the run unless ``--allow-missing``, unreadable ones unless
``--allow-missing`` / ``--skip-unreadable``; a gt folder without any image always fails it.

RGB images (``--image DIR``, a config's ``image``, PySODEvalToolkit's dataset ``image`` entry) are matched by stem
too, but only a run whose metrics take an image needs them (CCm): the matches are ``Item.image`` (``None`` when
absent), the absent ones ``Job.missing_images`` (named as missing predictions are, ``image/<prefix><stem><suffix>``)
and an unlistable folder ``Job.image_problem``; :func:`nobg_metrics.cli.eval.runner.score` turns them into errors when
a metric of the run reads the image (:func:`image_problems`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nobg_metrics.cli.eval.config import InputError, Plan
from nobg_metrics.io.errors import ReadError
from nobg_metrics.io.folders import IMAGE_EXTENSIONS, Listing, Source, scan_folder


@dataclass(frozen=True)
class Item:
    """One image pair to score (``trimap`` only for matting datasets; ``image``: the RGB image, when the dataset
    names an image folder holding this stem)."""

    job: int
    name: str
    gt: Path
    pred: Path
    trimap: Path | None = None
    image: Path | None = None


@dataclass
class Job:
    """One dataset x method: its matched items and its problems."""

    index: int
    dataset: str
    method: str
    items: list[Item] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    has_trimap: bool = False
    not_scored: list[tuple[str, str]] = field(default_factory=list)
    """``(file, reason)`` of the input entries that are neither scored nor missing/extra."""
    has_image: bool = False
    """The dataset names an image folder (whether or not it can be listed)."""
    missing_images: list[str] = field(default_factory=list)
    """Matched items whose image is absent (``image/<prefix><stem><suffix or .*>``)."""
    image_problem: str | None = None
    """Why the image folder cannot be listed (``None``: listed, or no image folder)."""
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    """``(gt/<name>, reason)`` of the gts without an item that cannot be read (a broken symlink, ...)."""


def problems(jobs: list[Job], kind: str) -> list[dict[str, str]]:
    """``[{"dataset", "method", "file", "reason"}]`` for ``kind`` in ``("missing", "extra", "not_scored",
    "unreadable")`` (``unreadable``: the gts found unreadable in the listing, each once per dataset, method ``*``)."""
    if kind == "unreadable":
        found = {(job.dataset, name): reason for job in jobs for name, reason in job.unreadable}
        return [{"dataset": dataset, "method": "*", "file": name, "reason": reason}
                for (dataset, name), reason in found.items()]
    if kind == "not_scored":
        return [{"dataset": job.dataset, "method": job.method, "file": name, "reason": reason}
                for job in jobs for name, reason in job.not_scored]
    return [{"dataset": job.dataset, "method": job.method, "file": name, "reason": kind}
            for job in jobs for name in getattr(job, kind)]


def image_problems(job: Job) -> list[str]:
    """What stops ``job`` from giving every item its RGB image: no image folder, an unlistable one, absent files.

    Examples:
        >>> image_problems(Job(0, "COD10K", "SINet", has_image=True, missing_images=["image/a.*"]))
        ['missing image/a.*']
    """
    if not job.has_image:
        return [f"dataset {job.dataset!r} has no image folder (give --image DIR, or 'image' in its config entry)"]
    if job.image_problem is not None:
        return [job.image_problem]
    return [f"missing {name}" for name in job.missing_images]


def _scan(source: Source, cache: dict[Source, Listing]) -> Listing:
    if source not in cache:
        try:
            cache[source] = scan_folder(source)
        except ReadError as error:
            raise InputError(str(error)) from None
    return cache[source]


def _empty_gt_message(source: Source, listing: Listing) -> str:
    text = f"no gt image in {source.path}"
    if source.prefix or source.suffix:
        text += f" matching {source.prefix!r} + stem + {source.suffix!r}"
    if listing.not_scored:
        shown = "; ".join(f"{name}: {reason}" for name, reason in listing.not_scored[:5])
        more = len(listing.not_scored) - 5
        text += f" (not scored: {shown}{f'; and {more} more' if more > 0 else ''})"
    else:
        text += " (the folder is empty)"
    return text + f"; images must be one of {' '.join(IMAGE_EXTENSIONS)}"


def build_jobs(plan: Plan) -> list[Job]:
    """Match every method's predictions (and the trimaps) to each dataset's gt stems.

    Jobs come in plan order: datasets outer, methods inner (methods that do not cover a dataset are
    skipped for it). Items keep the sorted order of the gt stems, so every rank sees the same list.

    Raises:
        InputError: a gt folder holds no image, or a folder cannot be listed.
    """
    jobs: list[Job] = []
    cache: dict[Source, Listing] = {}
    for dataset in plan.datasets:
        gt_listing = _scan(dataset.gt, cache)
        if not gt_listing.found:
            raise InputError(_empty_gt_message(dataset.gt, gt_listing))
        gts = gt_listing.found
        unlisted: list[str] = []
        if dataset.index is not None:  # index_file: only the listed stems; listed stems without a gt are missing
            unlisted = [f"gt/{stem}.* (in index_file)" for stem in dataset.index if stem not in gts]
            gts = {stem: path for stem, path in gts.items() if stem in set(dataset.index)}
        trimap_listing = None if dataset.trimap is None else _scan(dataset.trimap, cache)
        trimaps = {} if trimap_listing is None else trimap_listing.found
        images: dict[str, Path] = {}
        image_problem = None
        if dataset.image is not None:  # needed only by some metrics: an unlistable folder is recorded, not raised
            try:
                images = _scan(dataset.image, cache).found
            except InputError as error:
                image_problem = f"image folder: {error}"
        for method, per_dataset in plan.methods.items():
            source = per_dataset.get(dataset.name)
            if source is None:
                continue
            listing = _scan(source, cache)
            preds = listing.found
            job = Job(len(jobs), dataset.name, method, has_trimap=dataset.trimap is not None,
                      has_image=dataset.image is not None, image_problem=image_problem)
            job.extra = [f"gt/{name}" for name in gt_listing.duplicates] + list(listing.duplicates)
            job.extra += sorted(preds[stem].name for stem in set(preds) - set(gts))
            job.not_scored = [(f"gt/{name}", reason) for name, reason in gt_listing.not_scored]
            if trimap_listing is not None:
                job.extra += [f"trimap/{name}" for name in trimap_listing.duplicates]
                job.extra += sorted(f"trimap/{trimaps[stem].name}" for stem in set(trimaps) - set(gts))
                job.not_scored += [(f"trimap/{name}", reason) for name, reason in trimap_listing.not_scored]
            job.not_scored += list(listing.not_scored)
            job.missing += unlisted
            for stem in sorted(gts):
                trimap = None if dataset.trimap is None else trimaps.get(stem)
                complete = stem in preds and (dataset.trimap is None or trimap is not None)
                if not complete and stem in gt_listing.problems:  # never scorable: the gt is named, not what it lacks
                    job.unreadable.append((f"gt/{gts[stem].name}", gt_listing.problems[stem]))
                    continue
                if stem not in preds:
                    job.missing.append(f"{source.prefix}{stem}{source.suffix or '.*'}")
                    if trimap_listing is not None and stem in trimap_listing.problems:
                        job.not_scored.append((f"trimap/{trimaps[stem].name}",
                                               f"{trimap_listing.problems[stem]}; its gt has no prediction"))
                    continue
                if dataset.trimap is not None and trimap is None:
                    job.missing.append(f"trimap/{dataset.trimap.prefix}{stem}{dataset.trimap.suffix or '.*'}")
                    continue
                image = images.get(stem)
                if image is None and dataset.image is not None and image_problem is None:
                    job.missing_images.append(f"image/{dataset.image.prefix}{stem}{dataset.image.suffix or '.*'}")
                job.items.append(Item(job.index, stem, gts[stem], preds[stem], trimap, image))
            jobs.append(job)
    return jobs
