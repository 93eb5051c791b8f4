"""The benchmark tables of a run, from ``results.json``'s document (docs/tables.md).

- ``table.md`` / ``table.tex``: one table per dataset (:func:`nobg_metrics.cli.outputs.results.markdown_table`), laid
out
  by the one rule of every table (:mod:`~nobg_metrics.cli.outputs.table_model`: headers, marks, ``†``);
- ``combined.md`` / ``.tex`` / ``.xlsx`` / ``.csv`` (``--combined``, or any ``--preset`` / ``--transpose``): one
  table, datasets as column groups and methods as rows (``--transpose``: datasets × metrics as rows), metric
  names as papers print them, the top three of each column marked, rows scored on a subset of a dataset's images
  marked ``†`` with a footnote. ``--aliases FILE`` (:mod:`~nobg_metrics.cli.outputs.aliases`) renames and orders
  datasets and methods; ``--digits N``.

Importable without torch (the argument parser uses it): the column formats (:mod:`~nobg_metrics.cli.outputs.cells`) and
the per-dataset tables (:mod:`~nobg_metrics.cli.outputs.results`) load the metric registry, and are imported when tables
are built. ``combined.xlsx`` needs openpyxl, the ``xlsx`` extra (:mod:`~nobg_metrics.cli.outputs.xlsx`).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.os_names import open_csv
from nobg_metrics.cli.core.writing import text_writer
from nobg_metrics.cli.outputs.aliases import Aliases, check_aliases, read_aliases
from nobg_metrics.cli.outputs.marks import (
    LEGEND,
    RANK_LATEX,
    RANK_LATEX_DEFAULTS,
    RANK_MARKDOWN,
    SUBSET_MARK,
    as_number,
    ranks,
)
from nobg_metrics.cli.outputs.table_model import datasets_of, full_counts, paper_header
from nobg_metrics.cli.outputs.xlsx import XLSX_EXTRA, XlsxCell, have_openpyxl, write_xlsx, xlsx_column

COMBINED = "combined"
"""Stem of the combined table's files."""

def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module."""
    group.add_argument("--combined", action="store_true",
                       help="also write combined.md/.tex/.xlsx/.csv: one table, datasets as column groups, methods "
                            "as rows, top-3 marks (implied by --preset and --transpose)")
    group.add_argument("--transpose", action="store_true",
                       help="combined table with datasets x metrics as rows and methods as columns")
    group.add_argument("--aliases", metavar="FILE", type=Path,
                       help="YAML/JSON {datasets: {NAME: ALIAS or null}, methods: {...}} (or lists): printed names "
                            "and order of the tables")
    group.add_argument("--digits", metavar="N", type=_digits, default=None,
                       help="decimals of every table value (default: 3 below 10, 2 below 100, else 1; matting "
                            "columns in their benchmark's units; HCE is an integer)")


def _digits(text: str) -> int:
    if text.isdigit() and int(text) <= 12:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected an integer 0..12, got {text!r}")


# ---------------------------------------------------------------------------------------------- the model
@dataclass
class Combined:
    """One combined table: ``cells[method][dataset]`` = list of ``(text, rank)`` in column order."""

    title: str
    datasets: list[str]
    methods: list[str]
    columns: list[tuple[str, str, str, bool | None]]  # name, Markdown label, LaTeX label, higher is better
    cells: dict[str, dict[str, list[tuple[str, int]]]]
    subset: dict[tuple[str, str], tuple[int, int]]  # (method, dataset) -> (scored, full) where scored < full


def combined_tables(document: dict[str, Any], digits: int | None, aliases: Aliases) -> list[Combined]:
    """The combined tables of a run (a ``--task sod`` run with matting measures: a second one of those)."""
    from nobg_metrics.cli.outputs.cells import (  # loads the metric registry (torch): not for the parser
        cell_text,
        column_sets,
    )

    datasets = datasets_of(document, aliases)
    methods = aliases.order("methods", list(dict.fromkeys(r["method"] for r in document["results"])))
    results = {(r["method"], r["dataset"]): r for r in document["results"]}
    full = full_counts(document)
    subset = {(r["method"], r["dataset"]): (r["images"], full[r["dataset"]]) for r in document["results"]
              if r["images"] < full[r["dataset"]]}
    tables = []
    for title, columns in column_sets(document, digits):
        higher = [document["higher_is_better"].get(name) for name, _, _ in columns]
        labels = [(name, *paper_header(name, label), up) for (name, label, _), up in zip(columns, higher)]
        text = {(m, d): [cell_text(fmt, results[m, d]["metrics"].get(n), d) if (m, d) in results else "-"
                         for n, _, fmt in columns] for m in methods for d in datasets}
        cells: dict[str, dict[str, list[tuple[str, int]]]] = {m: {d: [] for d in datasets} for m in methods}
        for d in datasets:
            for column, up in enumerate(higher):
                marks = ranks([as_number(text[m, d][column]) for m in methods], up)
                for m, rank in zip(methods, marks):
                    cells[m][d].append((text[m, d][column], rank))
        tables.append(Combined(title, datasets, methods, labels, cells, subset))
    return tables


def _arrow(higher: bool | None, tex: bool) -> str:
    if higher is None:
        return ""
    return (r" $\uparrow$" if higher else r" $\downarrow$") if tex else (" ↑" if higher else " ↓")


def _footnotes(table: Combined, aliases: Aliases, tex: bool) -> list[str]:
    mark = r"$^\dagger$" if tex else SUBSET_MARK
    return [f"{mark} {aliases.shown('methods', m, tex)} on {aliases.shown('datasets', d, tex)}: scored on "
            f"{table.subset[m, d][0]} of {table.subset[m, d][1]} images"
            for m in table.methods for d in table.datasets if (m, d) in table.subset]


def _marked(table: Combined, method: str, dataset: str, tex: bool) -> list[str]:
    out = []
    for index, (text, rank) in enumerate(table.cells[method][dataset]):
        if rank:
            text = f"{RANK_LATEX[rank]}{{{text}}}" if tex else RANK_MARKDOWN[rank].format(text)
        if index == 0 and (method, dataset) in table.subset:
            text += r"$^\dagger$" if tex else SUBSET_MARK
        out.append(text)
    return out


def combined_markdown(tables: list[Combined], aliases: Aliases, transpose: bool = False) -> str:
    """The combined tables in Markdown (a first body row holds the metric names under each dataset)."""
    parts = []
    for table in tables:
        labels = [f"{md}{_arrow(up, False)}" for _, md, _, up in table.columns]
        lines = [f"## {table.title.capitalize()}", ""] if table.title else []
        if transpose:
            lines += ["| dataset | metric | " + " | ".join(aliases.shown("methods", m) for m in table.methods) + " |",
                      "|---|---|" + "---:|" * len(table.methods)]
            for d in table.datasets:
                marked = {m: _marked(table, m, d, False) for m in table.methods}
                for index, label in enumerate(labels):
                    head = aliases.shown("datasets", d) if index == 0 else ""
                    lines.append(f"| {head} | {label} | " + " | ".join(marked[m][index] for m in table.methods) + " |")
        else:
            width = len(labels)
            groups = [aliases.shown("datasets", d) if i == 0 else "" for d in table.datasets for i in range(width)]
            lines += ["| | " + " | ".join(groups) + " |", "|---|" + "---:|" * len(groups),
                      "| **method** | " + " | ".join(labels * len(table.datasets)) + " |"]
            for m in table.methods:
                row = [c for d in table.datasets for c in _marked(table, m, d, False)]
                lines.append(f"| {aliases.shown('methods', m)} | " + " | ".join(row) + " |")
        notes = _footnotes(table, aliases, False)
        lines += ["", LEGEND] + (["", *notes] if notes else [])
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def combined_latex(tables: list[Combined], aliases: Aliases, transpose: bool = False) -> str:
    """The combined tables as booktabs ``tabular``s; top-1/2/3 via ``\\first``/``\\second``/``\\third``."""
    note = ("% needs \\usepackage{booktabs}; top-1/2/3 are \\first, \\second, \\third (define them first to "
            "restyle, e.g. \\newcommand{\\first}[1]{\\textcolor{red}{#1}})")
    parts = ["\n".join([note, *RANK_LATEX_DEFAULTS])]
    for table in tables:
        labels = [f"{tex}{_arrow(up, True)}" for _, _, tex, up in table.columns]
        lines = [r"\begin{table}[t]", r"\centering", f"\\caption{{{table.title.capitalize() or 'Results'}}}"]
        if transpose:
            lines += [r"\begin{tabular}{ll" + "r" * len(table.methods) + "}", r"\toprule",
                      " & ".join(["Dataset", "Metric"] + [aliases.shown("methods", m, True) for m in table.methods])
                      + r" \\"]
            for d in table.datasets:
                lines.append(r"\midrule")
                marked = {m: _marked(table, m, d, True) for m in table.methods}
                for index, label in enumerate(labels):
                    head = aliases.shown("datasets", d, True) if index == 0 else ""
                    lines.append(" & ".join([head, label] + [marked[m][index] for m in table.methods]) + r" \\")
        else:
            width = len(labels)
            lines += [r"\begin{tabular}{l" + "r" * width * len(table.datasets) + "}", r"\toprule",
                      " & ".join([""] + [f"\\multicolumn{{{width}}}{{c}}{{{aliases.shown('datasets', d, True)}}}"
                                         for d in table.datasets]) + r" \\",
                      " ".join(f"\\cmidrule(lr){{{2 + i * width}-{1 + (i + 1) * width}}}"
                               for i in range(len(table.datasets))),
                      " & ".join(["Method"] + labels * len(table.datasets)) + r" \\", r"\midrule"]
            for m in table.methods:
                row = [c for d in table.datasets for c in _marked(table, m, d, True)]
                lines.append(" & ".join([aliases.shown("methods", m, True), *row]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        notes = _footnotes(table, aliases, True)
        if notes:
            lines += [r"\par\footnotesize " + r" \\ ".join(notes)]
        lines.append(r"\end{table}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def write_combined_csv(path: Path, document: dict[str, Any], aliases: Aliases) -> None:
    """``dataset,method,images,of_images,<metric>...``: the raw dataset values (as results.json), aliases and
    order applied; ``of_images`` is the dataset's full count (:func:`full_counts`); empty cells for null."""
    full = full_counts(document)
    results = {(r["dataset"], r["method"]): r for r in document["results"]}
    methods = aliases.order("methods", list(dict.fromkeys(r["method"] for r in document["results"])))
    with open_csv(path, "w") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dataset", "method", "images", "of_images", *document["metrics"]])
        for d in datasets_of(document, aliases):
            for m in methods:
                if (d, m) in results:
                    r = results[d, m]
                    values = ["" if v is None or not math.isfinite(v) else repr(v)
                              for v in (r["metrics"].get(n) for n in document["metrics"])]
                    writer.writerow([aliases.shown("datasets", d), aliases.shown("methods", m), r["images"], full[d],
                                     *values])


def _number(text: str) -> tuple[float | str, int | None]:
    """A printed cell as an XLSX value: the number it shows with its decimals, or the text (``-``, ``nan``)."""
    value = as_number(text)
    if value is None:
        return text, None
    return value, len(text.split(".")[1]) if "." in text else 0


def xlsx_sheets(tables: list[Combined], aliases: Aliases, transpose: bool = False) -> list[tuple]:
    """The combined tables as sheets ``(name, rows, merged ranges)`` for
    :func:`~nobg_metrics.cli.outputs.xlsx.write_xlsx`: numbers as printed (decimals kept as the cell's number format),
    top-1/2/3 bold / underlined / italic, the datasets' names merged over their columns, the subset notes in rows under
    the table."""
    fonts = {0: "", 1: "b", 2: "u", 3: "i"}
    sheets = []
    for table in tables:
        labels = [f"{md}{_arrow(up, False)}" for _, md, _, up in table.columns]
        width, merged = len(labels), []
        rows: list[list[XlsxCell]]
        if transpose:
            corner: list[XlsxCell] = [("dataset", None, "b"), ("metric", None, "b")]
            rows = [corner + [(aliases.shown("methods", m), None, "b") for m in table.methods]]
            for d in table.datasets:
                for index, label in enumerate(labels):
                    head = (aliases.shown("datasets", d), None, "b") if index == 0 else (None, None, "")
                    rows.append([head, (label, None, "")] + [
                        (*_number(table.cells[m][d][index][0]), fonts[table.cells[m][d][index][1]])
                        for m in table.methods])
        else:
            rows = [[("method", None, "b")] + [(aliases.shown("datasets", d) if i == 0 else None, None, "b")
                                                for d in table.datasets for i in range(width)],
                    [(None, None, "")] + [(label, None, "b") for label in labels * len(table.datasets)]]
            merged = [f"{xlsx_column(1 + i * width)}1:{xlsx_column(i * width + width)}1"
                      for i in range(len(table.datasets)) if width > 1] + ["A1:A2"]
            for m in table.methods:
                rows.append([(aliases.shown("methods", m), None, "")] + [
                    (*_number(text), fonts[rank]) for d in table.datasets for text, rank in table.cells[m][d]])
        rows += [[]] + [[(note, None, "")] for note in _footnotes(table, aliases, False)]
        sheets.append(((table.title or "results").capitalize()[:31], rows, merged))
    return sheets


def table_writers(document: dict[str, Any], args: argparse.Namespace) -> dict[str, Callable]:
    """``file name -> writer(path)`` for every table of the run; without openpyxl ``combined.xlsx`` is left out and
    stderr says so, naming the extra to install."""
    from nobg_metrics.cli.outputs.results import latex_table, markdown_table  # loads torch: not for the parser

    digits = getattr(args, "digits", None)
    aliases = read_aliases(getattr(args, "aliases", None))
    check_aliases(aliases, list(dict.fromkeys(r["dataset"] for r in document["results"])),
                  list(dict.fromkeys(r["method"] for r in document["results"])))
    writers = {"table.md": text_writer(markdown_table(document, digits, aliases)),
               "table.tex": text_writer(latex_table(document, digits, aliases), tex=True)}
    transpose = getattr(args, "transpose", False)
    if getattr(args, "combined", False) or transpose or getattr(args, "preset", None):
        tables = combined_tables(document, digits, aliases)
        writers[f"{COMBINED}.md"] = text_writer(combined_markdown(tables, aliases, transpose))
        writers[f"{COMBINED}.tex"] = text_writer(combined_latex(tables, aliases, transpose), tex=True)
        writers[f"{COMBINED}.csv"] = lambda path: write_combined_csv(path, document, aliases)
        if have_openpyxl():
            writers[f"{COMBINED}.xlsx"] = lambda path: write_xlsx(path, xlsx_sheets(tables, aliases, transpose))
        else:
            print(f"note: {COMBINED}.xlsx not written: it needs openpyxl ({XLSX_EXTRA}); {COMBINED}.csv holds its "
                  "values", file=sys.stderr)
    return writers
