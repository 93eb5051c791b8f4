"""The curves' style: the ``--plot-style`` file (YAML/JSON, every key checked, a wrong one named with the closest valid
one) and the per-method line keywords of a figure, with ``--highlight`` (own methods thick, solid, red-ish and on
top; the others thinner and muted). docs/curves.md lists the keys. Importable without torch or matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError, closest
from nobg_metrics.cli.core.json_yaml import load_json_or_yaml
from nobg_metrics.cli.outputs.curve_kinds import KINDS

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


def _fail(where: str, message: str) -> None:
    raise ConfigError(f"{where}: {message}")


def _keys(value: Any, allowed: tuple[str, ...], where: str) -> dict:
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
    try:  # the optional plot extra, loaded only to check a style's colours and markers
        from matplotlib.colors import is_color_like
        from matplotlib.markers import MarkerStyle
        checkable = True
    except ImportError:  # checked where drawn
        checkable = False
    if "color" in out and checkable and not is_color_like(out["color"]):
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
            if checkable:
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
    return parse_style(load_json_or_yaml(Path(path)), str(path))


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
