"""Result files: results.json, per_image.csv, table.md, table.tex — written all at once or not at all.

Schema of ``results.json`` (docs/cli.md "Outputs")::

    {"version", "protocol", "tier", "metrics": [names], "skipped_metrics": [names],
     "higher_is_better": {name: bool},
     "results": [{"dataset", "method", "images", "resized", "metrics": {name: value or null}}],
     "missing": [{"dataset", "method", "file", "reason"}], "unreadable": [...], "extra": [...],
     "resized": total number of resized predictions}

Tables: one per dataset, methods as rows, best value of each column in bold (ties all bold, compared
at the printed precision), ↑/↓ after each metric name.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nobg_metrics
from nobg_metrics.cli.jobs import Job, problems
from nobg_metrics.cli.runner import Scores


def _clean(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def results_document(jobs: list[Job], scores: Scores, protocol: str, tier: str) -> dict[str, Any]:
    """The ``results.json`` object."""
    return {
        "version": nobg_metrics.__version__,
        "protocol": protocol,
        "tier": tier,
        "metrics": scores.metric_names,
        "skipped_metrics": scores.skipped_metrics,
        "higher_is_better": scores.higher_is_better,
        "results": [
            {"dataset": job.dataset, "method": job.method, "images": scores.images.get(job.index, 0),
             "resized": scores.resized.get(job.index, 0),
             "metrics": {name: _clean(scores.values.get(job.index, {}).get(name)) for name in scores.metric_names}}
            for job in jobs
        ],
        "missing": problems(jobs, "missing"),
        "unreadable": scores.unreadable,
        "extra": problems(jobs, "extra"),
        "resized": sum(scores.resized.values()),
    }


def format_value(value: float | None) -> str:
    """3 decimals below 10, 2 below 100, else 1 (SAD-like sums); ``-`` for a missing value.

    Example:
        >>> [format_value(v) for v in (0.03725, 18.456, 1234.56, None, float("nan"))]
        ['0.037', '18.46', '1234.6', '-', '-']
    """
    if value is None or not math.isfinite(value):
        return "-"
    magnitude = abs(value)
    return f"{value:.3f}" if magnitude < 10 else f"{value:.2f}" if magnitude < 100 else f"{value:.1f}"


def _arrow(higher: bool | None) -> str:
    return "↑" if higher else "↓" if higher is False else ""


def _table_rows(document: dict[str, Any], dataset: str) -> tuple[list[str], list[list[str]], list[list[bool]]]:
    """Method names, formatted cells and bold flags of one dataset's table."""
    entries = [r for r in document["results"] if r["dataset"] == dataset]
    names = document["metrics"]
    cells = [[format_value(r["metrics"][n]) for n in names] for r in entries]
    bold = [[False] * len(names) for _ in entries]
    for column, name in enumerate(names):
        higher = document["higher_is_better"].get(name)
        shown = [float(row[column]) if row[column] != "-" else None for row in cells]
        valid = [v for v in shown if v is not None]
        if higher is None or len(valid) < 2:
            continue
        best = max(valid) if higher else min(valid)
        for row, value in enumerate(shown):
            bold[row][column] = value == best
    return [r["method"] for r in entries], cells, bold


def _datasets(document: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(r["dataset"] for r in document["results"]))


def markdown_table(document: dict[str, Any]) -> str:
    """One markdown table per dataset."""
    names = document["metrics"]
    header = "| method | images | " + " | ".join(
        f"{n} {_arrow(document['higher_is_better'].get(n))}".strip() for n in names) + " |"
    parts = []
    for dataset in _datasets(document):
        methods, cells, bold = _table_rows(document, dataset)
        images = {r["method"]: r["images"] for r in document["results"] if r["dataset"] == dataset}
        lines = [f"### {dataset}", "", header, "|---|---:|" + "---:|" * len(names)]
        for method, row, flags in zip(methods, cells, bold):
            shown = [f"**{c}**" if f else c for c, f in zip(row, flags)]
            lines.append(f"| {method} | {images[method]} | " + " | ".join(shown) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#", "$": r"\$",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)


def latex_table(document: dict[str, Any]) -> str:
    """One booktabs ``tabular`` per dataset (needs ``\\usepackage{booktabs}``)."""
    names = document["metrics"]
    arrows = {True: r"$\uparrow$", False: r"$\downarrow$"}
    header = " & ".join(["Method"] + [
        f"{_tex(n)} {arrows.get(document['higher_is_better'].get(n), '')}".strip() for n in names]) + r" \\"
    parts = []
    for dataset in _datasets(document):
        methods, cells, bold = _table_rows(document, dataset)
        lines = [f"% {dataset}", r"\begin{table}[t]", r"\centering", f"\\caption{{{_tex(dataset)}}}",
                 r"\begin{tabular}{l" + "r" * len(names) + "}", r"\toprule", header, r"\midrule"]
        for method, row, flags in zip(methods, cells, bold):
            shown = [f"\\textbf{{{c}}}" if f else c for c, f in zip(row, flags)]
            lines.append(" & ".join([_tex(method)] + shown) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def write_per_image_csv(path: Path, rows: list[dict[str, Any]], names: list[str]) -> None:
    """``dataset,method,image,resized,<metric>...``; empty cells for NaN."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dataset", "method", "image", "resized", *names])
        for row in rows:
            values = [repr(v) if v is not None and math.isfinite(v) else "" for v in (row[n] for n in names)]
            writer.writerow([row["dataset"], row["method"], row["image"], int(row["resized"]), *values])


def write_atomically(out: Path, writers: dict[str, Callable[[Path], None]]) -> None:
    """Write every file into a temporary sibling folder, then move them into ``out`` (created if needed).

    A failure while writing leaves ``out`` untouched; other files already in ``out`` are kept.
    """
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        for name, writer in writers.items():
            writer(tmp / name)
        if not out.exists():
            os.rename(tmp, out)
            return
        for path in tmp.iterdir():
            os.replace(path, out / path.name)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def text_writer(text: str) -> Callable[[Path], None]:
    """A writer of a fixed UTF-8 text."""
    return lambda path: path.write_text(text, encoding="utf-8")


def json_writer(document: dict[str, Any]) -> Callable[[Path], None]:
    """A writer of a JSON document (strict: no NaN)."""
    return lambda path: path.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
