"""Inline SVG charts of the instances / panoptic report page: precision-recall curves and horizontal bars (TIDE's
dAP). Plain strings, no plotting library, no numpy: the page stays one self-contained file.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
"""Line and bar colours, in order."""


def _polylines(xs: Sequence[float], ys: Sequence[float | None], x0: float, y0: float, w: float,
               h: float) -> list[str]:
    """The ``points`` of each unbroken run of ``(x, y)`` (a ``None`` y breaks the line), in a ``w × h`` box whose
    lower-left corner is ``(x0, y0)``; x and y in [0, 1]."""
    runs: list[list[str]] = [[]]
    for x, y in zip(xs, ys):
        if y is None:
            runs.append([])
        else:
            runs[-1].append(f"{x0 + x * w:.1f},{y0 - y * h:.1f}")
    return [" ".join(run) for run in runs if run]


def curves_svg(title: str, recall: Sequence[float], curves: dict[str, Sequence[float | None]],
               width: int = 380, height: int = 290) -> str:
    """An SVG of precision (y) against recall (x), one line per entry of ``curves``, with axes and a legend.

    Example:
        >>> svg = curves_svg("segm", [0.0, 0.5, 1.0], {"IoU 0.50": [1.0, 0.5, None]})
        >>> svg.startswith("<svg") and "polyline" in svg and "IoU 0.50" in svg
        True
    """
    left, top, right, bottom = 46, 26, 12, 40
    w, h = width - left - right, height - top - bottom
    y0 = top + h
    parts = [f'<svg class="chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="{left + w / 2:.0f}" y="16" text-anchor="middle" font-weight="bold">{html.escape(title)}</text>']
    for step in range(6):
        value = step / 5
        x, y = left + value * w, y0 - value * h
        parts += [f'<line x1="{left}" y1="{y:.1f}" x2="{left + w}" y2="{y:.1f}" stroke="#e4e4e4"/>',
                  f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{y0}" stroke="#e4e4e4"/>',
                  f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{value:.1f}</text>',
                  f'<text x="{x:.1f}" y="{y0 + 15}" text-anchor="middle" font-size="11">{value:.1f}</text>']
    parts += [f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#888"/>',
              f'<text x="{left + w / 2:.0f}" y="{height - 6}" text-anchor="middle" font-size="12">recall</text>',
              f'<text x="12" y="{top + h / 2:.0f}" text-anchor="middle" font-size="12" '
              f'transform="rotate(-90 12 {top + h / 2:.0f})">precision</text>']
    for index, (label, ys) in enumerate(curves.items()):
        colour = COLOURS[index % len(COLOURS)]
        for points in _polylines(recall, ys, left, y0, w, h):
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        ly = top + 14 + 16 * index
        parts += [f'<line x1="{left + w - 150}" y1="{ly - 4}" x2="{left + w - 132}" y2="{ly - 4}" stroke="{colour}" '
                  'stroke-width="2"/>',
                  f'<text x="{left + w - 128}" y="{ly}" font-size="11">{html.escape(label)}</text>']
    parts.append("</svg>")
    return "".join(parts)


def bars_svg(title: str, values: dict[str, float | None], unit: str = "", width: int = 380) -> str:
    """An SVG of horizontal bars, one per entry of ``values`` (``None``: no bar, "-"), on a common scale.

    Example:
        >>> svg = bars_svg("segm main errors", {"Cls": 1.5, "Loc": 4.0, "Miss": None}, "dAP")
        >>> svg.count("<rect"), ">Loc<" in svg
        (2, True)
    """
    row, left, right, top = 22, 70, 60, 26
    height = top + row * len(values) + 8
    w = width - left - right
    largest = max([abs(v) for v in values.values() if v is not None] + [1e-12])
    parts = [f'<svg class="chart" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}">',
             f'<text x="{width / 2:.0f}" y="16" text-anchor="middle" font-weight="bold">{html.escape(title)}</text>']
    for index, (label, value) in enumerate(values.items()):
        y = top + row * index
        parts.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end" font-size="12">{html.escape(label)}</text>')
        if value is not None:
            length = max(abs(value) / largest * w, 1.0)
            parts.append(f'<rect x="{left}" y="{y + 3}" width="{length:.1f}" height="{row - 6}" '
                         f'fill="{COLOURS[index % len(COLOURS)]}"><title>{html.escape(label)}: {value:.2f} '
                         f"{html.escape(unit)}</title></rect>")
        shown = "-" if value is None else f"{value:.2f}"
        x = left + (0 if value is None else max(abs(value) / largest * w, 1.0)) + 4
        parts.append(f'<text x="{x:.1f}" y="{y + 14}" font-size="11">{shown}</text>')
    parts.append("</svg>")
    return "".join(parts)
