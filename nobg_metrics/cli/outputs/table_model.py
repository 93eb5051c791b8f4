"""The one layout rule of every results table of a run (docs/tables.md "One layout for every table").

``table.md`` / ``table.tex``, the console, ``report.html`` and the combined tables all print the same cells, built
here from results.json's document:

- **columns**: the protocol's order; a ``--task sod`` run's matting measures in a table of their own, in their
  benchmark's units (:func:`~nobg_metrics.cli.outputs.cells.column_sets`);
- **headers**: the names papers print (``S_α``, ``F^ω_β``; :func:`~nobg_metrics.cli.core.names.paper_label`, with the
  printed unit) in the combined tables and in every table of a ``--preset`` run; otherwise the per-dataset tables
  print the collection names (what ``--metrics`` takes) and the matting protocols' headers (``SAD (÷1000)``);
  BiRefNet's per-dataset table its own field names. ``↑`` / ``↓`` after each;
- **cells**: as :func:`~nobg_metrics.cli.outputs.cells.table_columns` formats them (``--digits``, units, HCE an
integer);
- **marks**: the top three distinct printed values of each column, ties sharing a rank
  (:func:`~nobg_metrics.cli.outputs.marks.ranks`): bold, underlined, italic (LaTeX ``\\first`` / ``\\second`` /
  ``\\third``, HTML classes); BiRefNet's per-dataset table has none, as BiRefNet prints it;
- **subset**: a row scored on fewer images than its dataset's full count gets ``†`` on its first value and a
  footnote (:func:`full_counts`).

Importable without torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nobg_metrics.cli.core.names import paper_label
from nobg_metrics.cli.outputs.aliases import Aliases
from nobg_metrics.cli.outputs.marks import as_number, ranks, tex_escape


@dataclass
class TableRow:
    """One method's row: its cells ``(text, rank)`` (rank 0: unmarked) and ``(scored, full)`` when on a subset."""

    method: str
    images: int
    cells: list[tuple[str, int]]
    subset: tuple[int, int] | None


@dataclass
class DatasetTable:
    """One dataset's table (or its matting measures' one: ``title``)."""

    dataset: str
    title: str
    names: list[str]
    headers: list[tuple[str, str]]
    """``(Markdown / plain text, LaTeX)`` of each column, without the arrow."""
    higher: list[bool | None]
    rows: list[TableRow]


def paper_header(name: str, label: str) -> tuple[str, str]:
    """``(Markdown, LaTeX)`` paper name of a column with the unit of its printed ``label`` (``SAD (÷1000)``).

    Examples:
        >>> paper_header("s_measure", "s_measure"), paper_header("sad", "SAD (÷1000)")
        (('S_α', '$S_\\\\alpha$'), ('SAD (÷1000)', 'SAD ($\\\\div$1000)'))
    """
    markdown, latex = paper_label(name)
    unit = label[len(label.split(" (")[0]):] if label.endswith(")") and " (" in label else ""
    return markdown + unit, latex + unit.replace("÷", r"$\div$").replace("×", r"$\times$")


def column_header(document: dict[str, Any], name: str, label: str) -> tuple[str, str]:
    """``(Markdown, LaTeX)`` header of a per-dataset column (module notes: paper names under a ``--preset``)."""
    if document.get("preset") is not None and document.get("protocol") != "birefnet":
        return paper_header(name, label)
    return label, tex_escape(label)


def full_counts(document: dict[str, Any]) -> dict[str, int]:
    """A dataset's full image count: the largest, over its methods, of scored + missing + unreadable images (the
    gt count, unless an image is absent for every method in a way results.json does not list)."""
    lost: dict[tuple[str, str], int] = {}
    for entry in document.get("missing", []) + document.get("unreadable", []):
        key = (entry["dataset"], entry["method"])
        lost[key] = lost.get(key, 0) + 1
    full: dict[str, int] = {}
    for r in document["results"]:
        count = r["images"] + lost.get((r["dataset"], r["method"]), 0) + lost.get((r["dataset"], "*"), 0)
        full[r["dataset"]] = max(full.get(r["dataset"], 0), count)
    return full


def datasets_of(document: dict[str, Any], aliases: Aliases | None = None) -> list[str]:
    """The run's datasets, in the aliases' order (then the run's)."""
    aliases = aliases if aliases is not None else Aliases()
    return aliases.order("datasets", list(dict.fromkeys(r["dataset"] for r in document["results"])))


def marked_protocol(document: dict[str, Any]) -> bool:
    """Whether the per-dataset tables mark the top three (all but BiRefNet's own table)."""
    return document.get("protocol") != "birefnet"


def dataset_tables(document: dict[str, Any], digits: int | None = None,
                   aliases: Aliases | None = None) -> list[DatasetTable]:
    """The per-dataset tables of a run, in the aliases' dataset and method order (module notes)."""
    from nobg_metrics.cli.outputs.cells import (  # loads the metric registry (torch): not for the parser
        cell_text,
        column_sets,
    )

    aliases = aliases if aliases is not None else Aliases()
    full = full_counts(document)
    marks = marked_protocol(document)
    tables = []
    for dataset in datasets_of(document, aliases):
        entries = {r["method"]: r for r in document["results"] if r["dataset"] == dataset}
        entries = {m: entries[m] for m in aliases.order("methods", list(entries))}
        for title, columns in column_sets(document, digits):
            higher = [document["higher_is_better"].get(name) for name, _, _ in columns]
            text = {m: [cell_text(fmt, r["metrics"].get(name), dataset) for name, _, fmt in columns]
                    for m, r in entries.items()}
            rank = {m: [0] * len(columns) for m in entries}
            if marks:
                for column, up in enumerate(higher):
                    for m, value in zip(entries, ranks([as_number(text[m][column]) for m in entries], up)):
                        rank[m][column] = value
            rows = [TableRow(m, r["images"], list(zip(text[m], rank[m])),
                             (r["images"], full[dataset]) if r["images"] < full[dataset] else None)
                    for m, r in entries.items()]
            headers = [column_header(document, name, label) for name, label, _ in columns]
            tables.append(DatasetTable(dataset, title, [n for n, _, _ in columns], headers, higher, rows))
    return tables
