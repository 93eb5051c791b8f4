"""``nobg-metrics``: the command line (argument parsing and the run's steps; docs/cli.md).

    nobg-metrics eval                                   # score the bundled sample -> ./nobg-metrics-out
    nobg-metrics eval --gt DUTS-TE/Mask --pred MINet=preds/MINet --pred preds/U2Net --out results/
    nobg-metrics eval --config datasets.json methods.json --tier expensive
    torchrun --nproc-per-node 4 -m nobg_metrics eval --config run.yaml --device cuda

Exit status: 0 scored and written; 1 missing or unreadable files (names listed, nothing written);
2 a bad command line or config.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nobg_metrics
from nobg_metrics.allocator import tune_cpu_allocator
from nobg_metrics.cli.config import (
    ConfigError,
    Plan,
    check_plan,
    plan_from_args,
    plan_from_configs,
    split_named,
)
from nobg_metrics.cli.dist import init_from_env, pick_device, world
from nobg_metrics.cli.files import Source
from nobg_metrics.cli.jobs import build_jobs, problems
from nobg_metrics.cli.launch import default_workers, resolve_procs, run_ranks
from nobg_metrics.cli.outputs import (
    json_writer,
    latex_table,
    markdown_table,
    results_document,
    text_writer,
    write_atomically,
    write_per_image_csv,
)
from nobg_metrics.cli.plots import draw_curves, have_matplotlib
from nobg_metrics.cli.runner import PROTOCOLS, RunOptions, score
from nobg_metrics.collection import METRIC_NAMES, TIERS

SAMPLE_DIR = Path(nobg_metrics.__file__).resolve().parent / "data" / "sample"
DEFAULT_OUT = Path("nobg-metrics-out")


def build_parser() -> argparse.ArgumentParser:
    """The ``nobg-metrics`` parser (every flag is documented in docs/cli.md)."""
    parser = argparse.ArgumentParser(prog="nobg-metrics", description="Score folders of saliency/segmentation "
                                     "maps and alpha mattes the way benchmark tables are made.")
    parser.add_argument("--version", action="version", version=f"nobg-metrics {nobg_metrics.__version__}")
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("eval", help="score prediction folders against gt folders",
                              description="Score prediction folders. With no arguments: the bundled sample.")
    files = run.add_argument_group("inputs")
    files.add_argument("--gt", metavar="[NAME=]DIR", help="gt mask folder of one dataset (name: folder name)")
    files.add_argument("--pred", metavar="[NAME=]DIR", nargs="+", action="extend", default=[],
                       help="prediction folder(s); method name = folder name unless NAME=DIR")
    files.add_argument("--trimap", metavar="DIR", help="trimap folder (matting: metrics on the unknown region)")
    files.add_argument("--config", metavar="FILE", nargs="+", action="extend", default=[], type=Path,
                       help="JSON/YAML config(s): ours, or PySODEvalToolkit's dataset + method JSON")
    files.add_argument("--dataset-json", metavar="FILE", type=Path, help="PySODEvalToolkit dataset JSON")
    files.add_argument("--method-json", metavar="FILE", type=Path, help="PySODEvalToolkit method JSON")
    files.add_argument("--allow-missing", action="store_true",
                       help="score what can be read; record missing/unreadable files instead of failing")
    what = run.add_argument_group("metrics")
    what.add_argument("--tier", choices=list(TIERS), default="expensive", help="metric set (default: expensive)")
    what.add_argument("--metrics", nargs="+", metavar="NAME", choices=list(METRIC_NAMES),
                      help="explicit metric names instead of a tier")
    what.add_argument("--protocol", choices=PROTOCOLS, default="pysodmetrics",
                      help="pysodmetrics: uint8, min-max stretch, reference empty-gt values (default); "
                           "raw: pred / 255, no stretch, empty gt scored by agreement")
    where = run.add_argument_group("execution and outputs")
    where.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default ./nobg-metrics-out)")
    where.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    where.add_argument("--batch-size", type=int, default=8, help="images decoded per loader step (default 8)")
    where.add_argument("--procs", default="auto", type=_procs_value,
                       help="scoring processes on CPU (auto: one per core when there are >= 64 images each)")
    where.add_argument("--workers", type=int, default=None,
                       help="decoding processes per scoring process (default: min(4, cores) / procs; "
                            "0: decode in the scoring process)")
    where.add_argument("--no-per-image", action="store_true",
                       help="skip per_image.csv; score equal-size images as one batched update")
    where.add_argument("--no-plots", action="store_true", help="skip curves.png / curves.pdf")
    where.add_argument("--quiet", action="store_true", help="no progress bars and no table on the console")
    return parser


def _procs_value(text: str) -> str:
    if text == "auto" or (text.isdigit() and int(text) >= 1):
        return text
    raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, got {text!r}")


def _plan(args: argparse.Namespace) -> Plan:
    configs = list(args.config) + [p for p in (args.dataset_json, args.method_json) if p is not None]
    if not configs and args.gt is None and not args.pred:
        plan = Plan()  # the bundled sample
        plan_gt = plan_from_args(str(SAMPLE_DIR / "gt"), [], None)
        plan.datasets = plan_gt.datasets
        for method in ("methodA", "methodB"):
            plan.methods[method] = {plan.datasets[0].name: Source(SAMPLE_DIR / method)}
        return plan
    if configs:
        if args.gt is not None:
            raise ConfigError("--gt and --config cannot be combined (put the dataset in the config)")
        plan = plan_from_configs(configs)
        if args.trimap is not None:
            raise ConfigError("--trimap and --config cannot be combined (put 'trimap' in the config's dataset)")
        if args.pred:
            if len(plan.datasets) != 1:
                raise ConfigError("--pred with a config needs exactly one dataset in it")
            for value in args.pred:
                method, path = split_named(value)
                plan.methods[method or Path(path).resolve().name] = {plan.datasets[0].name: Source(Path(path))}
        return plan
    if args.gt is None:
        raise ConfigError("--pred needs --gt (or a config with datasets)")
    return plan_from_args(args.gt, args.pred, args.trimap)


def _check_out(out: Path, plan: Plan) -> None:
    target = out.resolve()
    for folder in plan.folders():
        folder = folder.resolve()
        if target == folder or folder in target.parents:
            raise ConfigError(f"--out {out} lies inside the input folder {folder}; outputs never go there")


def _report(title: str, entries: list[dict[str, str]]) -> None:
    stream = sys.stderr
    if entries:
        print(f"{title} ({len(entries)}):", file=stream)
        for e in entries:
            print(f"  {e['dataset']} / {e['method']}: {e['file']}  [{e['reason']}]", file=stream)


def run_eval(args: argparse.Namespace) -> int:
    """The ``eval`` command; returns the exit status."""
    tune_cpu_allocator()  # freed tensor memory is reused, not faulted in again per image (forked ranks inherit)
    plan = _plan(args)
    check_plan(plan)
    _check_out(args.out, plan)
    if args.batch_size < 1 or (args.workers is not None and args.workers < 0):
        raise ConfigError("--batch-size must be >= 1 and --workers >= 0")
    try:
        device = pick_device(args.device)
    except RuntimeError as error:
        raise ConfigError(str(error)) from None
    initialised = init_from_env(device)
    try:
        rank, _ = world()
        jobs = build_jobs(plan)
        missing = problems(jobs, "missing")
        if missing and not args.allow_missing:
            if rank == 0:
                _report("missing files", missing)
                print("nobg-metrics: failed: missing files (use --allow-missing to score the rest); "
                      "nothing was written", file=sys.stderr)
            return 1
        try:
            procs = resolve_procs(args.procs, device, sum(len(job.items) for job in jobs))
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if procs > 1:  # this process only launches the ranks (it has run no torch op: safe to fork)
            return run_ranks(procs, run_eval, args)
        workers = args.workers if args.workers is not None else default_workers()
        options = RunOptions(args.tier, args.metrics, args.protocol, args.batch_size, workers,
                             args.allow_missing, not args.no_per_image, not args.quiet)
        scores = score(jobs, options, device)
        if scores.unreadable and not args.allow_missing:
            if rank == 0:
                _report("unreadable files", scores.unreadable)
                print("nobg-metrics: failed: unreadable files (use --allow-missing to score the rest); "
                      "nothing was written", file=sys.stderr)
            return 1
        if rank == 0:
            _write(args, jobs, scores)
        return 0
    finally:
        if initialised:
            import torch.distributed as dist

            dist.destroy_process_group()


def _write(args: argparse.Namespace, jobs, scores) -> None:
    document = results_document(jobs, scores, args.protocol, args.tier if args.metrics is None else "custom")
    markdown = markdown_table(document)
    writers = {"results.json": json_writer(document), "table.md": text_writer(markdown),
               "table.tex": text_writer(latex_table(document))}
    if not args.no_per_image:
        writers["per_image.csv"] = lambda path: write_per_image_csv(path, scores.per_image, scores.metric_names)
    plotted = not args.no_plots and have_matplotlib() and bool(scores.curves)
    if plotted:
        writers["curves.png"] = lambda path: draw_curves(jobs, scores.curves, [path])
        writers["curves.pdf"] = lambda path: draw_curves(jobs, scores.curves, [path])
    write_atomically(args.out, writers)
    if scores.skipped_metrics:
        print(f"note: metrics not available in this build were skipped: {scores.skipped_metrics}", file=sys.stderr)
    if not args.no_plots and not plotted:
        why = "matplotlib is not installed (pip install 'nobg_metrics[plot]')" if not have_matplotlib() else \
            "no F-measure curves among the metrics"
        print(f"note: curves not drawn: {why}", file=sys.stderr)
    for kind in ("missing", "unreadable"):
        _report(f"{kind} files (skipped, --allow-missing)", document[kind])
    if document["extra"]:
        print(f"note: {len(document['extra'])} files without gt were ignored (listed in results.json 'extra')",
              file=sys.stderr)
    if document["resized"]:
        print(f"note: {document['resized']} predictions were resized to their gt size", file=sys.stderr)
    if not args.quiet:
        print(markdown)
    print(f"wrote {', '.join(sorted(writers))} to {args.out}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``nobg-metrics`` console script and ``python -m nobg_metrics``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return run_eval(args)
    except ConfigError as error:
        print(f"nobg-metrics: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nobg-metrics: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
