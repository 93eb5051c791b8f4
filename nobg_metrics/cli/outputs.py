"""What the result files say: the ``results.json`` document and the per-dataset tables (table.md, table.tex).

How they are written — all at once or not at all, one run per folder — is :mod:`nobg_metrics.cli.writing`.

Schema of ``results.json`` (docs/cli.md "Outputs")::

    {"version", "protocol", "task", "tier", "preset" (with --preset), "metrics": [names], "skipped_metrics": [names],
     "higher_is_better": {name: bool}, "printed": {name: {"label", "scale"}} (matting protocols),
     "results": [{"dataset", "method", "images", "resized", "metrics": {name: value or null}}],
     "missing": [{"dataset", "method", "file", "reason"}], "unreadable": [...], "extra": [...],
     "not_scored": [...], "resized": total number of resized predictions}

Tables (which files: :mod:`nobg_metrics.cli.tables`; docs/tables.md): one per dataset, methods as rows, laid out by
the one rule of every table (:mod:`nobg_metrics.cli.table_model`: paper names under a ``--preset``, the top three of
each column marked at the printed precision, ``†`` on rows scored on a subset), ↑/↓ after each metric name. Matting
measures print in their benchmark's units with the unit in the header (``SAD (÷1000)``;
:data:`~nobg_metrics.cli.protocols.PRINTED`) — in a ``--task sod`` run in a table of their own, never beside the
SOD columns — HCE as an integer, the BiRefNet protocol its own columns, order and rounding; ``results.json`` keeps
the raw values.
The combined table's workbook: :mod:`nobg_metrics.cli.xlsx`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

from nobg_metrics._version import __version__
from nobg_metrics.cli.aliases import Aliases
from nobg_metrics.cli.jobs import Job, problems
from nobg_metrics.cli.names import MATTING_NAMES
from nobg_metrics.cli.protocols import BIREFNET_COLUMNS, PRINTED, birefnet_cell
from nobg_metrics.cli.runner import Scores
from nobg_metrics.cli.table_model import LEGEND, DatasetTable, TableRow, dataset_tables


def _clean(value: float) -> float | None:
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


COUNT_NAMES = ("hce", "birefnet_hce")
"""Metrics that count (HCE: corrections per image): printed as integers, as the DIS5K tables print them."""


def format_value(value: float | None, digits: int | None = None) -> str:
    """3 decimals below 10, 2 below 100, else 1 (SAD-like sums); ``digits`` decimals when given; ``-`` for a
    missing value.

    Example:
        >>> [format_value(v) for v in (0.03725, 18.456, 1234.56, None, float("nan"))]
        ['0.037', '18.46', '1234.6', '-', '-']
        >>> format_value(0.03725, digits=4)
        '0.0372'
    """
    if value is None or not math.isfinite(value):
        return "-"
    if digits is not None:
        return f"{value:.{digits}f}"
    magnitude = abs(value)
    return f"{value:.3f}" if magnitude < 10 else f"{value:.2f}" if magnitude < 100 else f"{value:.1f}"


def format_count(value: float | None) -> str:
    """An integer (``round``: half to even, like BiRefNet's ``int(x.round())``); ``-`` for a missing value."""
    return "-" if value is None or not math.isfinite(value) else str(round(value))


def _arrow(higher: bool | None) -> str:
    return "↑" if higher else "↓" if higher is False else ""


Column = tuple[str, str, Callable[[float | None], str]]
"""``(metric name, header label, cell formatter)``."""


def table_columns(document: dict[str, Any], digits: int | None = None) -> list[Column]:
    """``(metric name, header label, cell formatter)`` per column, in the protocol's order.

    Matting measures print in their benchmark's units (:data:`~nobg_metrics.cli.protocols.PRINTED`: ``SAD (÷1000)``)
    in every protocol, HCE as an integer; ``digits`` overrides the decimals of every other column (not BiRefNet's
    own rounding).
    """
    protocol, names = document["protocol"], document["metrics"]
    if protocol == "birefnet":
        task = document.get("task", "DIS5K")
        return [(name, field, functools.partial(_birefnet_cell, field, task))
                for field, name in BIREFNET_COLUMNS[task] if name in names]
    columns: list[Column] = []
    for name in names:
        if name in PRINTED and (protocol in ("dim", "p3m") or name in MATTING_NAMES):
            printed = PRINTED[name] if digits is None else dataclasses.replace(PRINTED[name], digits=digits)
            columns.append((name, printed.header(), printed.format))
        elif name in COUNT_NAMES:
            columns.append((name, name, format_count))
        else:
            columns.append((name, name, functools.partial(format_value, digits=digits)))
    return columns


def column_sets(document: dict[str, Any], digits: int | None = None) -> list[tuple[str, list[Column]]]:
    """The tables of a dataset: ``[("", columns)]``, except that a ``--task sod`` run prints its matting measures
    (the ``expensive`` tier's SAD, MSE, Grad, Conn) in a table of their own, ``("matting measures", columns)``, in
    Composition-1k units: a SAD sum never stands beside the SOD columns."""
    columns = table_columns(document, digits)
    if document.get("task", "sod") != "sod" or document["protocol"] == "birefnet":
        return [("", columns)]
    sets = [("", [c for c in columns if c[0] not in MATTING_NAMES]),
            ("matting measures", [c for c in columns if c[0] in MATTING_NAMES])]
    return [(title, cols) for title, cols in sets if cols] or [("", [])]


def _birefnet_cell(field: str, task: str, value: float | None, dataset: str = "") -> str:
    """BiRefNet's cell; a value that is null in results.json was NaN (printed ``nan``, as BiRefNet prints it),
    except HCE off ``DIS-`` datasets, which is not scored there (``-``)."""
    if value is None and (field != "HCE" or "DIS-" in dataset):
        value = math.nan
    return birefnet_cell(field, value, task)


def as_number(cell: str) -> float | None:
    """The number a printed cell shows (``.912`` -> 0.912), or ``None`` (``-``, ``nan``)."""
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def cell_text(formatter: Callable[..., str], value: float | None, dataset: str) -> str:
    """A formatted cell (BiRefNet's cells also need the dataset: HCE is scored on ``DIS-`` datasets only)."""
    if isinstance(formatter, functools.partial) and formatter.func is _birefnet_cell:
        return formatter(value, dataset)
    return formatter(value)


def _aliases(aliases: Aliases | None) -> Aliases:
    return aliases if aliases is not None else Aliases()


def datasets_of(document: dict[str, Any], aliases: Aliases | None = None) -> list[str]:
    """The run's datasets, in the aliases' order (then the run's)."""
    return _aliases(aliases).order("datasets", list(dict.fromkeys(r["dataset"] for r in document["results"])))


def _marked(row: TableRow, tex: bool) -> list[str]:
    """A row's cells with their top-1/2/3 marks and the subset mark on the first (:mod:`~nobg_metrics.cli.table_model`)."""
    from nobg_metrics.cli.tables import RANK_LATEX, RANK_MARKDOWN, SUBSET_MARK

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
    laid out as every table of the run (:mod:`~nobg_metrics.cli.table_model`: headers, top-3 marks, ``†``)."""
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


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#", "$": r"\$",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)


def latex_table(document: dict[str, Any], digits: int | None = None, aliases: Aliases | None = None) -> str:
    """One booktabs ``tabular`` per dataset (needs ``\\usepackage{booktabs}``), laid out as :func:`markdown_table`;
    top-1/2/3 as ``\\first`` / ``\\second`` / ``\\third`` (declared with ``\\providecommand``); aliases print as
    written (LaTeX)."""
    from nobg_metrics.cli.tables import RANK_LATEX_DEFAULTS

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
            lines.append(" & ".join([names.shown("methods", row.method, tex=True)] + _marked(row, True)) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        notes = _subset_notes(table, names, True)
        if notes:
            lines.append(r"\par\footnotesize " + r" \\ ".join(notes))
        parts.append("\n".join(lines + [r"\end{table}"]))
    head = ["\n".join(RANK_LATEX_DEFAULTS)] if marked else []
    return "\n\n".join(head + parts) + "\n"


WORST_K = 10
"""Images listed per method and metric in ``worst.md``."""


def worst_markdown(document: dict[str, Any], rows: list[dict[str, Any]], k: int = WORST_K) -> str:
    """``worst.md``: per dataset / method, the ``k`` worst images of every metric with a direction (lowest first
    when higher is better), printed as the tables print them; ties keep the image order.

    Example:
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
        parts += lines + [""]
    return "\n".join(parts)
