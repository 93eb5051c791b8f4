"""``report.html`` of ``nobg-metrics instances`` and ``nobg-metrics panoptic`` (docs/instance_segmentation.md,
docs/panoptic.md "Report page").

Built after the run's other files are written, from them: ``results.json`` always, ``stats.json`` (intervals and
paired tests) and ``errors.json`` (TIDE) when the run wrote them; plus what only the run holds in memory: the
precision-recall curves, the worst images' thumbnails and the category names
(:mod:`~nobg_metrics.cli.outputs.structured_report_data`). Sections: the summary, the area (instances) or things /
stuff (panoptic) breakdown, a per-category table that sorts when a header is clicked (a plain table without
JavaScript; ``#sort=<column>-<a|d>`` in the address sorts on load), the PR curves at IoU 0.5, 0.75 and the mean
per IoU type, TIDE's error bars, the confidence intervals, the worst images. One self-contained file: inline CSS,
JavaScript and SVG, thumbnails as ``data:`` PNGs, nothing fetched.

Importable without torch or numpy (the argument parsers add its flags).
"""

from __future__ import annotations

import argparse
import html
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.os_names import readable
from nobg_metrics.cli.core.writing import write_atomically
from nobg_metrics.cli.outputs.structured_report_svg import bars_svg, curves_svg


@dataclass
class WorstImage:
    """One card of the worst-images section: its name, its score and counts, a base64 PNG (None: not drawn)."""

    name: str
    value: str
    notes: str
    thumbnail: str | None


OPTIONAL = ("stats.json", "errors.json")
"""Files the page shows when the run wrote them."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The report flags of ``instances`` and ``panoptic`` (``--no-report`` as ``eval`` spells it)."""
    group = parser.add_argument_group("report page (report.html, written with --out)")
    group.add_argument("--no-report", action="store_true", help="skip report.html (every other file is written)")
    group.add_argument("--image-folder", type=Path, default=None, metavar="DIR",
                       help="the images (the gt JSON's images[].file_name) under the worst images' drawn "
                            "boundaries (default: a grey canvas)")


def wanted(args: argparse.Namespace) -> bool:
    """Whether the run writes report.html (``--out`` without ``--no-report``)."""
    return getattr(args, "out", None) is not None and not getattr(args, "no_report", False)


def read_outputs(out_dir: Path, optional: tuple[str, ...] | list[str] | None = None) -> dict[str, Any]:
    """``file name -> parsed JSON`` of ``results.json`` and of the ``optional`` files that exist (default: every
    name of :data:`OPTIONAL`; a run passes the ones it wrote, so a stale file of an older run is not shown)."""
    files = {"results.json": json.loads((out_dir / "results.json").read_text(encoding="utf-8"))}
    for name in OPTIONAL if optional is None else optional:
        if (out_dir / name).is_file():
            files[name] = json.loads((out_dir / name).read_text(encoding="utf-8"))
    return files


def write_page(out_dir: Path, page: str) -> Path:
    """Write ``out_dir/report.html`` atomically (OS names' undecodable bytes as ``\\xNN``)."""

    def write(path: Path) -> None:
        path.write_text(readable(page), encoding="utf-8")

    write_atomically(out_dir, {"report.html": write})
    return out_dir / "report.html"


CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f2f2f2;white-space:nowrap}td.text{text-align:left}
table.sortable th{cursor:pointer}table.sortable th[aria-sort=ascending]::after{content:" ▲"}
table.sortable th[aria-sort=descending]::after{content:" ▼"}.scroll{max-width:100%;overflow-x:auto;max-height:70vh}
.ci{color:#666;font-size:.8em;display:block;white-space:nowrap}.charts{display:flex;flex-wrap:wrap;gap:1em}
.chart{border:1px solid #ddd;background:#fff;font-family:system-ui,sans-serif}
.gallery{display:flex;flex-wrap:wrap;gap:1em}.card{border:1px solid #ccc;padding:.5em;font-size:.9em}
.card img{border:1px solid #888;display:block;margin:.3em 0;image-rendering:pixelated}
.note{color:#666;font-size:.9em}pre{background:#f6f6f6;padding:.5em;overflow-x:auto}
.gt{color:#00a000;font-weight:bold}.pred{color:#d000d0;font-weight:bold}"""

SORT_JS = """function sortTable(table, column, descending) {
  const body = table.tBodies[0], rows = Array.from(body.rows);
  const key = row => { const cell = row.cells[column];
    return cell.dataset.value !== undefined ? parseFloat(cell.dataset.value) : cell.textContent.trim(); };
  rows.sort((a, b) => {
    const x = key(a), y = key(b);
    if (typeof x === "number" || typeof y === "number") {
      if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) - Number.isNaN(y);
      return descending ? y - x : x - y;
    }
    return descending ? y.localeCompare(x) : x.localeCompare(y);
  });
  rows.forEach(row => body.appendChild(row));
  Array.from(table.tHead.rows[0].cells).forEach((th, i) =>
    th.setAttribute("aria-sort", i === column ? (descending ? "descending" : "ascending") : "none"));
}
document.querySelectorAll("table.sortable").forEach(table => {
  Array.from(table.tHead.rows[0].cells).forEach((th, i) => th.addEventListener("click", () =>
    sortTable(table, i, th.getAttribute("aria-sort") === "ascending")));
});
const wanted = location.hash.match(/^#sort=(\\d+)-([ad])$/), first = document.querySelector("table.sortable");
if (wanted && first) sortTable(first, parseInt(wanted[1], 10), wanted[2] === "d");"""
"""Click a header: ascending, click again: descending (missing values last); numbers sort by ``data-value``."""


def number(digits: int = 3, scale: float = 1.0) -> Callable[[Any], str]:
    """A formatter: ``None``, non-numbers and COCO's ``-1`` (no ground truth) as ``-``.

    Example:
        >>> number(1, 100)(0.4567), number()(-1), number()(None)
        ('45.7', '-', '-')
    """
    def show(value: Any) -> str:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value == -1 or value != value:
            return "-"
        return f"{scale * value:.{digits}f}"
    return show


def cell(value: Any, show: Callable[[Any], str], interval: tuple[Any, Any] | None = None) -> str:
    """A numeric ``<td>`` with its sort key (``data-value``; empty for a missing value) and an interval under it."""
    text = show(value)
    key = "" if text == "-" else repr(float(value))
    extra = f'<span class="ci">[{show(interval[0])}, {show(interval[1])}]</span>' if interval else ""
    return f'<td data-value="{key}">{html.escape(text)}{extra}</td>'


def table(headers: list[str], rows: list[list[str]], sortable: bool = False, css: str = "") -> str:
    """An HTML table; ``rows`` hold ready ``<td>`` strings."""
    classes = " ".join(c for c in ("sortable" if sortable else "", css) if c)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    return (f'<div class="scroll"><table class="{classes}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def text_cell(value: Any) -> str:
    return f'<td class="text">{html.escape(str(value))}</td>'


def curves_section(curves: dict[str, Any] | None) -> list[str]:
    """PR curves per IoU type (all categories, area all, the largest max-dets)."""
    parts = ['<h2 id="curves">Precision-recall curves</h2>']
    if not curves:
        return [*parts, '<p class="note">Not available: the page was built from the written files only.</p>']
    parts.append('<p class="note">Precision at each recall threshold averaged over the categories with ground '
                 "truths (area all, the largest max-dets), as AP averages it.</p><div class=\"charts\">")
    parts += [curves_svg(iou_type, entry["recall"], entry["curves"]) for iou_type, entry in curves.items()]
    return [*parts, "</div>"]


TIDE_MAIN = ("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss")
TIDE_SPECIAL = ("FalsePos", "FalseNeg")


def errors_section(errors: dict[str, Any] | None) -> list[str]:
    """TIDE's dAP bars per IoU type from errors.json (nothing when the run did not ask for ``--errors tide``)."""
    if not errors:
        return []
    parts = ['<h2 id="errors">Error analysis (TIDE)</h2>',
             '<p class="note">AP points gained by fixing each error type (TIDE dAP, from errors.json).</p>',
             '<div class="charts">']
    for iou_type, entry in errors.items():
        if not isinstance(entry, dict) or "main" not in entry:
            continue
        ap = entry.get("ap")
        title = f"{iou_type} main errors" + (f" (AP {ap:.2f})" if isinstance(ap, (int, float)) else "")
        main = {name: entry["main"].get(name) for name in TIDE_MAIN}
        special = {name: entry.get("special", {}).get(name) for name in TIDE_SPECIAL}
        parts += [bars_svg(title, main, "dAP"), bars_svg(f"{iou_type} special errors", special, "dAP")]
    return [*parts, "</div>"]


def intervals_section(stats: dict[str, Any] | None, show: Callable[[Any], str]) -> list[str]:
    """The bootstrap intervals and paired tests of stats.json (values other than per-category ones)."""
    if not stats:
        return []
    level = f"{100 * stats.get('bootstrap', {}).get('confidence', 1 - stats.get('alpha', 0.05)):g} %"
    resamples = stats.get("bootstrap", {}).get("resamples")
    parts = ['<h2 id="intervals">Confidence intervals</h2>',
             f'<p class="note">{html.escape(str(stats.get("bootstrap", {}).get("interval", "percentile")))} '
             f"bootstrap over {html.escape(str(stats.get('unit', 'image')))}s ({resamples} resamples, {level}); "
             f"seed {stats.get('seed')} (stats.json).</p>"]
    results = stats.get("results", {})
    names = list(dict.fromkeys(v for entry in results.values() for v in entry if not v.startswith("per_class/")))
    labels = list(results)
    rows = [[text_cell(value)] + [cell(results[label].get(value, {}).get("estimate"), show,
                                       (results[label][value]["low"], results[label][value]["high"])
                                       if results[label].get(value, {}).get("low") is not None else None)
                                  for label in labels] for value in names]
    parts.append(table(["value", *labels], rows))
    compared = []
    for comparison in stats.get("comparisons", []):
        for value, entry in comparison["values"].items():
            if value.startswith("per_class/"):
                continue
            interval = (entry["low"], entry["high"]) if entry.get("low") is not None else None
            result = f"{entry['better']} better" if entry.get("significant") else "tie (not significant)"
            p = entry.get("p_value")
            compared.append([text_cell(f"{comparison['a']} − {comparison['b']}"), text_cell(value),
                             cell(entry.get("difference"), show, interval),
                             text_cell("-" if p is None else "<0.001" if p < 0.001 else f"{p:.3f}"),
                             text_cell(result)])
    if compared:
        parts += ["<h3>Paired tests</h3>", table(["pair", "value", "difference", "p", "result"], compared)]
    return parts


def worst_section(worst: list[WorstImage] | None, rule: str) -> list[str]:
    """The worst images' cards (thumbnails: gt boundaries green, prediction boundaries magenta)."""
    parts = ['<h2 id="worst">Worst images</h2>']
    if worst is None:
        return [*parts, '<p class="note">Not available: the page was built from the written files only.</p>']
    parts += [f'<p class="note">{html.escape(rule)} Boundaries: <span class="gt">gt</span>, <span class="pred">'
              "prediction</span>, white where both lie.</p>", '<div class="gallery">']
    for item in worst:
        image = (f'<img alt="{html.escape(item.name)}" src="data:image/png;base64,{item.thumbnail}">'
                 if item.thumbnail else '<span class="note">not drawn</span>')
        parts.append(f'<div class="card"><b>{html.escape(item.name)}</b> · {html.escape(item.value)}{image}'
                     f'<span class="note">{html.escape(item.notes)}</span></div>')
    return [*parts, "</div>"]


def page(title: str, header: str, sections: list[tuple[str, list[str]]]) -> str:
    """The whole document: title, header line, links to the sections present, the sections, the sort script."""
    links = " · ".join(f'<a href="#{anchor}">{anchor}</a>' for anchor, parts in sections if parts)
    body = [f"<h1>{html.escape(title)}</h1>", f'<p class="note">{header}</p>', f"<p>{links}</p>"]
    for _, parts in sections:
        body += parts
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(body)
            + f"\n<script>{SORT_JS}</script>\n</body></html>\n")
