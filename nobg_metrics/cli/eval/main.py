"""``nobg-metrics``: the command line (argument parsing and the run's steps; docs/cli.md).

    nobg-metrics eval                                   # score the bundled sample -> ./nobg-metrics-out
    nobg-metrics eval --gt DUTS-TE/Mask --pred MINet=preds/MINet --pred preds/U2Net --out results/
    nobg-metrics eval --config datasets.json methods.json --tier expensive
    torchrun --nproc-per-node 4 -m nobg_metrics eval --config run.yaml --device cuda

Exit status (docs/cli.md): 0 scored and written; 1 missing or unreadable inputs, nothing scored, or
outputs that could not be written (names listed, nothing written); 2 a bad command line, config or
``--out``; 3 an internal error (with a traceback: please report it); 4 ``--out`` in use by another run;
128 + N stopped by signal N (130 SIGINT / Ctrl-C, 143 SIGTERM). Never a traceback for 1, 2, 4 or 128 + N.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import sys
from pathlib import Path

import torch.distributed

from nobg_metrics.allocator import tune_cpu_allocator
from nobg_metrics.catalog import CATALOG
from nobg_metrics.cli.core.dist import init_from_env, pick_device, world
from nobg_metrics.cli.core.guard import guarded
from nobg_metrics.cli.core.launch import (
    LAUNCHED_ENV,
    default_workers,
    resolve_procs,
    run_ranks,
)
from nobg_metrics.cli.core.signals import checkpoint
from nobg_metrics.cli.core.statuses import EXIT_BUSY as EXIT_BUSY  # the exit statuses, importable from here too
from nobg_metrics.cli.core.statuses import EXIT_INPUTS, EXIT_OK
from nobg_metrics.cli.core.statuses import EXIT_INTERNAL as EXIT_INTERNAL
from nobg_metrics.cli.core.statuses import EXIT_USAGE as EXIT_USAGE
from nobg_metrics.cli.core.writing import OutputLock
from nobg_metrics.cli.eval.cache import JobCache
from nobg_metrics.cli.eval.config import (
    ConfigError,
    InputError,
    Plan,
    check_plan,
    filter_plan,
    folder_problem,
    plan_from_args,
    plan_from_configs,
    resolved,
    split_named,
)
from nobg_metrics.cli.eval.config_options import apply_config_options
from nobg_metrics.cli.eval.jobs import Job, build_jobs, problems
from nobg_metrics.cli.eval.presets import apply_preset
from nobg_metrics.cli.eval.protocols import protocol_metrics, resolve_task
from nobg_metrics.cli.eval.runner import RunOptions, score
from nobg_metrics.cli.eval.toolkit import apply_toolkit_flags, toolkit_names
from nobg_metrics.cli.outputs.aliases import check_plan_aliases
from nobg_metrics.cli.outputs.groups import read_groups
from nobg_metrics.cli.outputs.run_outputs import report_entries, report_not_scored, write_outputs
from nobg_metrics.cli.parser import DEFAULT_OUT, build_parser  # noqa: F401  (DEFAULT_OUT: part of the module's API)
from nobg_metrics.collection import METRIC_NAMES
from nobg_metrics.io.folders import Source
from nobg_metrics.io.images import check_file

_PROTOCOL_ONLY = [d.name for d in CATALOG.values() if d.protocol == "birefnet"]
"""BiRefNet's own columns (the catalog's ``Descriptor.protocol``): only with --protocol birefnet."""

SAMPLE_DIR = Path(__file__).resolve().parents[2] / "data" / "sample"


def _plan(args: argparse.Namespace) -> Plan:
    """The run's plan: from the flags or configs, then PySODEvalToolkit's include / exclude filters; what was left
    out on purpose is said on stderr (rank 0)."""
    plan = _build_plan(args)
    filter_plan(plan, args.include_datasets, args.exclude_datasets, args.include_methods, args.exclude_methods)
    if _is_rank_zero() and os.environ.get(LAUNCHED_ENV) != "1":
        for note in plan.notes:
            print(f"note: {note}", file=sys.stderr)
    return plan


def _build_plan(args: argparse.Namespace) -> Plan:
    configs = list(args.config) + list(args.dataset_json) + list(args.method_json)
    if not configs and args.gt is None and not args.pred:
        plan = Plan()  # the bundled sample
        plan_gt = plan_from_args(str(SAMPLE_DIR / "gt"), [], None)
        plan.datasets = plan_gt.datasets
        for sample in ("methodA", "methodB"):
            plan.methods[sample] = {plan.datasets[0].name: Source(SAMPLE_DIR / sample)}
        return plan
    if configs:
        if args.gt is not None:
            raise ConfigError("--gt and --config cannot be combined (put the dataset in the config)")
        kinds = [None] * len(args.config) + ["datasets"] * len(args.dataset_json) + ["methods"] * len(args.method_json)
        plan = plan_from_configs(configs, kinds)  # --dataset-json / --method-json files are read as that kind
        if args.trimap is not None:
            raise ConfigError("--trimap and --config cannot be combined (put 'trimap' in the config's dataset)")
        if args.prefix or args.suffix:
            raise ConfigError("--prefix / --suffix apply to --gt/--pred runs; with a config give 'prefix' / 'suffix' "
                              "in its method entries")
        if args.pred:
            if len(plan.datasets) != 1:
                raise ConfigError("--pred with a config needs exactly one dataset in it")
            for value in args.pred:
                method, path = split_named(value)
                plan.methods[method or resolved(Path(path)).name] = {plan.datasets[0].name: Source(Path(path))}
        return plan
    if args.gt is None:
        raise ConfigError("--pred needs --gt (or a config with datasets)")
    return plan_from_args(args.gt, args.pred, args.trimap, args.prefix or "", args.suffix or "",
                          image=getattr(args, "image", None))


def _check_out(out: Path, plan: Plan) -> None:
    """Refuse an ``--out`` inside an input folder, a file, a broken link, or a place that cannot be written.

    Runs before any scoring; the lock (:class:`OutputLock`) then proves the folder writable for real.
    """
    target = resolved(out)
    for folder in plan.folders():
        folder = resolved(folder)
        if target == folder or folder in target.parents:
            raise ConfigError(f"--out {out} lies inside the input folder {folder}; outputs never go there")
    if os.path.lexists(out):
        problem = folder_problem(out)
        if problem is not None:
            raise ConfigError(f"--out {out} {problem}")
        if not os.access(out, os.W_OK | os.X_OK):
            raise ConfigError(f"--out {out}: the folder is not writable")
        return
    ancestor = target.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    problem = folder_problem(ancestor)
    if problem is not None:
        raise ConfigError(f"--out {out} cannot be created: {ancestor} {problem}")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {out} cannot be created: {ancestor} is not writable")


def _resolve_protocol(args: argparse.Namespace) -> None:
    """Settle ``--task`` / ``--protocol`` / ``--tier`` on ``args`` (idempotent: ranks resolve again)."""
    args.task, args.protocol = resolve_task(args.task, args.protocol)
    fixed = protocol_metrics(args.protocol, args.task)
    if fixed is not None and args.tier is not None:
        raise ConfigError(f"--tier does not apply to --protocol {args.protocol} (its metrics are fixed: "
                          f"{' '.join(fixed)}; --metrics picks among them)")
    if fixed is None and args.metrics and set(args.metrics) & set(_PROTOCOL_ONLY):
        raise ConfigError(f"--metrics {sorted(set(args.metrics) & set(_PROTOCOL_ONLY))} need --protocol birefnet")


METRIC_NAMES_PAGE = "docs/metric_names.md"
"""The page that lists every metric name (generated from the registry: tools/metric_names.py)."""


def check_metric_names(names: list[str] | None) -> None:
    """``--metrics``: every name must be a collection name or a BiRefNet column (PySODEvalToolkit's names are
    translated before, :mod:`~nobg_metrics.cli.eval.toolkit`); a wrong one is named with the closest valid ones, the
    toolkit's names among them (the parser does not list them: that would import the metrics for ``--help``)."""
    valid = list(METRIC_NAMES) + _PROTOCOL_ONLY
    for name in names or ():
        if name not in valid:
            candidates = valid + toolkit_names()
            same = [v for v in candidates if v.lower() == name.lower()]
            close = same or difflib.get_close_matches(name, candidates, n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise ConfigError(f"--metrics: unknown metric {name!r}{hint} ({METRIC_NAMES_PAGE} lists all {len(valid)} "
                              "names, and PySODEvalToolkit's)")


def _unreadable_up_front(jobs: list[Job]) -> list[dict[str, str]]:
    """Every gt, prediction and trimap of the run checked without decoding (:func:`~nobg_metrics.io.images.check_file`),
    each file once; the problems as the ``unreadable`` entries of the outputs."""
    found, seen = [], set()
    for job in jobs:
        for item in job.items:
            for role, path in (("gt", item.gt), ("prediction", item.pred), ("trimap", item.trimap)):
                if path is None or (role != "prediction" and path in seen):
                    continue
                seen.add(path)
                problem = check_file(path)
                if problem is not None:
                    file = path.name if role == "prediction" else f"{role}/{path.name}"
                    found.append({"dataset": job.dataset, "method": job.method if role == "prediction" else "*",
                                  "file": file, "reason": problem})
    return found


def _hint_unmatched(jobs: list[Job]) -> None:
    """When a method matched no gt at all but its folder holds images: show a few, and the flags that match them."""
    for job in jobs:
        if not job.items and job.extra:
            shown = ", ".join(job.extra[:3])
            print(f"hint: {job.dataset} / {job.method}: no prediction matched a gt name, but the folder holds "
                  f"{len(job.extra)} other image(s) ({shown}{', ...' if len(job.extra) > 3 else ''}); name them with "
                  f"--prefix / --suffix (e.g. --suffix _sal.png) or a config's prefix/suffix", file=sys.stderr)


def run_eval(args: argparse.Namespace) -> int:
    """The ``eval`` command; returns the exit status (errors are raised: see :func:`run_guarded`)."""
    tune_cpu_allocator()  # freed tensor memory is reused, not faulted in again per image (forked ranks inherit)
    if getattr(args, "preset", None) == "davis":  # a layout, scoring and tables of its own
        from nobg_metrics.cli.video.run import run_davis

        return run_davis(args)
    plan = _plan(args)
    apply_config_options(args, plan.options)  # our config's options: (the command line wins)
    apply_toolkit_flags(args, list(METRIC_NAMES) + _PROTOCOL_ONLY)  # PySODEvalToolkit's names and flags
    apply_preset(args)  # --preset: the task, protocol and metrics of a field's table (unless given explicitly)
    check_metric_names(args.metrics)
    args.groups = None
    if args.categories is not None:
        if args.no_per_image:
            raise ConfigError("--categories averages the per-image records: it cannot go with --no-per-image")
        args.groups = read_groups(args.categories)
    _resolve_protocol(args)
    check_plan(plan)
    check_plan_aliases(args, plan)  # --aliases: a misspelt key or name fails before scoring
    _check_out(args.out, plan)
    if args.batch_size < 1 or (args.workers is not None and args.workers < 0):
        raise ConfigError("--batch-size must be >= 1 and --workers >= 0")
    try:
        device = pick_device(args.device)
    except RuntimeError as error:
        raise ConfigError(str(error)) from None
    # one process per run holds --out: this one, unless it is a rank (--procs: the launcher holds it;
    # torchrun: rank 0); the lock is taken before any scoring, and proves the folder writable
    owner = os.environ.get(LAUNCHED_ENV) != "1" and os.environ.get("RANK", "0") == "0"
    with OutputLock(args.out) if owner else contextlib.nullcontext():
        return _run_locked(args, plan, device)


def _run_locked(args: argparse.Namespace, plan: Plan, device: torch.device) -> int:
    initialised = init_from_env(device)
    try:
        rank, _ = world()
        jobs = build_jobs(plan)
        checkpoint()
        missing = problems(jobs, "missing")
        listed = problems(jobs, "unreadable")  # gts the listing already knows to be unreadable (broken links)
        if missing and not args.allow_missing:
            if rank == 0:
                report_entries("missing files", missing)
                report_entries("unreadable files", listed)
                report_not_scored(jobs)
                _hint_unmatched(jobs)
                print("nobg-metrics: failed: missing files (use --allow-missing to score the rest); "
                      "nothing was written", file=sys.stderr)
            return EXIT_INPUTS
        skip_unreadable = args.allow_missing or getattr(args, "skip_unreadable", False)
        if not skip_unreadable:  # every file checked before scoring: unreadable ones are named up front
            unreadable = listed + _unreadable_up_front(jobs)
            if unreadable:
                if rank == 0:
                    report_entries("unreadable files", unreadable)
                    print("nobg-metrics: failed: unreadable files (use --allow-missing to score the rest); "
                          "nothing was scored or written", file=sys.stderr)
                return EXIT_INPUTS
        try:
            procs = resolve_procs(args.procs, device, sum(len(job.items) for job in jobs))
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if procs > 1:  # this process only launches the ranks (it has run no torch op: safe to fork)
            return run_ranks(procs, run_guarded, args)
        workers = args.workers if args.workers is not None else default_workers()
        options = RunOptions(args.tier or "expensive", args.metrics, args.protocol, args.task, args.batch_size,
                             workers, skip_unreadable, not args.no_per_image, not args.quiet)
        cache = JobCache(args, options)
        hits = cache.lookup(jobs)  # unchanged jobs of an earlier run (--cache): not scored again
        todo = [job for job in jobs if job.index not in hits]
        scores = score(todo, options, device, plan_jobs=jobs)
        cache.fill(scores, hits, jobs)
        scores.unreadable[:0] = listed  # from the listing, every run (like missing): never cached
        if scores.unreadable and not skip_unreadable:
            if rank == 0:
                report_entries("unreadable files", scores.unreadable)
                report_not_scored(jobs)
                print("nobg-metrics: failed: unreadable files (use --allow-missing to score the rest); "
                      "nothing was written", file=sys.stderr)
            return EXIT_INPUTS
        checkpoint()
        if not any(scores.images.values()):
            raise InputError(f"no image was scored (missing: {len(missing)}, unreadable: {len(scores.unreadable)})")
        if rank == 0:
            cache.store(scores, jobs, todo)
            write_outputs(args, jobs, scores)
        return EXIT_OK
    finally:
        if initialised:
            torch.distributed.destroy_process_group()


def _is_rank_zero() -> bool:
    return os.environ.get("RANK", "0") == "0"


def run_guarded(args: argparse.Namespace) -> int:
    """:func:`run_eval` with every outcome turned into an exit status and a message
    (:mod:`~nobg_metrics.cli.core.guard`).

    Messages of expected failures come from rank 0 only; ranks started by ``--procs`` leave the report
    of an interruption to their launcher.
    """
    return guarded(lambda: run_eval(args), say=_is_rank_zero(), report_interrupt=os.environ.get(LAUNCHED_ENV) != "1")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``nobg-metrics`` console script and ``python -m nobg_metrics``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_OK
    if args.command != "eval":  # plot, merge, instances: their own handlers, as in ``entry``
        return args.handler(args)
    return run_guarded(args)


if __name__ == "__main__":
    sys.exit(main())
