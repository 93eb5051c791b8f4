"""Statistics and the report page of a run (from the per-image records): stats.json, stats.md, report.html.

The numbers come from :func:`nobg_metrics.cli.outputs.stats.run_statistics` (docs/statistics.md); this module adds
the ``eval`` flags, the markdown and the page. ``report.html`` is one self-contained file: inline CSS, the
curves (``curves.png``, when the curve writer drew it into the same temporary folder before this writer
runs: :func:`~nobg_metrics.cli.outputs.run_outputs.write_outputs` adds the curve writers first) and the worst-image
thumbnails as base64 PNG.

Importable without torch or numpy (the argument parser uses it): the statistics (numpy) and the column formats
(the metric registry, torch) are imported when the report is made.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.arguments import count_at_least, level
from nobg_metrics.cli.core.os_names import readable
from nobg_metrics.cli.core.writing import text_writer
from nobg_metrics.cli.outputs.aliases import Aliases, read_aliases
from nobg_metrics.cli.outputs.report_gallery import gallery
from nobg_metrics.cli.outputs.table_model import column_header, dataset_tables


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module (checked by the parser: a bad value is a usage error before scoring)."""
    group.add_argument("--bootstrap", type=count_at_least(0), default=1000, metavar="N",
                       help="bootstrap resamples per confidence interval (stats.json, stats.md, report.html; "
                            "0: no intervals)")
    group.add_argument("--seed", type=count_at_least(0), default=0, help="seed of the bootstrap and permutation draws")
    group.add_argument("--alpha", type=level, default=0.05,
                       help="significance level of the paired tests (Holm-corrected); intervals are 1 - alpha")
    group.add_argument("--permutations", type=count_at_least(1), default=10000, metavar="N",
                       help="sign flips per paired test (all 2^n when 2^n <= N: exact)")
    group.add_argument("--worst-k", type=count_at_least(0), default=5, metavar="K",
                       help="worst images per method and metric")
    group.add_argument("--no-report", action="store_true", help="skip report.html (stats.json, stats.md are kept)")


def report_writers(document: dict[str, Any], rows: list[dict[str, Any]], jobs: list,
                   args: argparse.Namespace) -> dict[str, Callable]:
    """``file name -> writer(path)`` for the statistics and the report page (the statistics are computed here)."""
    from nobg_metrics.cli.outputs.stats import run_statistics  # numpy: not for the parser, which imports this module

    stats = run_statistics(document, rows, resamples=getattr(args, "bootstrap", 1000), seed=getattr(args, "seed", 0),
                           alpha=getattr(args, "alpha", 0.05), permutations=getattr(args, "permutations", 10000),
                           worst_k=getattr(args, "worst_k", 5))
    text = json.dumps(stats, indent=2, allow_nan=False) + "\n"
    writers: dict[str, Callable] = {"stats.json": lambda path: path.write_text(text, encoding="utf-8"),
                                    "stats.md": text_writer(stats_markdown(document, stats))}
    if not getattr(args, "no_report", False):  # OS names' undecodable bytes as \xNN (cli.core.os_names)
        digits, aliases = getattr(args, "digits", None), read_aliases(getattr(args, "aliases", None))
        writers["report.html"] = lambda path: path.write_text(
            readable(report_page(document, stats, jobs, path.parent / "curves.png", digits, aliases)), encoding="utf-8")
    return writers


def _cells(document: dict[str, Any]) -> dict[str, tuple[str, Callable[[float | None], str]]]:
    """``metric -> (title, formatter)`` as the run's tables print them: the matting protocols' labels, units and
    scales (``SAD (÷1000) ↓``), BiRefNet's column names, paper names under a ``--preset``
    (:func:`~nobg_metrics.cli.outputs.table_model.column_header`); plain names and ``format_value`` otherwise."""
    from nobg_metrics.cli.outputs.cells import (  # the metric registry (torch): not for the parser
        format_value,
        table_columns,
    )

    protocol = document.get("protocol", "pysodmetrics")
    columns = {name: (column_header(document, name, label)[0], format_value if protocol == "birefnet" else formatter)
               for name, label, formatter in table_columns({**document, "protocol": protocol})}
    return {name: (columns.get(name, (name, None))[0] + _arrow(document, name),
                   columns.get(name, (name, format_value))[1]) for name in document["metrics"]}


def _p(p: float | None) -> str:
    return "-" if p is None else "<0.001" if p < 0.001 else f"{p:.3f}"


def _arrow(document: dict[str, Any], metric: str) -> str:
    return {True: " ↑", False: " ↓"}.get(document["higher_is_better"].get(metric), "")


def _interval(ci: list[float] | None, formatter: Callable[[float | None], str]) -> str:
    return "-" if ci is None else f"[{formatter(ci[0])}, {formatter(ci[1])}]"


def _pair_result(pair: dict[str, Any]) -> str:
    if pair["p_value"] is None:
        return "no common image"
    return f"{pair['better']} better" if pair["significant"] else "tie (not significant)"


def _metric_blocks(document: dict[str, Any], stats: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(dataset, metric, entry)`` of every resampled metric, in plan order."""
    for block in stats["datasets"]:
        for metric, entry in block["metrics"].items():
            yield block["dataset"], metric, entry


def _ranked(entry: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(method, rank or "-")`` best first; methods without a ranking (no direction, no value) after them."""
    ranks = {r["method"]: r["rank"] for r in entry["ranking"]}
    return [(m, ranks[m]) for m in ranks] + [(m, "-") for m in entry["methods"] if m not in ranks]


def stats_markdown(document: dict[str, Any], stats: dict[str, Any]) -> str:
    """``stats.md``: per dataset and metric the intervals, the ranking and the pairwise tests; the worst images."""
    cells = _cells(document)
    level = f"{100 * stats['bootstrap']['confidence']:g} %"
    intro = (f"Percentile bootstrap ({stats['bootstrap']['resamples']} resamples, {level}) of the mean over images; "
             f"paired sign-flip tests, Holm-corrected at alpha = {stats['alpha']:g}; seed {stats['seed']} "
             "(docs/statistics.md).")
    lines = ["# Statistics", "", intro, ""]
    for metric, reason in stats["not_resampled"].items():
        lines.append(f"- `{metric}` not resampled: {reason}")
    for dataset, metric, entry in _metric_blocks(document, stats):
        title, show = cells[metric]
        lines += ["", f"## {dataset} — {title}", "",
                  "| rank | method | value | images | " + level + " interval |", "|---:|---|---:|---:|---|"]
        for method, rank in _ranked(entry):
            own = entry["methods"][method]
            interval = _interval(own["ci"], show)
            lines.append(f"| {rank} | {method} | {show(own['value'])} | {own['images']} | {interval} |")
        if entry["pairs"]:
            lines += ["", "| a | b | images | mean a − b | p | p (Holm) | result |",
                      "|---|---|---:|---:|---:|---:|---|"]
            for pair in entry["pairs"]:
                lines.append(f"| {pair['a']} | {pair['b']} | {pair['images']} | {show(pair['mean_difference'])} | "
                             f"{_p(pair['p_value'])} | {_p(pair['p_holm'])} | {_pair_result(pair)} |")
    lines += ["", f"## The {stats['worst_k']} worst images", "", "| dataset | method | metric | worst images |",
              "|---|---|---|---|"]
    for worst in stats["worst"]:
        title, show = cells[worst["metric"]]
        listed = ", ".join(f"{w['image']} ({show(w['value'])})" for w in worst["images"])
        lines.append(f"| {worst['dataset']} | {worst['method']} | {title} | {listed or '-'} |")
    return "\n".join(lines) + "\n"


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
.scroll{max-width:100%;overflow-x:auto;margin:.5em 0 1.5em}.scroll table{margin:0}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f2f2f2;white-space:nowrap}
.ci{color:#666;font-size:.8em;display:block;white-space:nowrap}.first{font-weight:bold}
.second{text-decoration:underline}.third{font-style:italic}.problems td{text-align:left;word-break:break-all}
.gallery{display:flex;flex-wrap:wrap;gap:1em}.card{border:1px solid #ccc;padding:.5em;max-width:100%}
.card img{image-rendering:pixelated;border:1px solid #888;margin-right:.2em;background:#fff}
.card figure{display:inline-block;margin:0}h1,h2,h3{overflow-wrap:anywhere}
figcaption{font-size:.75em;color:#666}.note{color:#666;font-size:.9em}code{background:#f4f4f4}"""


RANK_CLASS = {1: "first", 2: "second", 3: "third"}
"""The top-1/2/3 marks of the tables as HTML classes (bold, underlined, italic: :data:`_CSS`)."""


def _results_tables(document: dict[str, Any], stats: dict[str, Any], digits: int | None = None,
                    aliases: Any = None) -> list[str]:
    """The per-dataset tables laid out as table.md lays them out (:mod:`~nobg_metrics.cli.outputs.table_model`: a
    ``--task sod`` run's matting measures in a table of their own, paper names under a preset, the top three marked,
    ``†`` on rows scored on a subset), each interval under its value, each table in a box that scrolls sideways when it
    is wider than the page."""
    names = aliases if aliases is not None else Aliases()
    cells = _cells(document)
    intervals = {(d, m, method): own["ci"] for d, m, entry in _metric_blocks(document, stats)
                 for method, own in entry["methods"].items()}
    parts, marked = ['<h2 id="results">Results</h2>'], False
    for table in dataset_tables(document, digits, names):
        head = "".join(f"<th>{html.escape(markdown)}{_ARROWS[up]}</th>"
                       for (markdown, _), up in zip(table.headers, table.higher))
        title = names.shown("datasets", table.dataset) + (f" ({table.title})" if table.title else "")
        parts += [f"<h3>{html.escape(title)}</h3>",
                  f'<div class="scroll"><table class="results"><tr><th>method</th><th>images</th>{head}</tr>']
        for row in table.rows:
            tds = []
            for index, ((text, rank), name) in enumerate(zip(row.cells, table.names)):
                marked = marked or bool(rank)
                ci = intervals.get((table.dataset, name, row.method))
                extra = f'<span class="ci">{_interval(ci, cells[name][1])}</span>' if ci else ""
                dagger = "†" if index == 0 and row.subset is not None else ""
                mark = f' class="{RANK_CLASS[rank]}"' if rank else ""
                tds.append(f"<td{mark}>{html.escape(text)}{dagger}{extra}</td>")
            parts.append(f"<tr><td>{html.escape(names.shown('methods', row.method))}</td><td>{row.images}</td>"
                         f"{''.join(tds)}</tr>")
        parts.append("</table></div>")
        parts += [f'<p class="note">† {html.escape(names.shown("methods", row.method))}: scored on {row.subset[0]} '
                  f"of {row.subset[1]} images</p>" for row in table.rows if row.subset is not None]
    if marked:
        parts.append('<p class="note">Best of each column <span class="first">bold</span>, second <span '
                     'class="second">underlined</span>, third <span class="third">italic</span> (at the printed '
                     "precision).</p>")
    return parts


_ARROWS: dict[bool | None, str] = {True: " ↑", False: " ↓", None: ""}


def _statistics(document: dict[str, Any], stats: dict[str, Any]) -> list[str]:
    cells = _cells(document)
    level = f"{100 * stats['bootstrap']['confidence']:g} %"
    intro = (f'<p class="note">Percentile bootstrap ({stats["bootstrap"]["resamples"]} resamples, {level} intervals) '
             "of the mean over images; paired sign-flip tests on the images scored for both methods, Holm-corrected "
             f"at &alpha; = {stats['alpha']:g}; rank = 1 + number of methods significantly better; "
             f"seed {stats['seed']}.</p>")
    parts = ['<h2 id="statistics">Statistics</h2>', intro]
    for metric, reason in stats["not_resampled"].items():
        parts.append(f'<p class="note"><code>{html.escape(metric)}</code> not resampled: {html.escape(reason)}</p>')
    for dataset, metric, entry in _metric_blocks(document, stats):
        title, show = cells[metric]
        parts += [f"<h3>{html.escape(dataset)} — {html.escape(title)}</h3>",
                  '<table class="ranking"><tr><th>method</th><th>rank</th><th>value</th><th>images</th>'
                  + f"<th>{level} interval</th></tr>"]
        for method, rank in _ranked(entry):
            own = entry["methods"][method]
            parts.append(f"<tr><td>{html.escape(method)}</td><td>{rank}</td><td>{html.escape(show(own['value']))}</td>"
                         f"<td>{own['images']}</td><td>{html.escape(_interval(own['ci'], show))}</td></tr>")
        parts.append("</table>")
        if entry["pairs"]:
            parts.append('<table class="pairs"><tr><th>a</th><th>b</th><th>images</th><th>mean a − b</th><th>p</th>'
                         "<th>p (Holm)</th><th>result</th></tr>")
            for pair in entry["pairs"]:
                parts.append(f"<tr><td>{html.escape(pair['a'])}</td><td>{html.escape(pair['b'])}</td>"
                             f"<td>{pair['images']}</td><td>{html.escape(show(pair['mean_difference']))}</td>"
                             f"<td>{_p(pair['p_value'])}</td><td>{_p(pair['p_holm'])}</td>"
                             f"<td>{html.escape(_pair_result(pair))}</td></tr>")
            parts.append("</table>")
    return parts


PROBLEMS_SHOWN = 500
"""Entries of each kind the page lists (results.json has them all)."""

_PROBLEM_KINDS = (("missing", "missing"), ("unreadable", "unreadable"), ("extra", "without gt (ignored)"),
                  ("not_scored", "not scored"))


def _not_scored(document: dict[str, Any]) -> list[str]:
    """Every input the run did not score, by kind, as results.json lists them (nothing skipped silently)."""
    kinds = [(key, title, document.get(key) or []) for key, title in _PROBLEM_KINDS]
    if not any(entries for _, _, entries in kinds):
        return []
    parts = ['<h2 id="not-scored">Not scored</h2>',
             ('<p class="note">Every input file the run did not score, with the reason (results.json lists them '
             "under the same keys).</p>")]
    for key, title, entries in kinds:
        if not entries:
            continue
        parts += [f"<h3>{html.escape(title)} ({len(entries)})</h3>",
                  ('<div class="scroll"><table class="problems"><tr><th>dataset</th><th>method</th><th>file</th>'
                  "<th>reason</th></tr>")]
        for entry in entries[:PROBLEMS_SHOWN]:
            cells = "".join(f"<td>{html.escape(str(entry.get(field, '')))}</td>"
                            for field in ("dataset", "method", "file", "reason"))
            parts.append(f"<tr>{cells}</tr>")
        parts.append("</table></div>")
        if len(entries) > PROBLEMS_SHOWN:
            parts.append(f'<p class="note">... and {len(entries) - PROBLEMS_SHOWN} more (all in results.json '
                         f"'{key}').</p>")
    return parts


def report_page(document: dict[str, Any], stats: dict[str, Any], jobs: list, curves_png: Path | None = None,
                digits: int | None = None, aliases: Any = None) -> str:
    """The self-contained ``report.html`` (the curves only when ``curves_png`` exists; ``digits`` and ``aliases`` as
    the run's tables take them)."""
    curves = []
    if curves_png is not None and curves_png.is_file():
        data = base64.b64encode(curves_png.read_bytes()).decode("ascii")
        curves = ['<h2 id="curves">Curves</h2>',
                  f'<img alt="curves" style="max-width:100%" src="data:image/png;base64,{data}">']
    header = (f"nobg-metrics {html.escape(str(document.get('version', '')))} · protocol "
              f"{html.escape(str(document.get('protocol')))} · task {html.escape(str(document.get('task')))} · tier "
              f"{html.escape(str(document.get('tier')))}")
    problems = _not_scored(document)
    anchors = ("results", "curves", "statistics", "worst", "not-scored")
    links = " · ".join(f'<a href="#{anchor}">{anchor.replace("-", " ")}</a>' for anchor in anchors
                       if (anchor != "curves" or curves) and (anchor != "not-scored" or problems))
    body = [f"<h1>nobg-metrics report</h1><p class=\"note\">{header}</p><p>{links}</p>",
            *_results_tables(document, stats, digits, aliases), *curves, *_statistics(document, stats),
            *gallery(document, stats, jobs, _cells(document)), *problems]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>nobg-metrics report</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
