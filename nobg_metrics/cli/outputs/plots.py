"""Curves per dataset, one line per method: PR, ROC and F / E / IoU / Dice / BIoU against the threshold
(curves.png, .pdf).

One figure: a row per dataset, a column per curve kind (:data:`~nobg_metrics.cli.outputs.curve_kinds.KINDS`) that the
run's metrics provide, one shared legend outside the axes (in a margin of its own). The lines are the saved mean
per-image curves (:mod:`nobg_metrics.cli.outputs.curve_data`). Style: :mod:`nobg_metrics.cli.outputs.plot_style` (the
``--plot-style`` file and ``--highlight``). Needs matplotlib (the ``plot`` extra), imported only when drawing; the
figure is a bare ``matplotlib.figure.Figure`` (no pyplot state, no GUI backend).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import closest
from nobg_metrics.cli.core.os_names import readable
from nobg_metrics.cli.outputs.curve_kinds import KINDS, CurveEntry
from nobg_metrics.cli.outputs.plot_style import Style, line_styles

AXES: dict[str, tuple[str, str, tuple[float, float], tuple[float, float] | None]] = {
    "pr": ("recall", "precision", (0.0, 1.0), (0.0, 1.02)),
    "roc": ("false positive rate", "true positive rate (recall)", (0.0, 1.0), (0.0, 1.02)),
    "f": ("threshold (0..255)", "F-measure", (0.0, 255.0), (0.0, 1.02)),
    "e": ("threshold (0..255)", "E-measure", (0.0, 255.0), None),  # E of a perfect map is N / (N - 1) > 1
    "iou": ("threshold (0..255)", "IoU", (0.0, 255.0), (0.0, 1.02)),
    "dice": ("threshold (0..255)", "Dice", (0.0, 255.0), (0.0, 1.02)),
    "biou": ("threshold (0..255)", "grey boundary IoU", (0.0, 255.0), (0.0, 1.02)),
}
"""Per kind: x label, y label, default x and y limits (None: from the data, from 0)."""
TITLES = {"pr": "precision-recall", "roc": "ROC", "f": "F vs threshold", "e": "E vs threshold",
          "iou": "IoU vs threshold", "dice": "Dice vs threshold", "biou": "boundary IoU vs threshold"}


def have_matplotlib() -> bool:
    """Whether the curves can be drawn."""
    try:
        import matplotlib  # noqa: F401  (the optional plot extra: asked for only when curves are drawn)
    except ImportError:
        return False
    return True


def available_kinds(entries: list[CurveEntry], wanted: Sequence[str] | None = None) -> list[str]:
    """The kinds (in :data:`KINDS` order, or ``wanted``'s) whose measures some entry holds."""
    kinds = list(wanted) if wanted else list(KINDS)
    return [k for k in kinds if any(all(m in e["values"] for m in KINDS[k]) for e in entries)]


def _limits(kind: str, style: Style, pr_xlim: Sequence[float] | None, pr_ylim: Sequence[float] | None) -> tuple:
    xlim: tuple[float, ...] | None
    ylim: tuple[float, ...] | None
    _, _, xlim, ylim = AXES[kind]
    zoom = style.zoom.get(kind, {})
    xlim, ylim = zoom.get("xlim", xlim), zoom.get("ylim", ylim)
    if kind == "pr":
        xlim, ylim = tuple(pr_xlim) if pr_xlim else xlim, tuple(pr_ylim) if pr_ylim else ylim
    return xlim, ylim


def draw_figure(entries: list[CurveEntry], kinds: Sequence[str] | None = None, style: Style | None = None,
                highlight: Sequence[str] = (), pr_xlim: Sequence[float] | None = None,
                pr_ylim: Sequence[float] | None = None) -> Any:
    """The curves figure (a ``matplotlib.figure.Figure``): a row per dataset, a column per kind, one legend.

    Each line carries its method as ``gid`` (tests and callers find a method's lines by it).
    """
    # numpy and the optional plot extra, matplotlib (~1 s): loaded to draw, not when the argument parser loads
    import numpy as np
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    style = style or Style()
    highlight = tuple(highlight) + tuple(h for h in style.highlight if h not in highlight)
    kinds = available_kinds(entries, kinds)
    datasets = list(dict.fromkeys(e["dataset"] for e in entries))
    methods = list(dict.fromkeys(e["method"] for e in entries))
    looks = line_styles(methods, style, highlight)
    rows, cols = max(len(datasets), 1), max(len(kinds), 1)
    size = style.figure_size or (style.panel_size[0] * cols, style.panel_size[1] * rows)
    with rc_context({"font.size": style.font_size}):
        figure = Figure(figsize=size, dpi=style.dpi)
        canvas = FigureCanvasAgg(figure)  # a renderer for the layout without a dummy print of the whole figure
        axes = figure.subplots(rows, cols, squeeze=False)
        handles: dict[str, Any] = {}
        order = sorted(range(len(methods)), key=lambda i: methods[i] in highlight)  # own methods drawn last
        for row, dataset in enumerate(datasets):
            by_method = {e["method"]: e for e in entries if e["dataset"] == dataset}
            for col, kind in enumerate(kinds):
                axis = axes[row][col]
                x_label, y_label, _, _ = AXES[kind]
                for method in (methods[i] for i in order):
                    entry = by_method.get(method)
                    if entry is None or not all(m in entry["values"] for m in KINDS[kind]):
                        continue
                    values = entry["values"]
                    if kind in ("pr", "roc"):
                        y, x = (np.asarray(values[m]) for m in KINDS[kind])
                    else:
                        x, y = np.asarray(entry["thresholds"]) * 255.0, np.asarray(values[KINDS[kind][0]])
                    (line,) = axis.plot(x, y, gid=method, **looks[method])
                    handles.setdefault(method, line)
                xlim, ylim = _limits(kind, style, pr_xlim, pr_ylim)
                axis.set_xlim(*xlim)
                if ylim is not None:
                    axis.set_ylim(*ylim)
                else:
                    axis.set_ylim(bottom=0.0)
                axis.set(title=f"{readable(dataset)}: {TITLES[kind]}", xlabel=x_label, ylabel=y_label)
                axis.grid(True, alpha=0.3)
                if not axis.lines:
                    axis.text(0.5, 0.5, "not computed", ha="center", va="center", transform=axis.transAxes)
        if not datasets or not kinds:
            axes[0][0].text(0.5, 0.5, "no curves", ha="center", va="center")
        legend = style.legend
        shown = [m for m in methods if m in handles]
        room = (0.0, 0.0, 1.0, 1.0)  # the axes' share of the figure: the legend gets the rest
        if shown:
            right = legend["location"] == "right"
            where: dict[str, Any] = {"loc": "center right", "bbox_to_anchor": (1.0, 0.5)} if right else \
                {"loc": "lower center", "bbox_to_anchor": (0.5, 0.0)}
            artist = figure.legend([handles[m] for m in shown], [readable(looks[m]["label"]) for m in shown],
                                   ncol=legend["columns"], fontsize=legend["font_size"], frameon=False, **where)
            box = artist.get_window_extent(canvas.get_renderer())
            room = (0.0, 0.0, 1.0 - box.width / figure.bbox.width, 1.0) if right else \
                (0.0, box.height / figure.bbox.height, 1.0, 1.0)
        figure.tight_layout(rect=room)
    return figure


def save_figure(figure: Any, path: Path, style: Style | None = None) -> None:
    """Save at the figure's size (format from the extension); the legend has its own margin (:func:`draw_figure`)."""
    from matplotlib import rc_context  # the optional plot extra, loaded to draw (module notes)

    style = style or Style()
    with rc_context({"font.size": style.font_size}):
        figure.savefig(path, format=Path(path).suffix.lstrip("."), dpi=style.dpi)


def figure_writers(entries: list[CurveEntry], args: Any, formats: Sequence[str],
                   note: Callable[[str], None]) -> dict[str, Callable[[Path], None]]:
    """``format -> writer(path)`` drawing one figure from ``args`` (``plot_style``, ``highlight``, ``curve_kinds``,
    ``pr_xlim``, ``pr_ylim``) for all formats; notes what is not drawn. Empty when no kind can be drawn."""
    style = getattr(args, "plot_style", None) or Style()
    methods = list(dict.fromkeys(e["method"] for e in entries))
    for name in list(getattr(args, "highlight", None) or ()) + list(style.highlight):
        if name not in methods:
            note(f"--highlight {name!r}: no such method in the curves{closest(name, methods)}")
    wanted = getattr(args, "curve_kinds", None)
    kinds = available_kinds(entries, wanted)
    missing = [k for k in (wanted or ()) if k not in kinds]
    if missing:
        note(f"curve kinds not drawn (no metric of the run holds their curves: docs/curves.md): {' '.join(missing)}")
    if not kinds:
        return {}
    cache: dict[str, Any] = {}

    def writer(path: Path) -> None:
        if "figure" not in cache:
            cache["figure"] = draw_figure(entries, kinds, style, getattr(args, "highlight", None) or (),
                                          getattr(args, "pr_xlim", None), getattr(args, "pr_ylim", None))
        save_figure(cache["figure"], path, style)

    return dict.fromkeys(formats, writer)


def write_replacing(path: Path, write: Callable[[Path], None]) -> None:
    """Write ``path`` through a temporary file beside it, then rename (a reader never sees a partial file)."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
