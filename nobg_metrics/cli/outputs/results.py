"""What the result files say: the ``results.json`` document and the per-dataset tables (table.md, table.tex).

Which files a run writes: :mod:`nobg_metrics.cli.outputs.run_outputs`; how — all at once or not at all, one run per
folder — :mod:`nobg_metrics.cli.core.writing`.

Schema of ``results.json`` (docs/cli.md "Outputs")::

    {"version", "protocol", "task", "tier", "preset" (with --preset), "metrics": [names], "skipped_metrics": [names],
     "higher_is_better": {name: bool}, "printed": {name: {"label", "scale"}} (matting protocols),
     "results": [{"dataset", "method", "images", "resized", "metrics": {name: value or null}}],
     "missing": [{"dataset", "method", "file", "reason"}], "unreadable": [...], "extra": [...],
     "not_scored": [...], "resized": total number of resized predictions}

Tables (which files: :mod:`nobg_metrics.cli.outputs.tables`; docs/tables.md): one per dataset, methods as rows, laid out
by the one rule of every table (:mod:`nobg_metrics.cli.outputs.table_model`: paper names under a ``--preset``, the top
three of each column marked at the printed precision, ``†`` on rows scored on a subset), ↑/↓ after each metric name.
Matting measures print in their benchmark's units with the unit in the header (``SAD (÷1000)``;
:data:`~nobg_metrics.cli.eval.protocols.PRINTED`) — in a ``--task sod`` run in a table of their own, never beside the
SOD columns — HCE as an integer, the BiRefNet protocol its own columns, order and rounding (the column formats:
:mod:`nobg_metrics.cli.outputs.cells`; the marks: :mod:`nobg_metrics.cli.outputs.marks`); ``results.json`` keeps the raw
values. The combined table's workbook: :mod:`nobg_metrics.cli.outputs.xlsx`.
"""

from __future__ import annotations

import math
from typing import Any

from nobg_metrics._version import __version__
from nobg_metrics.cli.eval.jobs import Job, problems
from nobg_metrics.cli.eval.protocols import PRINTED
from nobg_metrics.cli.eval.runner import Scores
from nobg_metrics.cli.outputs.aliases import Aliases
from nobg_metrics.cli.outputs.cells import format_value, table_columns
from nobg_metrics.cli.outputs.marks import LEGEND, RANK_LATEX, RANK_LATEX_DEFAULTS, RANK_MARKDOWN, SUBSET_MARK
from nobg_metrics.cli.outputs.table_model import DatasetTable, TableRow, dataset_tables


def _clean(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def results_document(jobs: list[Job], scores: Scores, protocol: str, tier: str, task: str = "sod",
                     preset: str | None = None) -> dict[str, Any]:
    """The ``results.json`` object (raw values; ``printed`` says how the tables scale each matting metric; ``preset``:
    the run's ``--preset``, absent without one)."""
    return {**({"preset": preset} if preset is not None else {}),
        "version": __version__,
        "protocol": protocol,
        "task": task,
        "tier": tier,
        "metrics": scores.metric_names,
        "skipped_metrics": scores.skipped_metrics,
        "higher_is_better": scores.higher_is_better,
        "printed": {name: {"label": PRINTED[name].label, "scale": PRINTED[name].scale}
                    for name in scores.metric_names if protocol in ("dim", "p3m") and name in PRINTED},
        "results": [
            {"dataset": job.dataset, "method": job.method, "images": scores.images.get(job.index, 0),
             "resized": scores.resized.get(job.index, 0),
             "metrics": {name: _clean(scores.values.get(job.index, {}).get(name)) for name in scores.metric_names}}
            for job in jobs
        ],
        "missing": problems(jobs, "missing"),
        "unreadable": scores.unreadable,
        "extra": problems(jobs, "extra"),
        "not_scored": problems(jobs, "not_scored"),
        "resized": sum(scores.resized.values()),
    }


def _arrow(higher: bool | None) -> str:
    return "↑" if higher else "↓" if higher is False else ""


def _aliases(aliases: Aliases | None) -> Aliases:
    return aliases if aliases is not None else Aliases()


def _marked(row: TableRow, tex: bool) -> list[str]:
    """A row's cells with their top-1/2/3 marks and the subset mark on the first
    (:mod:`~nobg_metrics.cli.outputs.table_model`)."""
    cells = []
    for index, (text, rank) in enumerate(row.cells):
        if rank:
            text = f"{RANK_LATEX[rank]}{{{text}}}" if tex else RANK_MARKDOWN[rank].format(text)
        if index == 0 and row.subset is not None:
            text += r"$^\dagger$" if tex else SUBSET_MARK
        cells.append(text)
    return cells


def _subset_notes(table: DatasetTable, names: Aliases, tex: bool) -> list[str]:
    mark = r"$^\dagger$" if tex else "†"
    return [f"{mark} {names.shown('methods', row.method, tex)}: scored on {row.subset[0]} of {row.subset[1]} images"
            for row in table.rows if row.subset is not None]


def markdown_table(document: dict[str, Any], digits: int | None = None, aliases: Aliases | None = None) -> str:
    """One markdown table per dataset (and one of its matting measures in a ``--task sod`` run: :func:`column_sets`),
    laid out as every table of the run (:mod:`~nobg_metrics.cli.outputs.table_model`: headers, top-3 marks, ``†``)."""
    names = _aliases(aliases)
    parts, marked = [], False
    for table in dataset_tables(document, digits, aliases):
        header = "| method | images | " + " | ".join(
            f"{markdown} {_arrow(up)}".strip() for (markdown, _), up in zip(table.headers, table.higher)) + " |"
        heading = f"### {names.shown('datasets', table.dataset)}" + (f" ({table.title})" if table.title else "")
        lines = [heading, "", header, "|---|---:|" + "---:|" * len(table.names)]
        for row in table.rows:
            marked = marked or any(rank for _, rank in row.cells)
            lines.append(f"| {names.shown('methods', row.method)} | {row.images} | " + " | ".join(_marked(row, False))
                         + " |")
        notes = _subset_notes(table, names, False)
        parts.append("\n".join(lines + (["", *notes] if notes else [])))
    return "\n\n".join(parts + ([LEGEND] if marked else [])) + "\n"


def latex_table(document: dict[str, Any], digits: int | None = None, aliases: Aliases | None = None) -> str:
    """One booktabs ``tabular`` per dataset (needs ``\\usepackage{booktabs}``), laid out as :func:`markdown_table`;
    top-1/2/3 as ``\\first`` / ``\\second`` / ``\\third`` (declared with ``\\providecommand``); aliases print as
    written (LaTeX)."""
    names = _aliases(aliases)
    arrows: dict[bool | None, str] = {True: r"$\uparrow$", False: r"$\downarrow$", None: ""}
    parts, marked = [], False
    for table in dataset_tables(document, digits, aliases):
        header = " & ".join(["Method"] + [f"{latex} {arrows[up]}".strip()
                                          for (_, latex), up in zip(table.headers, table.higher)]) + r" \\"
        caption = names.shown("datasets", table.dataset, tex=True) + (f" ({table.title})" if table.title else "")
        lines = [f"% {table.dataset}" + (f" ({table.title})" if table.title else ""), r"\begin{table}[t]",
                 r"\centering", f"\\caption{{{caption}}}", r"\begin{tabular}{l" + "r" * len(table.names) + "}",
                 r"\toprule", header, r"\midrule"]
        for row in table.rows:
            marked = marked or any(rank for _, rank in row.cells)
            lines.append(" & ".join([names.shown("methods", row.method, tex=True), *_marked(row, True)]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        notes = _subset_notes(table, names, True)
        if notes:
            lines.append(r"\par\footnotesize " + r" \\ ".join(notes))
        parts.append("\n".join([*lines, r"\end{table}"]))
    head = ["\n".join(RANK_LATEX_DEFAULTS)] if marked else []
    return "\n\n".join(head + parts) + "\n"


WORST_K = 10
"""Images listed per method and metric in ``worst.md``."""


def worst_markdown(document: dict[str, Any], rows: list[dict[str, Any]], k: int = WORST_K) -> str:
    """``worst.md``: per dataset / method, the ``k`` worst images of every metric with a direction (lowest first
    when higher is better), printed as the tables print them; ties keep the image order.

    Examples:
        >>> document = {"protocol": "dim", "metrics": ["sad"], "higher_is_better": {"sad": False},
        ...             "results": [{"dataset": "D", "method": "M"}]}
        >>> rows = [{"dataset": "D", "method": "M", "image": f"i{v}", "sad": v * 1000.0} for v in (1, 3, 2)]
        >>> worst_markdown(document, rows, k=2).splitlines()[-1]
        '| SAD (÷1000) ↓ | i3 (3.00), i2 (2.00) |'
    """
    columns = [c for c in table_columns(document) if document["higher_is_better"].get(c[0]) is not None]
    if document["protocol"] == "birefnet":  # its cells print 1.0 as ".000"; the list prints plain numbers
        columns = [(name, label, format_value) for name, label, _ in columns]
    parts = [f"# The {k} worst images per method and metric", ""]
    for result in document["results"]:
        own = [r for r in rows if r["dataset"] == result["dataset"] and r["method"] == result["method"]]
        lines = [f"## {result['dataset']} / {result['method']}", "", "| metric | worst images |", "|---|---|"]
        for name, label, formatter in columns:
            higher = document["higher_is_better"][name]
            scored = [r for r in own if r.get(name) is not None and math.isfinite(r[name])]
            scored.sort(key=lambda r: r[name] if higher else -r[name])
            listed = ", ".join(f"{r['image']} ({formatter(r[name])})" for r in scored[:k])
            lines.append(f"| {label} {_arrow(higher)} | {listed or '-'} |")
        parts += [*lines, ""]
    return "\n".join(parts)
