"""One run's outputs, written together: what ``eval`` and ``merge`` write from a run's jobs and scores
(docs/cli.md "Outputs"), and what they report on the console.

:func:`write_outputs` builds every writer — results.json (:mod:`~nobg_metrics.cli.outputs.results`), the tables
(:mod:`~nobg_metrics.cli.outputs.tables`), per_image.csv and worst.md, groups.md
(:mod:`~nobg_metrics.cli.outputs.groups`), the curves (:mod:`~nobg_metrics.cli.outputs.curve_data`), the statistics and
report.html (:mod:`~nobg_metrics.cli.outputs.report`) — and writes them all at once or not at all
(:mod:`~nobg_metrics.cli.core.writing`). ``eval`` (:mod:`~nobg_metrics.cli.eval.main`) calls it after scoring, ``merge``
(:mod:`~nobg_metrics.cli.merge.command`) on the runs it read back; :func:`report_entries` / :func:`report_not_scored`
list the files a run could not score, for both.
"""

from __future__ import annotations

import argparse
import sys

from nobg_metrics.cli.core.errors import InputError
from nobg_metrics.cli.core.os_names import readable
from nobg_metrics.cli.core.writing import json_writer, text_writer, write_atomically, write_per_image_csv
from nobg_metrics.cli.eval.jobs import Job, problems
from nobg_metrics.cli.eval.protocols import protocol_metrics
from nobg_metrics.cli.eval.runner import Scores
from nobg_metrics.cli.outputs.aliases import read_aliases
from nobg_metrics.cli.outputs.cells import table_columns
from nobg_metrics.cli.outputs.curve_data import curve_writers
from nobg_metrics.cli.outputs.groups import group_means, groups_markdown
from nobg_metrics.cli.outputs.report import report_writers
from nobg_metrics.cli.outputs.results import markdown_table, results_document, worst_markdown
from nobg_metrics.cli.outputs.table_model import column_header
from nobg_metrics.cli.outputs.tables import table_writers


def report_entries(title: str, entries: list[dict[str, str]], limit: int | None = None) -> None:
    """``title (count):`` and a line per entry (``dataset / method: file  [reason]``) on stderr; at most ``limit``."""
    stream = sys.stderr
    if entries:
        print(f"{title} ({len(entries)}):", file=stream)
        for e in entries[:limit]:
            print(readable(f"  {e['dataset']} / {e['method']}: {e['file']}  [{e['reason']}]"), file=stream)
        if limit is not None and len(entries) > limit:
            print(f"  ... and {len(entries) - limit} more (all in results.json)", file=stream)


NOT_SCORED_SHOWN = 20
"""How many not-scored entries the console lists (results.json has them all)."""


def report_not_scored(jobs: list[Job]) -> None:
    """The input entries that are neither scored nor missing/extra (each gt/trimap entry once)."""
    seen, entries = set(), []
    for entry in problems(jobs, "not_scored"):
        shared = entry["file"].startswith(("gt/", "trimap/"))
        key = (entry["dataset"], None if shared else entry["method"], entry["file"])
        if key not in seen:
            seen.add(key)
            entries.append(dict(entry, method="*") if shared else entry)
    report_entries("not scored (listed in results.json 'not_scored')", entries, NOT_SCORED_SHOWN)


def write_outputs(args: argparse.Namespace, jobs: list[Job], scores: Scores) -> None:
    """Write every output of a run into ``args.out`` at once (:func:`~nobg_metrics.cli.core.writing.write_atomically`),
    then report on stderr what was skipped, resized or not scored, the table on stdout (unless ``--quiet``) and the
    files written. A failed write is an :class:`~nobg_metrics.cli.core.errors.InputError` (nothing was replaced)."""
    fixed = protocol_metrics(args.protocol, args.task) is not None
    tier = "custom" if args.metrics is not None else "protocol" if fixed else args.tier or "expensive"
    document = results_document(jobs, scores, args.protocol, tier, args.task, preset=getattr(args, "preset", None))
    grouped = None
    if getattr(args, "groups", None):
        grouped = group_means(document["results"], scores.per_image, scores.metric_names, args.groups)
        document["groups"] = grouped
    markdown = markdown_table(document, getattr(args, "digits", None), read_aliases(getattr(args, "aliases", None)))
    writers = {"results.json": json_writer(document), **table_writers(document, args)}
    if not args.no_per_image:
        writers["per_image.csv"] = lambda path: write_per_image_csv(path, scores.per_image, scores.metric_names)
        if fixed:  # the benchmark protocols: the worst images of each method and metric
            writers["worst.md"] = text_writer(worst_markdown(document, scores.per_image))
    if grouped is not None:
        columns = [(n, column_header(document, n, label)[0], fmt) for n, label, fmt in table_columns(document)]
        writers["groups.md"] = text_writer(groups_markdown(grouped, columns))  # headers as the tables print them
    writers.update(curve_writers(jobs, scores, args))
    if not args.no_per_image:
        writers.update(report_writers(document, scores.per_image, jobs, args))
    try:
        write_atomically(args.out, writers)
    except OSError as error:
        raise InputError(f"could not write the outputs into {args.out}: {error}") from None
    if scores.skipped_metrics:
        print(f"note: metrics not scored: {scores.skipped_metrics}", file=sys.stderr)
    if args.protocol == "birefnet" and "birefnet_hce" in scores.metric_names and \
            not any("DIS-" in job.dataset for job in jobs):
        print("note: HCE is scored on DIS- datasets only (none here): its column shows -", file=sys.stderr)
    for kind in ("missing", "unreadable"):
        report_entries(f"{kind} files (skipped)", document[kind])
    report_not_scored(jobs)
    report_entries("files without gt, ignored (listed in results.json 'extra')", document["extra"], NOT_SCORED_SHOWN)
    if document["resized"]:
        print(f"note: {document['resized']} predictions were resized to their gt size", file=sys.stderr)
    if not args.quiet:
        print(readable(markdown))  # an OS name's undecodable bytes as \xNN (cli.core.os_names)
    print(f"wrote {', '.join(sorted(writers))} to {args.out}", file=sys.stderr)
