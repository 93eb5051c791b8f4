"""The two pages of :mod:`~nobg_metrics.cli.outputs.structured_report`: instances (COCO / LVIS AP per IoU type) and
panoptic (PQ / SQ / RQ), from the run's parsed files and its in-memory extras.

Example (a page from a results.json alone):
    >>> document = {"command": "instances", "iou_type": "segm", "results": {"map": 0.5, "map_small": -1.0},
    ...             "per_class": [{"category_id": 1, "name": "cat", "map": 0.5}], "summary": []}
    >>> text = instances_page({"results.json": document})
    >>> 'id="categories"' in text and 'class="sortable categories"' in text and "http:" not in text
    True
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nobg_metrics.cli.outputs.structured_report import (
    WorstImage,
    cell,
    curves_section,
    errors_section,
    intervals_section,
    number,
    page,
    read_outputs,
    table,
    text_cell,
    worst_section,
    write_page,
)

IOU_TYPES = ("bbox", "segm", "boundary")
AREAS = ("all", "small", "medium", "large")
GROUPS = ("rare", "common", "frequent")


def iou_types(document: dict[str, Any]) -> list[tuple[str, str]]:
    """``(iou type, key prefix)`` of an instances results.json: one type's keys unprefixed, several prefixed."""
    declared = document.get("iou_type") or "segm"
    declared = [declared] if isinstance(declared, str) else list(declared)
    results = document.get("results", {})
    if "map" in results:
        return [(declared[0], "")]
    return [(t, f"{t}_") for t in [*declared, *(t for t in IOU_TYPES if t not in declared)] if f"{t}_map" in results]


def key_label(key: str) -> str:
    """``map`` -> ``AP``, ``map_50`` -> ``AP50``, ``mar_100`` -> ``AR@100``, ``map_small`` -> ``AP small``.

    Example:
        >>> [key_label(k) for k in ("map", "map_50", "mar_100", "mar_small", "count")]
        ['AP', 'AP50', 'AR@100', 'AR small', 'count']
    """
    for stem, name in (("map", "AP"), ("mar", "AR")):
        if key == stem:
            return name
        if key.startswith(stem + "_"):
            rest = key[len(stem) + 1:]
            return f"{name}{rest}" if stem == "map" and rest.isdigit() else f"{name}@{rest}" if rest.isdigit() \
                else f"{name} {rest}"
    return key


def _per_class_interval(stats: dict[str, Any] | None, category: Any, key: str) -> tuple[Any, Any] | None:
    """The interval of ``per_class/<category>/<key>`` in stats.json's first result, if it has one."""
    if not stats or not stats.get("results"):
        return None
    entry = next(iter(stats["results"].values())).get(f"per_class/{category}/{key}")
    return (entry["low"], entry["high"]) if entry and entry.get("low") is not None else None


def _largest_recall_cap(results: dict[str, Any], prefix: str) -> str | None:
    caps = [int(key[len(prefix) + 4:]) for key in results if key.startswith(prefix + "mar_")
            and key[len(prefix) + 4:].isdigit()]
    return f"mar_{max(caps)}" if caps else None


def _breakdown(document: dict[str, Any], types: list[tuple[str, str]], show: Callable[[Any], str]) -> list[str]:
    """The area ranges (and LVIS' frequency groups) per IoU type: AP and AR at the largest max-dets."""
    results = document.get("results", {})
    headers, rows = ["area"], {area: [text_cell(area)] for area in AREAS}
    for iou_type, prefix in types:
        cap = _largest_recall_cap(results, prefix)
        headers += [f"{iou_type} AP", f"{iou_type} {key_label(cap) if cap else 'AR'}"]
        for area in AREAS:
            suffix = "" if area == "all" else f"_{area}"
            recall = (prefix + cap) if area == "all" and cap else f"{prefix}mar{suffix}"
            rows[area] += [cell(results.get(f"{prefix}map{suffix}"), show), cell(results.get(recall), show)]
    parts = ['<h2 id="areas">Area breakdown</h2>',
             '<p class="note">COCO area ranges (small &lt; 32², medium &lt; 96², large); "-": no ground truth in '
             "that range.</p>", table(headers, list(rows.values()))]
    if any(f"{prefix}map_{group}" in results for _, prefix in types for group in GROUPS):
        rows_g = [[text_cell(group)] + [cell(results.get(f"{prefix}map_{group}"), show) for _, prefix in types]
                  for group in GROUPS]
        parts += ["<h3>LVIS frequency groups</h3>", table(["group", *(f"{t} AP" for t, _ in types)], rows_g)]
    return parts


def _categories(rows: list[dict[str, Any]], columns: list[str], show: Callable[[Any], str],
                stats: dict[str, Any] | None, headers: list[str], fixed: Callable[[dict[str, Any]], list[str]],
                fixed_headers: list[str]) -> list[str]:
    body = [[*fixed(row), *(cell(row.get(key), show, _per_class_interval(stats, row.get("category_id"), key))
                            for key in columns)] for row in rows]
    return ['<h2 id="categories">Per category</h2>',
            '<p class="note">Click a header to sort (again: the other way).</p>',
            table([*fixed_headers, *headers], body, sortable=True, css="categories")]


def instances_page(files: dict[str, Any], curves: dict[str, Any] | None = None,
                   worst: list[WorstImage] | None = None) -> str:
    """The instances report page from ``file name -> parsed JSON`` (results.json, stats.json, errors.json)."""
    document, stats = files["results.json"], files.get("stats.json")
    show, types = number(3), iou_types(document)
    rows = document.get("per_class", [])
    columns = list(dict.fromkeys(k for row in rows for k in row if k not in ("category_id", "name")))
    prefixes = sorted((p for _, p in types if p), key=len, reverse=True)

    def header_of(key: str) -> str:
        prefix = next((p for p in prefixes if key.startswith(p)), "")
        return f"{prefix[:-1]} {key_label(key[len(prefix):])}" if prefix else key_label(key)

    detections = document.get("detections", {})
    header = " · ".join(html.escape(str(part)) for part in (
        f"nobg-metrics {document.get('version', '')}", f"gt {document.get('gt_json_file', '-')}",
        f"results {document.get('dt_json_file', '-')}", f"IoU {', '.join(t for t, _ in types)}",
        f"protocol {document.get('protocol', '-')}",
        f"{document.get('images_scored', '-')} of {document.get('images', '-')} images scored",
        f"{detections.get('evaluated', '-')} detections"))
    summary = ['<h2 id="summary">Summary</h2>',
               f"<pre>{html.escape(chr(10).join(document.get('summary', [])))}</pre>"]
    rule = ("Lowest per-image F1 = 2 TP / (2 TP + FP + FN) at IoU 0.5 of the detections scoring at least 0.5 "
            "(ties: more errors first).")
    sections = [
        ("summary", summary), ("areas", _breakdown(document, types, show)),
        ("categories", _categories(rows, columns, show, stats, [header_of(k) for k in columns],
                                   lambda row: [cell(row.get("category_id"), str), text_cell(row.get("name") or "")],
                                   ["id", "name"])),
        ("curves", curves_section(curves)), ("errors", errors_section(files.get("errors.json"))),
        ("intervals", intervals_section(stats, show)), ("worst", worst_section(worst, rule))]
    return page("nobg-metrics instances report", header, sections)


PANOPTIC_VALUES = ("pq", "sq", "rq")


def panoptic_page(files: dict[str, Any], categories: list[dict[str, Any]] | None = None,
                  worst: list[WorstImage] | None = None) -> str:
    """The panoptic report page from ``file name -> parsed JSON`` (results.json, stats.json); ``categories``: the
    gt JSON's (names, isthing)."""
    document, stats = files["results.json"], files.get("stats.json")
    show = number(1, 100)
    known = {str(c.get("id")): c for c in categories or []}
    first: dict[str, Any] = next(iter(stats["results"].values()), {}) if stats and stats.get("results") else {}

    def interval(key: str) -> tuple[Any, Any] | None:
        entry = first.get(key)
        return (entry["low"], entry["high"]) if entry and entry.get("low") is not None else None

    groups = [[text_cell(group), *(cell(document[group].get(v), show, interval(f"{group}/{v}"))
                                   for v in PANOPTIC_VALUES), cell(document[group].get("n"), str)]
              for group in ("All", "Things", "Stuff") if group in document]
    summary = ['<h2 id="summary">Summary</h2>', table(["", "PQ", "SQ", "RQ", "N"], groups),
               '<p class="note">×100 as panopticapi prints them. Panoptic quality has no area ranges: the breakdown '
               "is things / stuff (above) and per category (below).</p>"]
    rows = [{"category_id": key, **values} for key, values in document.get("per_class", {}).items()]

    def fixed(row: dict[str, Any]) -> list[str]:
        category = known.get(str(row["category_id"]), {})
        kind = "" if "isthing" not in category else "thing" if category["isthing"] else "stuff"
        return [cell(int(row["category_id"]), str), text_cell(category.get("name", "")), text_cell(kind)]

    rule = "Lowest per-image PQ (the mean over the categories present in the image)."
    sections = [
        ("summary", summary),
        ("categories", _categories(rows, list(PANOPTIC_VALUES), show, stats, ["PQ", "SQ", "RQ"], fixed,
                                   ["id", "name", "kind"])),
        ("intervals", intervals_section(stats, show)), ("worst", worst_section(worst, rule))]
    return page("nobg-metrics panoptic report", html.escape(f"nobg-metrics panoptic · {len(rows)} categories"),
                sections)


def write_instances_report(out_dir: Path, *, curves: dict[str, Any] | None = None,
                           worst: list[WorstImage] | None = None, optional: Any = None) -> Path:
    """``out_dir/report.html`` of an instances run (``curves``: :func:`~nobg_metrics.cli.outputs.
    structured_report_data.instance_curves`; ``worst``: the worst images)."""
    return write_page(out_dir, instances_page(read_outputs(out_dir, optional), curves, worst))


def write_panoptic_report(out_dir: Path, *, categories: list[dict[str, Any]] | None = None,
                          worst: list[WorstImage] | None = None, optional: Any = None) -> Path:
    """``out_dir/report.html`` of a panoptic run (``categories``: the gt JSON's, for names and things / stuff)."""
    return write_page(out_dir, panoptic_page(read_outputs(out_dir, optional), categories, worst))
