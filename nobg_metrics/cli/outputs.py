"""Result files: results.json, per_image.csv, table.md, table.tex — written all at once or not at all.

Writing (:func:`write_atomically`): every file goes into a temporary folder inside ``--out``
(``.nobg-metrics-tmp-*``), is flushed to disk, and is then renamed into place — ``results.json`` last —
while interrupting signals are held (:func:`nobg_metrics.cli.signals.deferred`): an interrupted or failed
run leaves the previous outputs as they were. :class:`OutputLock` holds ``--out/.nobg-metrics.lock``
(``flock``) for the whole run, so two runs into one folder never mix: the second fails at once.

Schema of ``results.json`` (docs/cli.md "Outputs")::

    {"version", "protocol", "task", "tier", "preset" (with --preset), "metrics": [names], "skipped_metrics": [names],
     "higher_is_better": {name: bool}, "printed": {name: {"label", "scale"}} (matting protocols),
     "results": [{"dataset", "method", "images", "resized", "metrics": {name: value or null}}],
     "missing": [{"dataset", "method", "file", "reason"}], "unreadable": [...], "extra": [...],
     "not_scored": [...], "resized": total number of resized predictions}

Tables (which files: :mod:`nobg_metrics.cli.tables`; docs/tables.md): one per dataset, methods as rows, best value
of each column in bold (ties all bold, compared at the printed precision), ↑/↓ after each metric name. Matting
measures print in their benchmark's units with the unit in the header (``SAD (÷1000)``;
:data:`~nobg_metrics.cli.protocols.PRINTED`) — in a ``--task sod`` run in a table of their own, never beside the
SOD columns — HCE as an integer, the BiRefNet protocol its own columns, order and rounding; ``results.json`` keeps
the raw values. :func:`write_xlsx` writes a workbook with the standard library (the combined table's XLSX).
"""

from __future__ import annotations

import csv
import dataclasses
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
from nobg_metrics.cli.names import MATTING_NAMES
from nobg_metrics.cli.protocols import BIREFNET_COLUMNS, PRINTED, birefnet_cell
from nobg_metrics.cli.runner import Scores
from nobg_metrics.cli.signals import checkpoint, deferred
from nobg_metrics.cli.tables import Aliases

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


def results_document(jobs: list[Job], scores: Scores, protocol: str, tier: str, task: str = "sod",
                     preset: str | None = None) -> dict[str, Any]:
    """The ``results.json`` object (raw values; ``printed`` says how the tables scale each matting metric; ``preset``:
    the run's ``--preset``, absent without one)."""
    return {**({"preset": preset} if preset is not None else {}),
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


COUNT_NAMES = ("hce", "birefnet_hce")
"""Metrics that count (HCE: corrections per image): printed as integers, as the DIS5K tables print them."""


def format_value(value: float | None, digits: int | None = None) -> str:
    """3 decimals below 10, 2 below 100, else 1 (SAD-like sums); ``digits`` decimals when given; ``-`` for a
    missing value.

    Example:
        >>> [format_value(v) for v in (0.03725, 18.456, 1234.56, None, float("nan"))]
        ['0.037', '18.46', '1234.6', '-', '-']
        >>> format_value(0.03725, digits=4)
        '0.0372'
    """
    if value is None or not math.isfinite(value):
        return "-"
    if digits is not None:
        return f"{value:.{digits}f}"
    magnitude = abs(value)
    return f"{value:.3f}" if magnitude < 10 else f"{value:.2f}" if magnitude < 100 else f"{value:.1f}"


def format_count(value: float | None) -> str:
    """An integer (``round``: half to even, like BiRefNet's ``int(x.round())``); ``-`` for a missing value."""
    return "-" if value is None or not math.isfinite(value) else str(round(value))


def _arrow(higher: bool | None) -> str:
    return "↑" if higher else "↓" if higher is False else ""


Column = tuple[str, str, Callable[[float | None], str]]
"""``(metric name, header label, cell formatter)``."""


def table_columns(document: dict[str, Any], digits: int | None = None) -> list[Column]:
    """``(metric name, header label, cell formatter)`` per column, in the protocol's order.

    Matting measures print in their benchmark's units (:data:`~nobg_metrics.cli.protocols.PRINTED`: ``SAD (÷1000)``)
    in every protocol, HCE as an integer; ``digits`` overrides the decimals of every other column (not BiRefNet's
    own rounding).
    """
    protocol, names = document["protocol"], document["metrics"]
    if protocol == "birefnet":
        task = document.get("task", "DIS5K")
        return [(name, field, functools.partial(_birefnet_cell, field, task))
                for field, name in BIREFNET_COLUMNS[task] if name in names]
    columns: list[Column] = []
    for name in names:
        if name in PRINTED and (protocol in ("dim", "p3m") or name in MATTING_NAMES):
            printed = PRINTED[name] if digits is None else dataclasses.replace(PRINTED[name], digits=digits)
            columns.append((name, printed.header(), printed.format))
        elif name in COUNT_NAMES:
            columns.append((name, name, format_count))
        else:
            columns.append((name, name, functools.partial(format_value, digits=digits)))
    return columns


def column_sets(document: dict[str, Any], digits: int | None = None) -> list[tuple[str, list[Column]]]:
    """The tables of a dataset: ``[("", columns)]``, except that a ``--task sod`` run prints its matting measures
    (the ``expensive`` tier's SAD, MSE, Grad, Conn) in a table of their own, ``("matting measures", columns)``, in
    Composition-1k units: a SAD sum never stands beside the SOD columns."""
    columns = table_columns(document, digits)
    if document.get("task", "sod") != "sod" or document["protocol"] == "birefnet":
        return [("", columns)]
    sets = [("", [c for c in columns if c[0] not in MATTING_NAMES]),
            ("matting measures", [c for c in columns if c[0] in MATTING_NAMES])]
    return [(title, cols) for title, cols in sets if cols] or [("", [])]


def _birefnet_cell(field: str, task: str, value: float | None, dataset: str = "") -> str:
    """BiRefNet's cell; a value that is null in results.json was NaN (printed ``nan``, as BiRefNet prints it),
    except HCE off ``DIS-`` datasets, which is not scored there (``-``)."""
    if value is None and (field != "HCE" or "DIS-" in dataset):
        value = math.nan
    return birefnet_cell(field, value, task)


def as_number(cell: str) -> float | None:
    """The number a printed cell shows (``.912`` -> 0.912), or ``None`` (``-``, ``nan``)."""
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def cell_text(formatter: Callable[..., str], value: float | None, dataset: str) -> str:
    """A formatted cell (BiRefNet's cells also need the dataset: HCE is scored on ``DIS-`` datasets only)."""
    if isinstance(formatter, functools.partial) and formatter.func is _birefnet_cell:
        return formatter(value, dataset)
    return formatter(value)


def _aliases(aliases: Aliases | None) -> Aliases:
    return aliases if aliases is not None else Aliases()


def _table_rows(document: dict[str, Any], dataset: str, columns: list[Column],
                aliases: Aliases | None = None) -> tuple[list[dict[str, Any]], list[list[str]], list[list[bool]]]:
    """Result entries (in the aliases' method order), formatted cells and bold flags of one dataset's table."""
    entries = {r["method"]: r for r in document["results"] if r["dataset"] == dataset}
    entries = [entries[m] for m in _aliases(aliases).order("methods", list(entries))]
    cells = [[cell_text(formatter, r["metrics"][name], dataset) for name, _, formatter in columns] for r in entries]
    bold = [[False] * len(columns) for _ in entries]
    for column, (name, _, _) in enumerate(columns):
        higher = document["higher_is_better"].get(name)
        shown = [as_number(row[column]) for row in cells]
        valid = [v for v in shown if v is not None]
        if higher is None or len(valid) < 2 or document["protocol"] == "birefnet":  # BiRefNet's table: no bold
            continue
        best = max(valid) if higher else min(valid)
        for row, value in enumerate(shown):
            bold[row][column] = value == best
    return entries, cells, bold


def datasets_of(document: dict[str, Any], aliases: Aliases | None = None) -> list[str]:
    """The run's datasets, in the aliases' order (then the run's)."""
    return _aliases(aliases).order("datasets", list(dict.fromkeys(r["dataset"] for r in document["results"])))


def markdown_table(document: dict[str, Any], digits: int | None = None, aliases: Aliases | None = None) -> str:
    """One markdown table per dataset (and one of its matting measures in a ``--task sod`` run: :func:`column_sets`)."""
    names = _aliases(aliases)
    parts = []
    for dataset in datasets_of(document, aliases):
        for title, columns in column_sets(document, digits):
            header = "| method | images | " + " | ".join(
                f"{label} {_arrow(document['higher_is_better'].get(n))}".strip() for n, label, _ in columns) + " |"
            entries, cells, bold = _table_rows(document, dataset, columns, aliases)
            heading = f"### {names.shown('datasets', dataset)}" + (f" ({title})" if title else "")
            lines = [heading, "", header, "|---|---:|" + "---:|" * len(columns)]
            for entry, row, flags in zip(entries, cells, bold):
                shown = [f"**{c}**" if f else c for c, f in zip(row, flags)]
                lines.append(f"| {names.shown('methods', entry['method'])} | {entry['images']} | "
                             + " | ".join(shown) + " |")
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#", "$": r"\$",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)


def latex_table(document: dict[str, Any], digits: int | None = None, aliases: Aliases | None = None) -> str:
    """One booktabs ``tabular`` per dataset (needs ``\\usepackage{booktabs}``); aliases print as written (LaTeX)."""
    names = _aliases(aliases)
    arrows = {True: r"$\uparrow$", False: r"$\downarrow$"}
    parts = []
    for dataset in datasets_of(document, aliases):
        for title, columns in column_sets(document, digits):
            header = " & ".join(["Method"] + [
                f"{tex_escape(label)} {arrows.get(document['higher_is_better'].get(n), '')}".strip()
                for n, label, _ in columns]) + r" \\"
            entries, cells, bold = _table_rows(document, dataset, columns, aliases)
            caption = names.shown("datasets", dataset, tex=True) + (f" ({title})" if title else "")
            lines = [f"% {dataset}" + (f" ({title})" if title else ""), r"\begin{table}[t]", r"\centering",
                     f"\\caption{{{caption}}}", r"\begin{tabular}{l" + "r" * len(columns) + "}", r"\toprule", header,
                     r"\midrule"]
            for entry, row, flags in zip(entries, cells, bold):
                shown = [f"\\textbf{{{c}}}" if f else c for c, f in zip(row, flags)]
                lines.append(" & ".join([names.shown("methods", entry["method"], tex=True)] + shown) + r" \\")
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


# ---------------------------------------------------------------------------------------------- XLSX
XlsxCell = tuple[Any, "int | None", str]
"""``(value, decimals, font)``: a string or number (``None``: empty), the decimals of a number's format (``None``:
general), the font: ``""``, ``"b"`` bold, ``"u"`` underlined, ``"i"`` italic."""

_XML_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
_FONTS = {"": "<font><sz val=\"11\"/><name val=\"Calibri\"/></font>",
          "b": "<font><b/><sz val=\"11\"/><name val=\"Calibri\"/></font>",
          "u": "<font><u/><sz val=\"11\"/><name val=\"Calibri\"/></font>",
          "i": "<font><i/><sz val=\"11\"/><name val=\"Calibri\"/></font>"}


def xlsx_column(index: int) -> str:
    """Spreadsheet column letters of a 0-based index: ``0 -> A``, ``26 -> AA``."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def write_xlsx(path: Path, sheets: list[tuple[str, list[list[XlsxCell]], list[str]]]) -> None:
    """A minimal Office Open XML workbook (ECMA-376 SpreadsheetML) written with the standard library: one sheet per
    ``(name, rows, merged ranges like "B1:D1")``, inline strings, numbers with a fixed-decimals format, bold /
    underlined / italic fonts. Deterministic bytes (fixed zip timestamps). Opens in Excel, LibreOffice, openpyxl."""
    import zipfile
    from xml.sax.saxutils import escape, quoteattr

    fonts = list(_FONTS)
    styles: list[tuple[int, int]] = [(0, 0)]  # (font index, number format id); 0 = general
    formats: dict[int, int] = {}  # decimals -> custom numFmtId (164 + decimals)

    def style(decimals: int | None, font: str) -> int:
        fmt = 0 if decimals is None else formats.setdefault(decimals, 164 + decimals)
        key = (fonts.index(font), fmt)
        if key not in styles:
            styles.append(key)
        return styles.index(key)

    def sheet_xml(rows: list[list[XlsxCell]], merged: list[str]) -> str:
        out = [f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="{_XML_NS}"><sheetData>']
        for r, row in enumerate(rows, start=1):
            cells = []
            for c, (value, decimals, font) in enumerate(row):
                ref, s = f"{xlsx_column(c)}{r}", style(decimals if isinstance(value, (int, float)) else None, font)
                if value is None:
                    cells.append(f'<c r="{ref}" s="{s}"/>')
                elif isinstance(value, (int, float)) and not isinstance(value, bool):
                    cells.append(f'<c r="{ref}" s="{s}"><v>{value!r}</v></c>')
                else:
                    cells.append(f'<c r="{ref}" s="{s}" t="inlineStr"><is><t xml:space="preserve">'
                                 f'{escape(str(value))}</t></is></c>')
            out.append(f'<row r="{r}">{"".join(cells)}</row>')
        out.append("</sheetData>")
        if merged:
            out.append(f'<mergeCells count="{len(merged)}">' + "".join(f'<mergeCell ref="{m}"/>' for m in merged)
                       + "</mergeCells>")
        return "".join(out) + "</worksheet>"

    bodies = [sheet_xml(rows, merged) for _, rows, merged in sheets]  # fills styles / formats
    head = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    num_fmts = "".join(f'<numFmt numFmtId="{i}" formatCode="{"0" if d == 0 else "0." + "0" * d}"/>'
                       for d, i in sorted(formats.items()))
    styles_xml = (f'{head}<styleSheet xmlns="{_XML_NS}">'
                  + (f'<numFmts count="{len(formats)}">{num_fmts}</numFmts>' if formats else "")
                  + f'<fonts count="{len(fonts)}">{"".join(_FONTS[f] for f in fonts)}</fonts>'
                  '<fills count="2"><fill><patternFill patternType="none"/></fill>'
                  '<fill><patternFill patternType="gray125"/></fill></fills>'
                  '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
                  '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
                  f'<cellXfs count="{len(styles)}">'
                  + "".join(f'<xf numFmtId="{fmt}" fontId="{font}" fillId="0" borderId="0" xfId="0"'
                            + (' applyNumberFormat="1"' if fmt else "") + (' applyFont="1"' if font else "") + "/>"
                            for font, fmt in styles)
                  + '</cellXfs><cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
                  "</styleSheet>")
    names = [name.translate({ord(c): "_" for c in "[]:*?/\\"})[:31] or f"Sheet{i + 1}"
             for i, (name, _, _) in enumerate(sheets)]
    workbook = (f'{head}<workbook xmlns="{_XML_NS}" xmlns:r="{_REL_NS}"><sheets>'
                + "".join(f'<sheet name={quoteattr(n)} sheetId="{i + 1}" r:id="rId{i + 1}"/>' for i, n in enumerate(names))
                + "</sheets></workbook>")
    sheet_type = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    rels = "".join(f'<Relationship Id="rId{i + 1}" Type="{_REL_NS}/worksheet" Target="worksheets/sheet{i + 1}.xml"/>'
                   for i in range(len(sheets)))
    files = {
        "[Content_Types].xml": f'{head}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="{sheet_type}.sheet.main+xml"/>'
        f'<Override PartName="/xl/styles.xml" ContentType="{sheet_type}.styles+xml"/>'
        + "".join(f'<Override PartName="/xl/worksheets/sheet{i + 1}.xml" ContentType="{sheet_type}.worksheet+xml"/>'
                  for i in range(len(sheets))) + "</Types>",
        "_rels/.rels": f'{head}<Relationships xmlns="{_PKG_NS}"><Relationship Id="rId1" '
        f'Type="{_REL_NS}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": workbook,
        "xl/_rels/workbook.xml.rels": f'{head}<Relationships xmlns="{_PKG_NS}">{rels}<Relationship '
        f'Id="rId{len(sheets) + 1}" Type="{_REL_NS}/styles" Target="styles.xml"/></Relationships>',
        "xl/styles.xml": styles_xml,
        **{f"xl/worksheets/sheet{i + 1}.xml": body for i, body in enumerate(bodies)},
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), text.encode("utf-8"),
                             compress_type=zipfile.ZIP_DEFLATED)
