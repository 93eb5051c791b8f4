"""The combined table's workbook, ``combined.xlsx``, written with openpyxl (docs/tables.md "XLSX and CSV").

openpyxl is the optional ``xlsx`` extra (:data:`XLSX_EXTRA`): without it the run writes every other file and says
on stderr that ``combined.xlsx`` was not written and what to install (:func:`have_openpyxl`). A workbook holds one
sheet per table, as :func:`~nobg_metrics.cli.outputs.tables.xlsx_sheets` describes it: strings, numbers with a number
format of their printed decimals, bold / underlined / italic fonts for the top-1/2/3 marks, merged header cells.

Importable without openpyxl (the argument parser imports the tables, which import this module): openpyxl is imported
when a workbook is written.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.os_names import readable

XlsxCell = tuple[Any, "int | None", str]
"""``(value, decimals, font)``: a string or number (``None``: empty), the decimals of a number's format (``None``:
general), the font: ``""``, ``"b"`` bold, ``"u"`` underlined, ``"i"`` italic."""

XLSX_EXTRA = 'pip install "nobg_metrics[xlsx]"'
"""What installs openpyxl for the workbook."""

_SHEET_NAME_FORBIDDEN = {ord(c): "_" for c in "[]:*?/\\"}


def have_openpyxl() -> bool:
    """Whether the workbook can be written (openpyxl installed), without importing it."""
    return importlib.util.find_spec("openpyxl") is not None


def xlsx_column(index: int) -> str:
    """Spreadsheet column letters of a 0-based index: ``0 -> A``, ``26 -> AA``.

    Examples:
        >>> xlsx_column(0), xlsx_column(25), xlsx_column(26), xlsx_column(701)
        ('A', 'Z', 'AA', 'ZZ')
    """
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _number_format(decimals: int) -> str:
    return "0" if decimals == 0 else "0." + "0" * decimals


def write_xlsx(path: Path, sheets: list[tuple[str, list[list[XlsxCell]], list[str]]]) -> None:
    """A workbook with one sheet per ``(name, rows, merged ranges like "B1:D1")``: strings (an OS name's undecodable
    bytes and the control characters a workbook cannot hold as ``\\xNN``), numbers with a fixed-decimals number
    format, bold / underlined / italic fonts (Calibri 11). Sheet names lose ``[]:*?/\\`` and keep 31 characters."""
    from openpyxl import Workbook  # the optional xlsx extra (and its import time): only when a workbook is written
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
    from openpyxl.styles import Font

    fonts = {font: Font(name="Calibri", size=11, bold=font == "b", italic=font == "i",
                        underline="single" if font == "u" else None) for font in ("", "b", "u", "i")}
    book = Workbook()
    book.remove(book.active)
    for number, (name, rows, merged) in enumerate(sheets, start=1):
        sheet = book.create_sheet(name.translate(_SHEET_NAME_FORBIDDEN)[:31] or f"Sheet{number}")
        for r, row in enumerate(rows, start=1):
            for c, (value, decimals, font) in enumerate(row, start=1):
                if value is None and not font:
                    continue
                if isinstance(value, str):
                    value = ILLEGAL_CHARACTERS_RE.sub(lambda match: f"\\x{ord(match.group()):02x}", readable(value))
                cell = sheet.cell(row=r, column=c, value=value)
                cell.font = fonts[font]
                if decimals is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
                    cell.number_format = _number_format(decimals)
        for cells in merged:
            sheet.merge_cells(cells)
    book.save(path)
