"""What ``--preset davis`` prints and writes, as davis2017-evaluation's ``evaluation_method.py`` does.

- The per-object statistics are davis2017-evaluation's ``db_statistics`` computed with numpy on our per-frame
  values (equal to the reference's bit for bit): numpy's own ``nanmean`` keeps every printed digit and pandas'
  choice between fixed and scientific notation (which a last-bit difference in a decay near 0 could flip) the
  reference's. The library's ``DavisJAndF`` gives the same numbers within 1e-15 (summation order).
- ``global_results-<set>.csv`` / ``per-sequence_results-<set>.csv``: pandas ``to_csv(index=False,
  float_format="%.3f")`` — header, one row per line, ``\\n`` line ends, NaN as an empty cell.
- The console tables: pandas ``DataFrame.to_string(index=False)`` — each float column formatted ``{:.6f}`` with
  trailing zeros trimmed equally (one kept after the point), in ``{:.6e}`` when a value has ``0 < |v| < 1e-6`` or
  when values above 1e6 make a cell longer than 12; numeric headers get a leading space; every cell right-justified
  to its column's width; columns joined by one space; NaN as ``NaN``.
"""

from __future__ import annotations

import csv
import math
import re
import warnings
from pathlib import Path

import numpy as np

GLOBAL_COLUMNS = ("J&F-Mean", "J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay")
"""evaluation_method.py's ``g_measures``."""
SEQUENCE_COLUMNS = ("Sequence", "J-Mean", "F-Mean")
"""evaluation_method.py's ``seq_measures``."""
_DIGITS = 6  # pandas' display.precision
_NUMBER = re.compile(r"^\s*[+-]?[0-9]+\.[0-9]*$")


def db_statistics(values: np.ndarray, decay_index: str = "reference") -> tuple[float, float, float]:
    """``(mean, recall, decay)`` of one object's per-frame values (``utils.db_statistics``; ``"exact"``: integer
    bin edges instead of the uint8 ones that wrap from 256 frames on)."""
    values = np.asarray(values, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        mean, recall = np.nanmean(values), np.nanmean(values > 0.5)
        edges = np.round(np.linspace(1, len(values), 5) + 1e-10) - 1
        if decay_index == "reference":
            ids = edges.astype(np.uint8)
            first, last = values[ids[0]:np.uint8(ids[1] + np.uint8(1))], values[ids[3]:np.uint8(ids[4] + np.uint8(1))]
        else:
            ids = edges.astype(np.int64)
            first, last = values[ids[0]:ids[1] + 1], values[ids[3]:ids[4] + 1]
        decay = np.nanmean(first) - np.nanmean(last)
    return float(mean), float(recall), float(decay)


def global_row(per_object: dict[str, tuple[float, ...]]) -> dict[str, float]:
    """The seven global numbers from the per-object ``(JM, JR, JD, FM, FR, FD)`` rows (plain means over objects)."""
    table = np.array(list(per_object.values()), dtype=np.float64).reshape(-1, 6)
    columns = [float(np.mean(np.ascontiguousarray(table[:, index]))) for index in range(6)]  # np.mean(J["M"]) ...
    return dict(zip(GLOBAL_COLUMNS, [(columns[0] + columns[3]) / 2.0, *columns]))


def _trim_zeros(cells: list[str]) -> list[str]:
    """pandas' ``_trim_zeros_float``: drop trailing zeros from every number while all of them end in 0."""
    numbers = [bool(_NUMBER.match(cell)) for cell in cells]
    if not any(numbers):
        return cells
    while all(cell.endswith("0") for cell, number in zip(cells, numbers) if number):
        cells = [cell[:-1] if number else cell for cell, number in zip(cells, numbers)]
    return [cell + "0" if number and cell.endswith(".") else cell for cell, number in zip(cells, numbers)]


def float_cells(values: list[float]) -> list[str]:
    """One float column as ``DataFrame.to_string`` formats it (module doc)."""
    def formatted(pattern: str) -> list[str]:
        cells = ["NaN" if math.isnan(v) else pattern.format(v) for v in values]
        return _trim_zeros(cells)

    cells = formatted(f"{{:.{_DIGITS}f}}")
    finite = [abs(v) for v in values if not math.isnan(v)]
    small = any(0 < v < 10 ** -_DIGITS for v in finite)
    large = any(v > 1e6 for v in finite) and max(len(cell) for cell in cells) > _DIGITS + 6
    return formatted(f"{{:.{_DIGITS}e}}") if small or large else cells


def to_string(columns: tuple[str, ...], rows: list[list[str | float]]) -> str:
    """``DataFrame(rows, columns=columns).to_string(index=False)`` for text and float columns."""
    strings = []
    for index, name in enumerate(columns):
        column = [row[index] for row in rows]
        if all(isinstance(v, float) for v in column):
            cells, header = float_cells([float(v) for v in column]), " " + name
        else:
            cells, header = [str(v) for v in column], name
        width = max([len(header), *(len(cell) for cell in cells)])
        strings.append([header.rjust(width), *(cell.rjust(width) for cell in cells)])
    return "\n".join(" ".join(column[line] for column in strings) for line in range(len(rows) + 1))


def console_block(set_name: str, globals_: dict[str, float], per_object: dict[str, tuple[float, ...]]) -> str:
    """evaluation_method.py's printout of one method (without its timing line)."""
    global_table = to_string(GLOBAL_COLUMNS, [[globals_[name] for name in GLOBAL_COLUMNS]])
    sequence_table = to_string(SEQUENCE_COLUMNS, [[name, row[0], row[3]] for name, row in per_object.items()])
    return (f"--------------------------- Global results for {set_name} ---------------------------\n"
            f"{global_table}\n\n---------- Per sequence results for {set_name} ----------\n{sequence_table}\n")


def _csv_cell(value: str | float) -> str:
    if isinstance(value, str):
        return value
    return "" if math.isnan(value) else f"{value:.3f}"  # pandas' float_format="%.3f"


def write_csv(path: Path, columns: tuple[str, ...], rows: list[list[str | float]]) -> None:
    """pandas ``to_csv(index=False, float_format="%.3f")``."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_csv_cell(value) for value in row])


def global_csv_rows(globals_: dict[str, float]) -> list[list[str | float]]:
    return [[globals_[name] for name in GLOBAL_COLUMNS]]


def sequence_csv_rows(per_object: dict[str, tuple[float, ...]]) -> list[list[str | float]]:
    return [[name, row[0], row[3]] for name, row in per_object.items()]


def markdown(methods: dict[str, dict[str, float]]) -> str:
    """``table.md``: one row per method, the seven global numbers at 3 decimals (the CSVs' precision)."""
    lines = ["| method | " + " | ".join(GLOBAL_COLUMNS) + " |", "|---" * (len(GLOBAL_COLUMNS) + 1) + "|"]
    for method, values in methods.items():
        lines.append(f"| {method} | " + " | ".join(_csv_cell(values[name]) or "-" for name in GLOBAL_COLUMNS) + " |")
    return "\n".join(lines) + "\n"
