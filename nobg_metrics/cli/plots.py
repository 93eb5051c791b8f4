"""Curves per dataset, one line per method: PR, ROC and F / E / IoU / Dice / BIoU against the threshold (curves.png, .pdf).

One figure: a row per dataset, a column per curve kind (:data:`~nobg_metrics.cli.curve_data.KINDS`) that the
run's metrics provide, one shared legend outside the axes (in a margin of its own). The lines are the saved mean per-image curves
(:mod:`nobg_metrics.cli.curve_data`). Style: :func:`load_style` (a YAML/JSON file, ``--plot-style``; every key
is checked, a wrong one is named with the closest valid one) and ``--highlight`` (own methods thick, solid, on
top; the others thinner and muted). Needs matplotlib (the ``plot`` extra), imported only when drawing; the
figure is a bare ``matplotlib.figure.Figure`` (no pyplot state, no GUI backend).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nobg_metrics.cli.curve_data import KINDS, CurveEntry

LINESTYLES = ("-", "--", "-.", ":", "solid", "dashed", "dashdot", "dotted")
METHOD_KEYS = ("color", "linestyle", "linewidth", "marker", "markevery", "alpha", "label")
STYLE_KEYS = ("methods", "figure_size", "panel_size", "font_size", "dpi", "zoom", "highlight", "legend", "lines")
LEGEND_KEYS = ("location", "columns", "font_size")
LINES_KEYS = ("width", "highlight_width", "muted_width", "muted_alpha")
ZOOM_KEYS = ("xlim", "ylim")

PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:gray", "tab:olive",
           "tab:cyan", "tab:red", "navy", "darkgoldenrod", "teal", "indigo", "maroon", "darkslategray")
"""Colours of the methods in run order (cycled with the line styles beyond 16 methods)."""
HIGHLIGHT_PALETTE = ("tab:red", "crimson", "darkred", "orangered")
"""Colours of the ``--highlight`` methods (the others then take :data:`PALETTE` without red)."""

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


@dataclass(frozen=True)
class Style:
    """The drawing options; every field has a default (an empty style file gives this)."""

    methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    figure_size: tuple[float, float] | None = None
    panel_size: tuple[float, float] = (4.0, 3.4)
    font_size: float = 9.0
    dpi: int = 150
    zoom: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    highlight: tuple[str, ...] = ()
    legend: dict[str, Any] = field(default_factory=lambda: {"location": "right", "columns": 1, "font_size": None})
    lines: dict[str, float] = field(default_factory=lambda: {"width": 1.6, "highlight_width": 2.6,
                                                              "muted_width": 1.0, "muted_alpha": 0.55})


def have_matplotlib() -> bool:
    """Whether the curves can be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _fail(where: str, message: str) -> None:
    from nobg_metrics.cli.config import ConfigError

    raise ConfigError(f"{where}: {message}")


def _keys(value: Any, allowed: tuple[str, ...], where: str) -> dict:
    from nobg_metrics.cli.config import closest

    if not isinstance(value, dict):
        _fail(where, f"expected a mapping with keys {', '.join(allowed)}; got {type(value).__name__}")
    for key in value:
        if key not in allowed:
            _fail(where, f"unknown key {key!r}{closest(str(key), allowed)} (expected {', '.join(allowed)})")
    return value


def _positive(value: Any, where: str, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or \
            (integer and not float(value).is_integer()):
        _fail(where, f"expected a positive {'integer' if integer else 'number'}; got {value!r}")
    return int(value) if integer else float(value)


def _pair(value: Any, where: str, increasing: bool = False) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2 or \
            any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
        _fail(where, f"expected two numbers [a, b]; got {value!r}")
    if increasing and not value[0] < value[1]:
        _fail(where, f"expected [low, high] with low < high; got {value!r}")
    return float(value[0]), float(value[1])


def _method_style(value: Any, where: str) -> dict[str, Any]:
    out = dict(_keys(value, METHOD_KEYS, where))
    try:
        from matplotlib.colors import is_color_like
        from matplotlib.markers import MarkerStyle
    except ImportError:  # checked where drawn
        is_color_like, MarkerStyle = None, None
    if "color" in out and is_color_like is not None and not is_color_like(out["color"]):
        _fail(f"{where}.color", f"not a matplotlib colour: {out['color']!r} (e.g. 'red', '#d62728', 'tab:blue')")
    if "linestyle" in out and out["linestyle"] not in LINESTYLES:
        _fail(f"{where}.linestyle", f"{out['linestyle']!r} is not one of {', '.join(LINESTYLES)}")
    for key in ("linewidth", "alpha"):
        if key in out:
            out[key] = _positive(out[key], f"{where}.{key}")
    if out.get("alpha", 1.0) > 1:
        _fail(f"{where}.alpha", f"expected an opacity in (0, 1]; got {out['alpha']!r}")
    if "markevery" in out:
        out["markevery"] = _positive(out["markevery"], f"{where}.markevery", integer=True)
    if "marker" in out:
        try:
            if MarkerStyle is not None:
                MarkerStyle(out["marker"])
        except (ValueError, TypeError):
            _fail(f"{where}.marker", f"not a matplotlib marker: {out['marker']!r} (e.g. 'o', 's', '^', 'x')")
    if "label" in out and not isinstance(out["label"], str):
        _fail(f"{where}.label", f"expected a string; got {out['label']!r}")
    return out


def parse_style(data: Any, where: str = "--plot-style") -> Style:
    """A :class:`Style` from the parsed file (``ConfigError`` naming the key of any problem)."""
    data = _keys({} if data is None else data, STYLE_KEYS, where)
    style = Style()
    if not isinstance(data.get("methods") or {}, dict):
        _fail(f"{where}: methods", f"expected a mapping method name -> line style; got {data['methods']!r}")
    methods = {str(name): _method_style(value, f"{where}: methods.{name}")
               for name, value in (data.get("methods") or {}).items()}
    changes: dict[str, Any] = {"methods": methods}
    for key in ("figure_size", "panel_size"):
        if data.get(key) is not None:
            size = _pair(data[key], f"{where}: {key}")
            changes[key] = (_positive(size[0], f"{where}: {key}[0]"), _positive(size[1], f"{where}: {key}[1]"))
    if "font_size" in data:
        changes["font_size"] = _positive(data["font_size"], f"{where}: font_size")
    if "dpi" in data:
        changes["dpi"] = _positive(data["dpi"], f"{where}: dpi", integer=True)
    zoom = {}
    for kind, limits in _keys(data.get("zoom") or {}, tuple(KINDS), f"{where}: zoom").items():
        zoom[kind] = {axis: _pair(v, f"{where}: zoom.{kind}.{axis}", increasing=True)
                      for axis, v in _keys(limits, ZOOM_KEYS, f"{where}: zoom.{kind}").items()}
    changes["zoom"] = zoom
    highlight = data.get("highlight") or []
    if isinstance(highlight, str) or not isinstance(highlight, list) or not all(isinstance(h, str) for h in highlight):
        _fail(f"{where}: highlight", f"expected a list of method names; got {highlight!r}")
    changes["highlight"] = tuple(highlight)
    legend = dict(style.legend, **_keys(data.get("legend") or {}, LEGEND_KEYS, f"{where}: legend"))
    if legend["location"] not in ("right", "bottom"):
        _fail(f"{where}: legend.location", f"expected 'right' or 'bottom'; got {legend['location']!r}")
    legend["columns"] = _positive(legend["columns"], f"{where}: legend.columns", integer=True)
    if legend["font_size"] is not None:
        legend["font_size"] = _positive(legend["font_size"], f"{where}: legend.font_size")
    changes["legend"] = legend
    lines = dict(style.lines, **_keys(data.get("lines") or {}, LINES_KEYS, f"{where}: lines"))
    changes["lines"] = {k: _positive(v, f"{where}: lines.{k}") for k, v in lines.items()}
    if changes["lines"]["muted_alpha"] > 1:
        _fail(f"{where}: lines.muted_alpha", f"expected an opacity in (0, 1]; got {lines['muted_alpha']!r}")
    return replace(style, **changes)


def load_style(path: Path) -> Style:
    """Read and check a style file (YAML by its .yaml/.yml extension, else JSON)."""
    from nobg_metrics.cli.config import _load

    return parse_style(_load(Path(path)), str(path))


def line_styles(methods: Sequence[str], style: Style, highlight: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``method -> matplotlib line keywords``: colours in run order, highlighted methods red-ish, thick, solid and
    on top (``zorder``), the others thinner and muted; a method's entry in the style file wins over all."""
    own = [m for m in methods if m in highlight]
    others = [m for m in methods if m not in highlight]
    palette = [c for c in PALETTE if c != "tab:red"] if own else list(PALETTE)
    lines = style.lines
    out = {}
    for i, method in enumerate(own):
        out[method] = {"color": HIGHLIGHT_PALETTE[i % len(HIGHLIGHT_PALETTE)], "linestyle": "-", "alpha": 1.0,
                       "linewidth": lines["highlight_width"], "zorder": 10 + i}
    for i, method in enumerate(others):
        dashes = ("-", "--", "-.", ":")[(i // len(palette)) % 4] if not own else ("--", "-.", ":", "-")[i % 4]
        out[method] = {"color": palette[i % len(palette)], "linestyle": dashes, "zorder": 2,
                       "linewidth": lines["muted_width"] if own else lines["width"],
                       "alpha": lines["muted_alpha"] if own else 1.0}
    for method in methods:
        out[method].update({k: v for k, v in style.methods.get(method, {}).items() if k != "label"})
        out[method]["label"] = style.methods.get(method, {}).get("label", method)
    return out


def available_kinds(entries: list[CurveEntry], wanted: Sequence[str] | None = None) -> list[str]:
    """The kinds (in :data:`KINDS` order, or ``wanted``'s) whose measures some entry holds."""
    kinds = list(wanted) if wanted else list(KINDS)
    return [k for k in kinds if any(all(m in e["values"] for m in KINDS[k]) for e in entries)]


def _limits(kind: str, style: Style, pr_xlim: Sequence[float] | None, pr_ylim: Sequence[float] | None) -> tuple:
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
        FigureCanvasAgg(figure)  # a renderer for the layout without a dummy print of the whole figure
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
                axis.set(title=f"{dataset}: {TITLES[kind]}", xlabel=x_label, ylabel=y_label)
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
            where = {"loc": "center right", "bbox_to_anchor": (1.0, 0.5)} if right else \
                {"loc": "lower center", "bbox_to_anchor": (0.5, 0.0)}
            artist = figure.legend([handles[m] for m in shown], [looks[m]["label"] for m in shown],
                                   ncol=legend["columns"], fontsize=legend["font_size"], frameon=False, **where)
            box = artist.get_window_extent(figure.canvas.get_renderer())
            room = (0.0, 0.0, 1.0 - box.width / figure.bbox.width, 1.0) if right else \
                (0.0, box.height / figure.bbox.height, 1.0, 1.0)
        figure.tight_layout(rect=room)
    return figure


def save_figure(figure: Any, path: Path, style: Style | None = None) -> None:
    """Save at the figure's size (format from the extension); the legend has its own margin (:func:`draw_figure`)."""
    style = style or Style()
    from matplotlib import rc_context

    with rc_context({"font.size": style.font_size}):
        figure.savefig(path, format=Path(path).suffix.lstrip("."), dpi=style.dpi)


def figure_writers(entries: list[CurveEntry], args: Any, formats: Sequence[str],
                   note: Callable[[str], None]) -> dict[str, Callable[[Path], None]]:
    """``format -> writer(path)`` drawing one figure from ``args`` (``plot_style``, ``highlight``, ``curve_kinds``,
    ``pr_xlim``, ``pr_ylim``) for all formats; notes what is not drawn. Empty when no kind can be drawn."""
    style = getattr(args, "plot_style", None) or Style()
    methods = list(dict.fromkeys(e["method"] for e in entries))
    from nobg_metrics.cli.config import closest

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

    return {fmt: writer for fmt in formats}


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
