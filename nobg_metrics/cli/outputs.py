"""Result files: results.json, per_image.csv, table.md, table.tex — written all at once or not at all.

Writing (:func:`write_atomically`): every file goes into a temporary folder inside ``--out``
(``.nobg-metrics-tmp-*``), is flushed to disk, and is then renamed into place — ``results.json`` last —
while interrupting signals are held (:func:`nobg_metrics.cli.signals.deferred`): an interrupted or failed
run leaves the previous outputs as they were. :class:`OutputLock` holds ``--out/.nobg-metrics.lock``
(``flock``) for the whole run, so two runs into one folder never mix: the second fails at once.

Schema of ``results.json`` (docs/cli.md "Outputs")::

    {"version", "protocol", "task", "tier", "metrics": [names], "skipped_metrics": [names],
     "higher_is_better": {name: bool}, "printed": {name: {"label", "scale"}} (matting protocols),
     "results": [{"dataset", "method", "images", "resized", "metrics": {name: value or null}}],
     "missing": [{"dataset", "method", "file", "reason"}], "unreadable": [...], "extra": [...],
     "not_scored": [...], "resized": total number of resized predictions}

Tables: one per dataset, methods as rows, best value of each column in bold (ties all bold, compared
at the printed precision), ↑/↓ after each metric name. The matting protocols print each value in its
benchmark's units with the unit in the header (``SAD (÷1000)``; :data:`~nobg_metrics.cli.protocols.PRINTED`),
the BiRefNet protocol its own columns, order and rounding; ``results.json`` keeps the raw values.
"""

from __future__ import annotations

import csv
import errno
import functools
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nobg_metrics
from nobg_metrics.cli.config import ConfigError
from nobg_metrics.cli.jobs import Job, problems
from nobg_metrics.cli.protocols import BIREFNET_COLUMNS, PRINTED, birefnet_cell
from nobg_metrics.cli.runner import Scores
from nobg_metrics.cli.signals import checkpoint, deferred

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; runs into one folder are not detected there
    fcntl = None

LOCK_NAME = ".nobg-metrics.lock"
"""The lock file a run holds in ``--out`` (removed when the run ends)."""

TMP_PREFIX = ".nobg-metrics-tmp-"
"""Prefix of the temporary folder the outputs are written into before they are moved into ``--out``."""


class OutputBusy(Exception):
    """``--out`` is held by another run (exit status 4)."""


def _clean(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def results_document(jobs: list[Job], scores: Scores, protocol: str, tier: str, task: str = "sod") -> dict[str, Any]:
    """The ``results.json`` object (raw values; ``printed`` says how the tables scale each matting metric)."""
    return {
        "version": nobg_metrics.__version__,
        "protocol": protocol,
        "task": task,
        "tier": tier,
        "metrics": scores.metric_names,
        "skipped_metrics": scores.skipped_metrics,
        "higher_is_better": scores.higher_is_better,
        "printed": {name: {"label": PRINTED[name].label, "scale": PRINTED[name].scale}
                    for name in scores.metric_names if protocol in ("dim", "p3m") and name in PRINTED},
        "results": [
            {"dataset": job.dataset, "method": job.method, "images": scores.images.get(job.index, 0),
             "resized": scores.resized.get(job.index, 0),
             "metrics": {name: _clean(scores.values.get(job.index, {}).get(name)) for name in scores.metric_names}}
            for job in jobs
        ],
        "missing": problems(jobs, "missing"),
        "unreadable": scores.unreadable,
        "extra": problems(jobs, "extra"),
        "not_scored": problems(jobs, "not_scored"),
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


def table_columns(document: dict[str, Any]) -> list[tuple[str, str, Callable[[float | None], str]]]:
    """``(metric name, header label, cell formatter)`` per column, in the protocol's order."""
    protocol, names = document["protocol"], document["metrics"]
    if protocol == "birefnet":
        task = document.get("task", "DIS5K")
        return [(name, field, functools.partial(_birefnet_cell, field, task))
                for field, name in BIREFNET_COLUMNS[task] if name in names]
    if protocol in ("dim", "p3m"):
        return [(n, PRINTED[n].header(), PRINTED[n].format) if n in PRINTED else (n, n, format_value) for n in names]
    return [(n, n, format_value) for n in names]


def _birefnet_cell(field: str, task: str, value: float | None, dataset: str = "") -> str:
    """BiRefNet's cell; a value that is null in results.json was NaN (printed ``nan``, as BiRefNet prints it),
    except HCE off ``DIS-`` datasets, which is not scored there (``-``)."""
    if value is None and (field != "HCE" or "DIS-" in dataset):
        value = math.nan
    return birefnet_cell(field, value, task)


def _as_number(cell: str) -> float | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _cell(formatter: Callable[..., str], value: float | None, dataset: str) -> str:
    if isinstance(formatter, functools.partial) and formatter.func is _birefnet_cell:
        return formatter(value, dataset)
    return formatter(value)


def _table_rows(document: dict[str, Any], dataset: str) -> tuple[list[str], list[list[str]], list[list[bool]]]:
    """Method names, formatted cells and bold flags of one dataset's table."""
    entries = [r for r in document["results"] if r["dataset"] == dataset]
    columns = table_columns(document)
    cells = [[_cell(formatter, r["metrics"][name], dataset) for name, _, formatter in columns] for r in entries]
    bold = [[False] * len(columns) for _ in entries]
    for column, (name, _, _) in enumerate(columns):
        higher = document["higher_is_better"].get(name)
        shown = [_as_number(row[column]) for row in cells]
        valid = [v for v in shown if v is not None]
        if higher is None or len(valid) < 2 or document["protocol"] == "birefnet":  # BiRefNet's table: no bold
            continue
        best = max(valid) if higher else min(valid)
        for row, value in enumerate(shown):
            bold[row][column] = value == best
    return [r["method"] for r in entries], cells, bold


def _datasets(document: dict[str, Any]) -> list[str]:
    return list(dict.fromkeys(r["dataset"] for r in document["results"]))


def markdown_table(document: dict[str, Any]) -> str:
    """One markdown table per dataset."""
    columns = table_columns(document)
    header = "| method | images | " + " | ".join(
        f"{label} {_arrow(document['higher_is_better'].get(n))}".strip() for n, label, _ in columns) + " |"
    parts = []
    for dataset in _datasets(document):
        methods, cells, bold = _table_rows(document, dataset)
        images = {r["method"]: r["images"] for r in document["results"] if r["dataset"] == dataset}
        lines = [f"### {dataset}", "", header, "|---|---:|" + "---:|" * len(columns)]
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
    columns = table_columns(document)
    arrows = {True: r"$\uparrow$", False: r"$\downarrow$"}
    header = " & ".join(["Method"] + [
        f"{_tex(label)} {arrows.get(document['higher_is_better'].get(n), '')}".strip() for n, label, _ in columns]) \
        + r" \\"
    parts = []
    for dataset in _datasets(document):
        methods, cells, bold = _table_rows(document, dataset)
        lines = [f"% {dataset}", r"\begin{table}[t]", r"\centering", f"\\caption{{{_tex(dataset)}}}",
                 r"\begin{tabular}{l" + "r" * len(columns) + "}", r"\toprule", header, r"\midrule"]
        for method, row, flags in zip(methods, cells, bold):
            shown = [f"\\textbf{{{c}}}" if f else c for c, f in zip(row, flags)]
            lines.append(" & ".join([_tex(method)] + shown) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


WORST_K = 10
"""Images listed per method and metric in ``worst.md``."""


def worst_markdown(document: dict[str, Any], rows: list[dict[str, Any]], k: int = WORST_K) -> str:
    """``worst.md``: per dataset / method, the ``k`` worst images of every metric with a direction (lowest first
    when higher is better), printed as the tables print them; ties keep the image order.

    Example:
        >>> document = {"protocol": "dim", "metrics": ["sad"], "higher_is_better": {"sad": False},
        ...             "results": [{"dataset": "D", "method": "M"}]}
        >>> rows = [{"dataset": "D", "method": "M", "image": f"i{v}", "sad": v * 1000.0} for v in (1, 3, 2)]
        >>> worst_markdown(document, rows, k=2).splitlines()[-1]
        '| SAD (÷1000) ↓ | i3 (3.00), i2 (2.00) |'
    """
    columns = [c for c in table_columns(document) if document["higher_is_better"].get(c[0]) is not None]
    if document["protocol"] == "birefnet":  # its cells print 1.0 as ".000"; the list prints plain numbers
        columns = [(name, label, format_value) for name, label, _ in columns]
    parts = [f"# The {k} worst images per method and metric", ""]
    for result in document["results"]:
        own = [r for r in rows if r["dataset"] == result["dataset"] and r["method"] == result["method"]]
        lines = [f"## {result['dataset']} / {result['method']}", "", "| metric | worst images |", "|---|---|"]
        for name, label, formatter in columns:
            higher = document["higher_is_better"][name]
            scored = [r for r in own if r.get(name) is not None and math.isfinite(r[name])]
            scored.sort(key=lambda r: r[name] if higher else -r[name])
            listed = ", ".join(f"{r['image']} ({formatter(r[name])})" for r in scored[:k])
            lines.append(f"| {label} {_arrow(higher)} | {listed or '-'} |")
        parts += lines + [""]
    return "\n".join(parts)


def write_per_image_csv(path: Path, rows: list[dict[str, Any]], names: list[str]) -> None:
    """``dataset,method,image,resized,<metric>...``; empty cells for NaN."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dataset", "method", "image", "resized", *names])
        for row in rows:
            values = [repr(v) if v is not None and math.isfinite(v) else "" for v in (row[n] for n in names)]
            writer.writerow([row["dataset"], row["method"], row["image"], int(row["resized"]), *values])


def _fsync(path: Path, directory: bool = False) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    except OSError:
        return  # e.g. folders cannot be opened on Windows
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(out: Path, writers: dict[str, Callable[[Path], None]]) -> None:
    """Write every file into a temporary folder inside ``out`` (created if needed), then move them into
    ``out`` — ``results.json`` last — with interrupting signals held until all are in place.

    A failure or interruption while writing leaves ``out`` as it was; other files in ``out`` are kept.
    """
    out = Path(os.path.abspath(out))
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=out))
    try:
        for name, writer in writers.items():
            writer(tmp / name)
            _fsync(tmp / name)
        order = sorted(writers, key=lambda name: name == "results.json")  # the manifest goes last
        checkpoint()
        with deferred():
            for name in order:
                os.replace(tmp / name, out / name)
            _fsync(out, directory=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class OutputLock:
    """Hold ``out/.nobg-metrics.lock`` for a run (``with OutputLock(out): ...``).

    Entering creates ``out`` (and missing parents) when needed — which also proves the location can be
    written, before any scoring — takes an exclusive ``flock`` (:class:`OutputBusy` at once when another
    run holds it) and removes temporary folders that killed runs left behind. Leaving removes the lock
    file and the folders it created if they are still empty (a failed run leaves nothing behind).
    """

    def __init__(self, out: Path) -> None:
        self.out = Path(os.path.abspath(out))
        self.created: list[Path] = []
        self.fd: int | None = None

    def __enter__(self) -> OutputLock:
        try:
            self._make_folders()
            self._lock()
        except OutputBusy:
            self._remove_created()
            raise
        except OSError as error:
            self._remove_created()
            raise ConfigError(f"--out {self.out}: cannot write there ({error.strerror or error})") from None
        for entry in os.listdir(self.out):
            if entry.startswith(TMP_PREFIX):  # left by a run that was killed (we hold the lock: none is live)
                shutil.rmtree(self.out / entry, ignore_errors=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            try:
                os.unlink(self.out / LOCK_NAME)  # before unlocking: a waiting run re-checks the inode
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None
        self._remove_created()

    def _make_folders(self) -> None:
        missing = []
        folder = self.out
        while not os.path.isdir(folder):
            if os.path.lexists(folder):
                raise OSError(errno.ENOTDIR, f"{folder} is not a folder")
            missing.append(folder)
            folder = folder.parent
        for folder in reversed(missing):
            try:
                os.mkdir(folder)
            except FileExistsError:
                if not os.path.isdir(folder):
                    raise
                continue
            self.created.append(folder)

    def _lock(self) -> None:
        path = self.out / LOCK_NAME
        if fcntl is None:
            return
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                holder = os.read(fd, 64).decode(errors="replace").strip()
                os.close(fd)
                if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise
                raise OutputBusy(f"--out {self.out} is in use by another nobg-metrics run"
                                 f"{f' (pid {holder})' if holder.isdigit() else ''}; wait for it to end or "
                                 f"choose another --out") from None
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder removed the file as we opened it: lock the new one
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def _remove_created(self) -> None:
        for folder in reversed(self.created):  # deepest first; only if empty
            try:
                os.rmdir(folder)
            except OSError:
                break
        self.created = []


def text_writer(text: str) -> Callable[[Path], None]:
    """A writer of a fixed UTF-8 text."""
    return lambda path: path.write_text(text, encoding="utf-8")


def json_writer(document: dict[str, Any]) -> Callable[[Path], None]:
    """A writer of a JSON document (strict: no NaN)."""
    return lambda path: path.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
