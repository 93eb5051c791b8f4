"""What the result files say: the ``results.json`` document and the per-dataset tables (table.md, table.tex).

How they are written — all at once or not at all, one run per folder — is :mod:`nobg_metrics.cli.writing`.

Schema of ``results.json`` (docs/cli.md "Outputs")::

    {"version", "protocol", "task", "tier", "preset" (with --preset), "metrics": [names], "skipped_metrics": [names],
     "higher_is_better": {name: bool}, "printed": {name: {"label", "scale"}} (matting protocols),
     "results": [{"dataset", "method", "images", "resized", "metrics": {name: value or null}}],
     "missing": [{"dataset", "method", "file", "reason"}], "unreadable": [...], "extra": [...],
     "not_scored": [...], "resized": total number of resized predictions}

Tables (which files: :mod:`nobg_metrics.cli.tables`; docs/tables.md): one per dataset, methods as rows, best value
of each column in bold (ties all bold, compared at the printed precision), ↑/↓ after each metric name. Matting
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

import nobg_metrics
from nobg_metrics.cli.aliases import Aliases
from nobg_metrics.cli.jobs import Job, problems
from nobg_metrics.cli.names import MATTING_NAMES
from nobg_metrics.cli.protocols import BIREFNET_COLUMNS, PRINTED, birefnet_cell
from nobg_metrics.cli.runner import Scores


def _clean(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def results_document(jobs: list[Job], scores: Scores, protocol: str, tier: str, task: str = "sod",
                     preset: str | None = None) -> dict[str, Any]:
    """The ``results.json`` object (raw values; ``printed`` says how the tables scale each matting metric; ``preset``:
    the run's ``--preset``, absent without one)."""
    return {**({"preset": preset} if preset is not None else {}),
        "version": nobg_metrics.__version__,
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


def _table_rows(document: dict[str, Any], dataset: str, columns: list[Column],
                aliases: Aliases | None = None) -> tuple[list[dict[str, Any]], list[list[str]], list[list[bool]]]:
    """Result entries (in the aliases' method order), formatted cells and bold flags of one dataset's table."""
    entries = {r["method"]: r for r in document["results"] if r["dataset"] == dataset}
    entries = [entries[m] for m in _aliases(aliases).order("methods", list(entries))]
    cells = [[cell_text(formatter, r["metrics"][name], dataset) for name, _, formatter in columns] for r in entries]
    bold = [[False] * len(columns) for _ in entries]
    for column, (name, _, _) in enumerate(columns):
        higher = document["higher_is_better"].get(name)
        shown = [as_number(row[column]) for row in cells]
        valid = [v for v in shown if v is not None]
        if higher is None or len(valid) < 2 or document["protocol"] == "birefnet":  # BiRefNet's table: no bold
            continue
        best = max(valid) if higher else min(valid)
        for row, value in enumerate(shown):
            bold[row][column] = value == best
    return entries, cells, bold


def datasets_of(document: dict[str, Any], aliases: Aliases | None = None) -> list[str]:
    """The run's datasets, in the aliases' order (then the run's)."""
    return _aliases(aliases).order("datasets", list(dict.fromkeys(r["dataset"] for r in document["results"])))


def markdown_table(document: dict[str, Any], digits: int | None = None, aliases: Aliases | None = None) -> str:
    """One markdown table per dataset (and one of its matting measures in a ``--task sod`` run: :func:`column_sets`)."""
    names = _aliases(aliases)
    parts = []
    for dataset in datasets_of(document, aliases):
        for title, columns in column_sets(document, digits):
            header = "| method | images | " + " | ".join(
                f"{label} {_arrow(document['higher_is_better'].get(n))}".strip() for n, label, _ in columns) + " |"
            entries, cells, bold = _table_rows(document, dataset, columns, aliases)
            heading = f"### {names.shown('datasets', dataset)}" + (f" ({title})" if title else "")
            lines = [heading, "", header, "|---|---:|" + "---:|" * len(columns)]
            for entry, row, flags in zip(entries, cells, bold):
                shown = [f"**{c}**" if f else c for c, f in zip(row, flags)]
                lines.append(f"| {names.shown('methods', entry['method'])} | {entry['images']} | "
                             + " | ".join(shown) + " |")
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#", "$": r"\$",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)


def latex_table(document: dict[str, Any], digits: int | None = None, aliases: Aliases | None = None) -> str:
    """One booktabs ``tabular`` per dataset (needs ``\\usepackage{booktabs}``); aliases print as written (LaTeX)."""
    names = _aliases(aliases)
    arrows = {True: r"$\uparrow$", False: r"$\downarrow$"}
    parts = []
    for dataset in datasets_of(document, aliases):
        for title, columns in column_sets(document, digits):
            header = " & ".join(["Method"] + [
                f"{tex_escape(label)} {arrows.get(document['higher_is_better'].get(n), '')}".strip()
                for n, label, _ in columns]) + r" \\"
            entries, cells, bold = _table_rows(document, dataset, columns, aliases)
            caption = names.shown("datasets", dataset, tex=True) + (f" ({title})" if title else "")
            lines = [f"% {dataset}" + (f" ({title})" if title else ""), r"\begin{table}[t]", r"\centering",
                     f"\\caption{{{caption}}}", r"\begin{tabular}{l" + "r" * len(columns) + "}", r"\toprule", header,
                     r"\midrule"]
            for entry, row, flags in zip(entries, cells, bold):
                shown = [f"\\textbf{{{c}}}" if f else c for c, f in zip(row, flags)]
                lines.append(" & ".join([names.shown("methods", entry["method"], tex=True)] + shown) + r" \\")
            lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


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
