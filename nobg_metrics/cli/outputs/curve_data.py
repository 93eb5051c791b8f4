"""The curves of a run in files: saved as curves.npz and curves.csv after scoring, read back (cache, merge, plot).

Importable without torch, numpy or matplotlib (the argument parser imports it): numpy is imported by the functions
that read and write curves.npz. Collecting the curves from the metrics: :mod:`nobg_metrics.cli.eval.curve_collection`;
drawing: :mod:`nobg_metrics.cli.outputs.plots`; redrawing a saved run: :mod:`nobg_metrics.cli.plot.command`.

**In memory** (``scores.curves[job.index]``, a :data:`JobCurves` dict of plain Python floats, exact float64)::

    {"thresholds": [T floats, k / (T - 1) for k = T-1 ... 0 (descending; index 0 is u8 >= 255)],
     "values": {measure: [T floats]},        # "precision", "recall", "f_measure", "e_measure", "iou", ...
     "sources": {measure: metric name}}      # :mod:`~nobg_metrics.cli.eval.curve_collection`, "Sources"

A :data:`CurveEntry` is the same dict with ``"dataset"`` and ``"method"`` added (what the files hold; a job
without scored images has no entry).

**curves.npz** (``numpy.load(path)``, no pickle): ``manifest`` is a 0-d string array holding JSON
``{"format": "nobg-metrics curves", "version": 1, "entries": [{"dataset", "method", "measures": [names],
"sources": {measure: metric}}]}``; entry ``i`` has ``entry{i}_thresholds`` :math:`(T,)` and
``entry{i}_{measure}`` :math:`(T,)` float64 arrays.

**curves.csv**: ``dataset,method,curve,metric,threshold,value``, one row per entry x measure x threshold (in
the thresholds' order; ``curve`` is the measure name, ``metric`` its source); floats as Python's ``repr``
(exact), ``nan`` where undefined.

:func:`curve_writers` writes them from ``(jobs, scores)``; :func:`load_curves` reads a
run folder back (npz first, else csv) and :func:`curves_by_job` turns the entries into ``scores.curves`` form
for a new plan's jobs (matched by dataset and method) — the job cache and ``nobg-metrics merge`` use these.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError
from nobg_metrics.cli.core.os_names import open_csv
from nobg_metrics.cli.outputs.curve_kinds import KINDS, CurveEntry, JobCurves
from nobg_metrics.cli.outputs.plot_style import load_style
from nobg_metrics.cli.outputs.plots import figure_writers, have_matplotlib

FORMAT, VERSION = "nobg-metrics curves", 1
SOURCES_RULE = 2
"""The rule naming each curve's source (:mod:`~nobg_metrics.cli.eval.curve_collection`); part of the ``--cache`` key, so
cached curves follow it."""
CSV_HEADER = ("dataset", "method", "curve", "metric", "threshold", "value")


class CurveDataError(ValueError):
    """A curve file that is missing, unreadable or not in this module's format (the message names it)."""


def add_drawing_arguments(parser: Any, kinds_flag: str) -> None:
    """The drawing flags shared by ``eval`` (``--curve-kinds``) and ``plot`` (``--kinds``)."""
    parser.add_argument("--plot-style", metavar="FILE", type=_style_file, default=None,
                        help="YAML/JSON style: per-method color/linestyle/linewidth/marker/label, figure_size or "
                             "panel_size, font_size, dpi, zoom, highlight, legend (docs/curves.md)")
    parser.add_argument("--highlight", metavar="METHOD", nargs="+", default=[],
                        help="own methods: drawn thick, solid and on top; the others thinner and muted")
    for axis in ("x", "y"):
        parser.add_argument(f"--pr-{axis}lim", metavar=("LO", "HI"), nargs=2, type=float, default=None,
                            help=f"zoom the PR plots' {'recall' if axis == 'x' else 'precision'} axis "
                                 "(papers: 0.6 1)")
    parser.add_argument(kinds_flag, dest="curve_kinds", metavar="KIND", nargs="+", choices=tuple(KINDS),
                        default=None, help=f"curve kinds to draw, among {' '.join(KINDS)} (default: all the "
                                           "run's metrics provide)")


def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module (the curve data itself is always saved)."""
    add_drawing_arguments(group, "--curve-kinds")


def _style_file(text: str) -> Any:
    """``--plot-style``: the style, read and checked while parsing (before any scoring)."""
    try:
        return load_style(Path(text))
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def curve_entries(jobs: list, scores: Any) -> list[CurveEntry]:
    """The entries of the jobs with curves and at least one scored image, in plan order."""
    entries = []
    for job in jobs:
        curves = scores.curves.get(job.index)
        if curves is not None and "values" not in curves:  # the earlier flat {precision, recall, f_measure, thresholds}
            curves = {"thresholds": curves["thresholds"], "sources": {k: "" for k in curves if k != "thresholds"},
                      "values": {k: v for k, v in curves.items() if k != "thresholds"}}
        if curves is not None and scores.images.get(job.index, 0) > 0:
            entries.append({"dataset": job.dataset, "method": job.method, **curves})
    return entries


def curves_by_job(entries: list[CurveEntry], jobs: list) -> dict[int, JobCurves]:
    """``job index -> JobCurves`` for the jobs whose dataset and method have an entry (``scores.curves`` form)."""
    found = {(e["dataset"], e["method"]): e for e in entries}
    return {job.index: {key: found[job.dataset, job.method][key] for key in ("thresholds", "values", "sources")}
            for job in jobs if (job.dataset, job.method) in found}


def write_npz(path: Path, entries: list[CurveEntry]) -> None:
    """Write ``entries`` as curves.npz (module notes)."""
    import numpy as np  # kept out of the argument parser, which imports this module

    manifest = {"format": FORMAT, "version": VERSION, "entries": [
        {"dataset": e["dataset"], "method": e["method"], "measures": list(e["values"]), "sources": e["sources"]}
        for e in entries]}
    # arrays by name (Any: numpy's stubs would match the ** below against savez's `allow_pickle: bool`)
    arrays: dict[str, Any] = {"manifest": np.array(json.dumps(manifest))}
    for i, entry in enumerate(entries):
        arrays[f"entry{i}_thresholds"] = np.asarray(entry["thresholds"], dtype=np.float64)
        for measure, curve in entry["values"].items():
            arrays[f"entry{i}_{measure}"] = np.asarray(curve, dtype=np.float64)
    with open(path, "wb") as handle:  # a file object: numpy adds no ".npz" to the name
        np.savez(handle, **arrays)


def read_npz(path: Path) -> list[CurveEntry]:
    """The entries of a curves.npz (:class:`CurveDataError` when it is not one)."""
    import numpy as np  # kept out of the argument parser, which imports this module

    try:
        with np.load(path, allow_pickle=False) as data:
            manifest = json.loads(str(data["manifest"]))
            if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
                raise CurveDataError(f"{path}: not a {FORMAT} file of version {VERSION}")
            entries = []
            for i, meta in enumerate(manifest["entries"]):
                entries.append({"dataset": meta["dataset"], "method": meta["method"],
                                "thresholds": data[f"entry{i}_thresholds"].tolist(),
                                "values": {m: data[f"entry{i}_{m}"].tolist() for m in meta["measures"]},
                                "sources": dict(meta["sources"])})
    except CurveDataError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CurveDataError(f"{path}: unreadable curve data ({type(error).__name__}: {error})") from None
    return entries


def _number(value: float) -> str:
    return repr(float(value)) if math.isfinite(value) else "nan"


def write_csv(path: Path, entries: list[CurveEntry]) -> None:
    """Write ``entries`` as curves.csv (module notes)."""
    with open_csv(path, "w") as handle:  # names as the OS's bytes
        writer = csv.writer(handle)
        writer.writerow(CSV_HEADER)
        for e in entries:
            for measure, curve in e["values"].items():
                source = e["sources"].get(measure, "")
                writer.writerows([e["dataset"], e["method"], measure, source, _number(t), _number(v)]
                                 for t, v in zip(e["thresholds"], curve))


def read_csv(path: Path) -> list[CurveEntry]:
    """The entries of a curves.csv (:class:`CurveDataError` when it is not one)."""
    found: dict[tuple[str, str], CurveEntry] = {}
    try:
        with open_csv(path) as handle:
            reader = csv.reader(handle)
            if tuple(next(reader, ())) != CSV_HEADER:
                raise CurveDataError(f"{path}: the header is not {','.join(CSV_HEADER)}")
            points: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
            for line, row in enumerate(reader, start=2):
                if len(row) != len(CSV_HEADER):
                    raise CurveDataError(f"{path}:{line}: expected {len(CSV_HEADER)} cells, got {len(row)}")
                dataset, method, measure, source, threshold, value = row
                entry = found.setdefault((dataset, method), {"dataset": dataset, "method": method,
                                                             "thresholds": None, "values": {}, "sources": {}})
                entry["sources"][measure] = source
                points.setdefault((dataset, method, measure), []).append((float(threshold), float(value)))
    except CurveDataError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, csv.Error) as error:
        raise CurveDataError(f"{path}: unreadable curve data ({type(error).__name__}: {error})") from None
    for (dataset, method, measure), pairs in points.items():
        entry = found[dataset, method]
        thresholds = [t for t, _ in pairs]
        if entry["thresholds"] is not None and thresholds != entry["thresholds"]:
            raise CurveDataError(f"{path}: {dataset} / {method}: the {measure} curve has other thresholds")
        entry["thresholds"] = thresholds
        entry["values"][measure] = [v for _, v in pairs]
    return list(found.values())


def load_curves(run_dir: Path) -> list[CurveEntry]:
    """The saved curves of a run folder: ``curves.npz``, else ``curves.csv`` (:class:`CurveDataError` if neither)."""
    run_dir = Path(run_dir)
    if (run_dir / "curves.npz").is_file():
        return read_npz(run_dir / "curves.npz")
    if (run_dir / "curves.csv").is_file():
        return read_csv(run_dir / "curves.csv")
    raise CurveDataError(f"{run_dir}: no curves.npz or curves.csv (a run whose metrics hold no curve saves none: "
                         "docs/curves.md)")


def curve_writers(jobs: list, scores: Any, args: argparse.Namespace) -> dict[str, Callable]:
    """``file name -> writer(path)``: curves.npz and curves.csv whenever a metric holds a curve, curves.png and
    curves.pdf unless ``--no-plots`` (notes on stderr when they are not drawn)."""
    entries = curve_entries(jobs, scores)
    if not entries:
        if not getattr(args, "no_plots", False):
            print("note: no curves saved or drawn: no metric of the run holds a threshold curve (f_measure_*, "
                  "e_measure_*, <measure>_max/_mean, pr_auc, roc_auc do)", file=sys.stderr)
        return {}
    writers: dict[str, Callable] = {"curves.npz": lambda path: write_npz(path, entries),
                                    "curves.csv": lambda path: write_csv(path, entries)}
    if getattr(args, "no_plots", False):
        return writers
    if not have_matplotlib():
        print("note: curves not drawn: matplotlib is not installed (pip install 'nobg_metrics[plot]'); "
              "curves.npz is saved: `nobg-metrics plot` draws it later", file=sys.stderr)
        return writers
    figures = figure_writers(entries, args, ("png", "pdf"), note=lambda text: print(f"note: {text}", file=sys.stderr))
    writers.update({f"curves.{fmt}": writer for fmt, writer in figures.items()})
    return writers
