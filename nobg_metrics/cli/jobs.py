"""Turn a :class:`~nobg_metrics.cli.config.Plan` into jobs: one per dataset x method, files matched by stem.

Every gt stem of a dataset is expected in each method's folder. Problems are recorded, never silently
skipped: ``missing`` (a gt without prediction, or without trimap), ``extra`` (a prediction without gt,
or a file dropped as a duplicate stem). Missing files fail the run unless ``--allow-missing``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nobg_metrics.cli.config import Plan
from nobg_metrics.cli.files import list_stems


@dataclass(frozen=True)
class Item:
    """One image pair to score (``trimap`` only for matting datasets)."""

    job: int
    name: str
    gt: Path
    pred: Path
    trimap: Path | None = None


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


def problems(jobs: list[Job], kind: str) -> list[dict[str, str]]:
    """``[{"dataset", "method", "file", "reason"}]`` for ``kind`` in ``("missing", "extra")``."""
    return [{"dataset": job.dataset, "method": job.method, "file": name, "reason": kind}
            for job in jobs for name in getattr(job, kind)]


def build_jobs(plan: Plan) -> list[Job]:
    """Match every method's predictions (and the trimaps) to each dataset's gt stems.

    Jobs come in plan order: datasets outer, methods inner (methods that do not cover a dataset are
    skipped for it). Items keep the sorted order of the gt stems, so every rank sees the same list.
    """
    jobs: list[Job] = []
    for dataset in plan.datasets:
        gts, gt_duplicates = list_stems(dataset.gt)
        trimaps = {} if dataset.trimap is None else list_stems(dataset.trimap)[0]
        for method, per_dataset in plan.methods.items():
            source = per_dataset.get(dataset.name)
            if source is None:
                continue
            preds, duplicates = list_stems(source)
            job = Job(len(jobs), dataset.name, method, has_trimap=dataset.trimap is not None)
            job.extra = [f"gt/{name}" for name in gt_duplicates] + duplicates
            job.extra += sorted(preds[stem].name for stem in set(preds) - set(gts))
            for stem in sorted(gts):
                if stem not in preds:
                    job.missing.append(f"{source.prefix}{stem}{source.suffix or '.*'}")
                    continue
                trimap = None
                if dataset.trimap is not None:
                    trimap = trimaps.get(stem)
                    if trimap is None:
                        job.missing.append(f"trimap/{dataset.trimap.prefix}{stem}{dataset.trimap.suffix or '.*'}")
                        continue
                job.items.append(Item(job.index, stem, gts[stem], preds[stem], trimap))
            jobs.append(job)
    return jobs
