"""A spreadsheet (.xlsx) written with the standard library: the combined table's workbook (docs/tables.md).

An .xlsx file is a zip of a few small XML parts (content types, relationships, workbook, styles, one sheet per
table); :func:`write_xlsx` writes exactly those — inline strings, numbers with a fixed number of decimals, bold /
underlined / italic fonts for the top-1/2/3 marks, merged header cells — so no spreadsheet library is needed at
run time (the tests read the files back with ``zipfile`` + ``xml`` and with openpyxl).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

    from nobg_metrics.cli.os_names import readable

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
                                 f'{escape(readable(str(value)))}</t></is></c>')
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
