"""The marks and escapes every table of a run shares (docs/tables.md "One layout for every table"): the top three of
each column (:func:`ranks`, compared at the printed precision: :func:`as_number`) bold / underlined / italic, the
``†`` of a row scored on a subset, and LaTeX escaping (:func:`tex_escape`).

Standard library only: the per-dataset tables (:mod:`~nobg_metrics.cli.outputs.results`), the combined ones
(:mod:`~nobg_metrics.cli.outputs.tables`), their layout (:mod:`~nobg_metrics.cli.outputs.table_model`), the aliases and
the report all print with these.
"""

from __future__ import annotations

import math

RANK_LATEX = {1: r"\first", 2: r"\second", 3: r"\third"}
RANK_LATEX_DEFAULTS = (r"\providecommand{\first}[1]{\textbf{#1}}", r"\providecommand{\second}[1]{\underline{#1}}",
                       r"\providecommand{\third}[1]{\textit{#1}}")
"""Top-1/2/3 in LaTeX: bold, underlined, italic — macros, so a paper can ``\\newcommand`` them first (colours)."""
RANK_MARKDOWN = {1: "**{}**", 2: "<ins>{}</ins>", 3: "*{}*"}
SUBSET_MARK = "†"
LEGEND = "Best of each column **bold**, second <ins>underlined</ins>, third *italic* (at the printed precision)."


def ranks(values: list[float | None], higher: bool | None) -> list[int]:
    """Top-1/2/3 of a column (0: unmarked): dense ranks of the distinct printed values, best first, the top three
    marked whatever they are — the worst too when it is among them (a 2-row column marks its best and its second),
    as PySODEvalToolkit's ``tools/converter.py`` marks the top three unique values; ties share a rank (a column of
    equal values is all rank 1). Fewer than 2 values or no direction: nothing marked.

    Examples:
        >>> ranks([0.9, 0.8, 0.9, 0.7, None, 0.6], True), ranks([0.1, 0.2], False), ranks([0.5, 0.5], True)
        ([1, 2, 1, 3, 0, 0], [1, 2], [1, 1])
        >>> ranks([0.3, None], True), ranks([0.1, 0.2], None)
        ([0, 0], [0, 0])
    """
    present = [v for v in values if v is not None]
    if higher is None or len(present) < 2:
        return [0] * len(values)
    distinct = sorted(set(present), reverse=bool(higher))
    rank = {v: i + 1 for i, v in enumerate(distinct[:3])}
    return [rank.get(v, 0) if v is not None else 0 for v in values]


def as_number(cell: str) -> float | None:
    """The number a printed cell shows (``.912`` -> 0.912), or ``None`` (``-``, ``nan``).

    Examples:
        >>> as_number(".912"), as_number("24.57"), as_number("-"), as_number("nan")
        (0.912, 24.57, None, None)
    """
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#", "$": r"\$",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped.

    Examples:
        >>> print(tex_escape("iou_metric 50% {x}"))
        iou\\_metric 50\\% \\{x\\}
    """
    return "".join(_TEX_ESCAPES.get(char, char) for char in text)
