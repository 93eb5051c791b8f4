"""``nobg-metrics merge RUN RUN ... --out DIR``: one run's outputs from several runs' records (docs/incremental.md).

Each ``RUN`` is an ``eval`` output folder: its ``results.json`` (values, image counts, problems), ``per_image.csv``
(per-image rows) and ``curves.npz`` / ``curves.csv`` (curve data) are read back into the command's own jobs and
scores, and written by the writers ``eval`` uses (:func:`nobg_metrics.cli.outputs.run_outputs.write_outputs`):
results.json, per_image.csv, tables, worst.md, curves, statistics — atomically, as ``eval`` writes.

Rules: the runs must share protocol, task, tier, ``--preset``, metric columns and skipped metrics (an error names the
difference; the merged run keeps the preset: its results.json records it and the combined tables are written;
without ``--metrics`` the P3M trimap columns a run lacks because none of its datasets has trimaps are allowed and
added); a dataset x method pair in two runs is an error naming it, unless ``--prefer last`` (the later run's is
kept). Jobs come in a whole run's order: datasets in order of first appearance, and within each the methods in order
of first appearance. Per-image cells that were empty (NaN or not scored) come back as ``None``. Runs of different
package versions merge with a note.

Importable without torch (the argument parser uses it): the jobs, the scores and the writers are imported when the
runs are merged. The argument parser hands ``eval``'s own sub-parser to :func:`add_parser`: the merged run's options
start from ``eval``'s defaults.
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import os
import signal
import sys
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError, InputError
from nobg_metrics.cli.core.os_names import open_csv
from nobg_metrics.cli.core.signals import exit_status, interruptible, signal_name
from nobg_metrics.cli.core.writing import OutputBusy, OutputLock
from nobg_metrics.cli.outputs import curve_data, report, tables
from nobg_metrics.cli.outputs.curve_data import CurveDataError, curves_by_job, load_curves
from nobg_metrics.cli.outputs.groups import read_groups

_ROW_KEYS = ("dataset", "method", "image", "resized")
_SAME = ("protocol", "task", "tier", "skipped_metrics", "preset")
"""Fields of results.json that every merged run must share (besides the metric columns)."""


def add_parser(commands: argparse._SubParsersAction, eval_parser: argparse.ArgumentParser) -> None:
    """Register the ``merge`` sub-command (its handler: ``args.handler(args)`` returns the exit status);
    ``eval_parser``: ``eval``'s sub-parser, whose defaults the merged run starts from."""
    merge = commands.add_parser("merge", help="one run's outputs from several runs of disjoint dataset x method pairs",
                                description="Merge eval output folders (disjoint dataset x method pairs, same "
                                            "protocol and metrics) into one run's outputs.")
    merge.add_argument("runs", metavar="RUN_DIR", nargs="+", type=Path, help="eval output folders")
    merge.add_argument("--out", type=Path, required=True, help="output folder of the merged run")
    merge.add_argument("--prefer", choices=("error", "last"), default="error",
                       help="a pair in two runs: an error (default), or keep the later run's")
    merge.add_argument("--categories", metavar="FILE", type=Path,
                       help="as eval's: every metric averaged per group too (groups.md)")
    merge.add_argument("--no-per-image", action="store_true", help="skip per_image.csv (and what is made from it)")
    merge.add_argument("--no-plots", action="store_true", help="skip curves.png / curves.pdf")
    merge.add_argument("--quiet", action="store_true", help="no table on the console")
    tables.add_arguments(merge.add_argument_group("tables"))
    curve_data.add_arguments(merge.add_argument_group("curves"))
    report.add_arguments(merge.add_argument_group("statistics and report"))
    merge.set_defaults(handler=functools.partial(run_merge, eval_parser=eval_parser))


class _Run:
    """One eval output folder read back."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        try:
            self.document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"{folder}: no results.json (not an eval output folder)") from None
        except (OSError, ValueError) as error:
            raise InputError(f"{folder}/results.json: cannot read it ({error})") from None
        missing = {"protocol", "task", "tier", "metrics", "results", "higher_is_better"} - set(self.document)
        if missing:
            raise InputError(f"{folder}/results.json: not an eval results file (no {', '.join(sorted(missing))})")
        self.rows = self._rows()
        self.curves = self._curves()

    def _rows(self) -> list[dict[str, Any]] | None:
        path = self.folder / "per_image.csv"
        if not path.is_file():
            return None
        names = self.document["metrics"]
        try:
            with open_csv(path) as handle:  # names as the OS's bytes, as eval wrote them
                reader = csv.reader(handle)
                header = next(reader, None)
                if header != [*_ROW_KEYS, *names]:
                    raise InputError(f"{path}: its columns {header} are not results.json's {[*_ROW_KEYS, *names]}")
                return [{"dataset": r[0], "method": r[1], "image": r[2], "resized": bool(int(r[3])),
                         **{n: float(v) if v else None for n, v in zip(names, r[4:])}} for r in reader]
        except (OSError, ValueError, IndexError) as error:
            raise InputError(f"{path}: cannot read it ({error})") from None

    def _curves(self) -> list[dict[str, Any]] | None:
        if not any((self.folder / name).is_file() for name in ("curves.npz", "curves.csv")):
            return None
        try:
            return load_curves(self.folder)
        except (CurveDataError, OSError) as error:
            raise InputError(str(error)) from None


def _metric_columns(runs: list[_Run]) -> list[str]:
    """The merged run's columns (module notes); a ConfigError names a difference."""
    # the protocols and the registry (torch): not for the argument parser, which imports this module
    from nobg_metrics.cli.eval.protocols import protocol_metrics
    from nobg_metrics.collection import P3M_TRIMAP_NAMES

    first = runs[0].document
    lists = [run.document["metrics"] for run in runs]
    if all(names == lists[0] for names in lists):
        return list(lists[0])
    union = {n for names in lists for n in names}
    pruned = union - {n for names in lists for n in names if all(n in other for other in lists)}
    if first["protocol"] == "p3m" and first["tier"] != "custom" and pruned <= set(P3M_TRIMAP_NAMES):
        fixed = protocol_metrics(first["protocol"], first["task"])
        assert fixed is not None  # P3M's protocol has its fixed set
        return [n for n in fixed if n in union]
    for run in runs[1:]:
        if run.document["metrics"] != lists[0]:
            only = [n for n in run.document["metrics"] if n not in lists[0]]
            lacks = [n for n in lists[0] if n not in run.document["metrics"]]
            raise ConfigError(f"the runs score different metrics: {run.folder} has {only or 'no other'}"
                              f"{f' and lacks {lacks}' if lacks else ''} compared with {runs[0].folder}"
                              f"{'' if only or lacks else ' (in another order)'}")
    return list(lists[0])


def _check_same(runs: list[_Run]) -> None:
    first = runs[0]
    for run in runs[1:]:
        for key in _SAME:
            if run.document.get(key) != first.document.get(key):
                raise ConfigError(f"the runs differ in {key}: {first.folder} has {first.document.get(key)!r}, "
                                  f"{run.folder} has {run.document.get(key)!r}")
    versions = sorted({str(run.document.get("version")) for run in runs})
    if len(versions) > 1:
        print(f"note: the runs come from nobg-metrics versions {', '.join(versions)}", file=sys.stderr)


def _combine(runs: list[_Run], prefer: str, names: list[str]) -> tuple[list, Any]:
    """The merged ``(jobs, scores)`` (jobs in a whole run's order)."""
    # the jobs (their files: numpy, Pillow, torch) and the scores (torch): not for the argument parser
    from nobg_metrics.cli.eval.jobs import Job
    from nobg_metrics.cli.eval.runner import Scores

    owner: dict[tuple[str, str], _Run] = {}
    for run in runs:
        for result in run.document["results"]:
            pair = (result["dataset"], result["method"])
            if pair in owner and prefer != "last":
                raise ConfigError(f"{pair[0]} / {pair[1]} is in both {owner[pair].folder} and {run.folder} "
                                  f"(merge takes disjoint runs; --prefer last keeps the later run's)")
            owner[pair] = run
    datasets = list(dict.fromkeys(d for run in runs for d, _ in _pairs(run)))
    methods = list(dict.fromkeys(m for run in runs for _, m in _pairs(run)))
    pairs = sorted(owner, key=lambda p: (datasets.index(p[0]), methods.index(p[1])))
    higher: dict[str, Any] = {}
    for run in reversed(runs):  # the first run that gives a direction wins; all give the same one
        higher.update({n: v for n, v in run.document["higher_is_better"].items() if v is not None})
    scores = Scores(names, list(runs[0].document.get("skipped_metrics", [])), {n: higher.get(n) for n in names})
    jobs = []
    with_rows = all(run.rows is not None for run in runs)
    for index, pair in enumerate(pairs):
        run = owner[pair]
        result = next(r for r in run.document["results"] if (r["dataset"], r["method"]) == pair)
        job = Job(index, *pair)
        job.missing = [e["file"] for e in _own(run, "missing", pair)]
        job.extra = [e["file"] for e in _own(run, "extra", pair)]
        job.not_scored = [(e["file"], e["reason"]) for e in _own(run, "not_scored", pair)]
        jobs.append(job)
        scores.values[index] = {n: math.nan if v is None else v for n, v in result["metrics"].items() if n in names}
        scores.images[index], scores.resized[index] = result["images"], result["resized"]
        scores.unreadable += _own(run, "unreadable", pair)
        if with_rows:
            assert run.rows is not None  # with_rows: every run has its rows
            scores.per_image += [{**{k: r[k] for k in _ROW_KEYS}, **{n: r.get(n) for n in names}}
                                 for r in run.rows if (r["dataset"], r["method"]) == pair]
        if run.curves is not None:
            scores.curves.update(curves_by_job(run.curves, [job]))
    lacking = [str(run.folder) for run in runs if run.curves is None]
    if lacking and len(lacking) < len(runs):
        print(f"note: {', '.join(lacking)} saved no curve data: its methods have no curves in the merged run",
              file=sys.stderr)
    return jobs, scores


def _pairs(run: _Run) -> list[tuple[str, str]]:
    return [(r["dataset"], r["method"]) for r in run.document["results"]]


def _own(run: _Run, kind: str, pair: tuple[str, str]) -> list[dict[str, str]]:
    return [dict(e) for e in run.document.get(kind, []) if (e.get("dataset"), e.get("method")) == pair]


def _eval_args(args: argparse.Namespace, eval_parser: argparse.ArgumentParser, document: dict[str, Any],
               names: list[str], per_image: bool) -> Any:
    """``eval``'s namespace (every flag at its default) with the merged run's settings and merge's own flags."""
    merged = eval_parser.parse_args([])
    merged.command = "eval"  # as ``nobg-metrics eval`` parses it
    for key, value in vars(args).items():
        if key not in ("runs", "handler", "prefer", "command"):
            setattr(merged, key, value)
    merged.protocol, merged.task = document["protocol"], document["task"]
    merged.preset = document.get("preset")  # the runs' preset (checked equal): its tables, "preset" in results.json
    tier = document["tier"]
    merged.metrics = list(names) if tier == "custom" else None
    merged.tier = tier if tier not in ("custom", "protocol") else None
    merged.no_per_image = args.no_per_image or not per_image
    merged.groups = None if args.categories is None else read_groups(args.categories)
    return merged


def run_merge(args: argparse.Namespace, eval_parser: argparse.ArgumentParser) -> int:
    """The ``merge`` command; returns the exit status (0 written; 1 a run cannot be read or the outputs not written;
    2 runs that do not merge, or a bad ``--out``; 4 ``--out`` in use; 130 / 143 interrupted). ``eval_parser``:
    ``eval``'s sub-parser (the merged run's options start from its defaults)."""

    with interruptible():
        try:
            out = Path(os.path.realpath(args.out))
            for folder in args.runs:
                if Path(os.path.realpath(folder)) == out:
                    raise ConfigError(f"--out {args.out} is one of the runs to merge; write the merged run elsewhere")
            runs = [_Run(folder) for folder in args.runs]
            _check_same(runs)
            names = _metric_columns(runs)
            per_image = all(run.rows is not None for run in runs)
            if not per_image and not args.no_per_image:
                lacking = ", ".join(str(run.folder) for run in runs if run.rows is None)
                print(f"note: {lacking} has no per_image.csv: the merged run has none either", file=sys.stderr)
            if args.categories is not None and not per_image:
                raise ConfigError("--categories averages the per-image records: every run needs its per_image.csv")
            jobs, scores = _combine(runs, args.prefer, names)
            merged = _eval_args(args, eval_parser, runs[0].document, names, per_image)
            from nobg_metrics.cli.outputs.run_outputs import write_outputs  # torch: not for the argument parser

            with OutputLock(args.out):
                write_outputs(merged, jobs, scores)
            return 0
        except ConfigError as error:
            print(f"nobg-metrics merge: error: {error}", file=sys.stderr)
            return 2
        except InputError as error:
            print(f"nobg-metrics merge: failed: {error}; nothing was written", file=sys.stderr)
            return 1
        except OutputBusy as error:
            print(f"nobg-metrics merge: error: {error}", file=sys.stderr)
            return 4
        except KeyboardInterrupt as interrupt:
            signum = getattr(interrupt, "signum", signal.SIGINT)
            print(f"nobg-metrics merge: interrupted ({signal_name(signum)})", file=sys.stderr)
            return exit_status(signum)
