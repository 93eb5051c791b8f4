"""How each column of a run's tables prints its values (docs/tables.md): the protocol's column order, header labels
and cell formats — the matting protocols' units (``SAD (÷1000)``, :data:`~nobg_metrics.cli.eval.protocols.PRINTED`), HCE
as an integer, BiRefNet's own columns and rounding, ``--digits`` — and, in a ``--task sod`` run, its matting measures
in a table of their own.

Every table of the run formats its cells here: the per-dataset tables (:mod:`~nobg_metrics.cli.outputs.results`), the
combined ones (:mod:`~nobg_metrics.cli.outputs.tables`), their layout (:mod:`~nobg_metrics.cli.outputs.table_model`),
worst.md, groups.md and the report. The protocols load the metric registry (torch): the argument parser's modules import
this module where they format a table, not when they load.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

from nobg_metrics.catalog import CATALOG
from nobg_metrics.cli.eval.protocols import BIREFNET_COLUMNS, PRINTED, birefnet_cell


def _is_matting(name: str) -> bool:
    """A matting measure (the catalog's ``task``): a ``--task sod`` table prints them apart, in their benchmark's
    units (never a SAD sum beside the SOD columns)."""
    return name in CATALOG and CATALOG[name].task == "matting"


def _is_count(name: str) -> bool:
    """A metric that counts (HCE: corrections per image; the catalog's ``count``): printed as an integer, as the
    DIS5K tables print it."""
    return name in CATALOG and CATALOG[name].count


def format_value(value: float | None, digits: int | None = None) -> str:
    """3 decimals below 10, 2 below 100, else 1 (SAD-like sums); ``digits`` decimals when given; ``-`` for a
    missing value.

    Examples:
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


Column = tuple[str, str, Callable[[float | None], str]]
"""``(metric name, header label, cell formatter)``."""


def table_columns(document: dict[str, Any], digits: int | None = None) -> list[Column]:
    """``(metric name, header label, cell formatter)`` per column, in the protocol's order.

    Matting measures print in their benchmark's units (:data:`~nobg_metrics.cli.eval.protocols.PRINTED`: ``SAD
    (÷1000)``) in every protocol, HCE as an integer; ``digits`` overrides the decimals of every other column (not
    BiRefNet's own rounding).
    """
    protocol, names = document["protocol"], document["metrics"]
    if protocol == "birefnet":
        task = document.get("task", "DIS5K")
        return [(name, field, functools.partial(_birefnet_cell, field, task))
                for field, name in BIREFNET_COLUMNS[task] if name in names]
    columns: list[Column] = []
    for name in names:
        if name in PRINTED and (protocol in ("dim", "p3m") or _is_matting(name)):
            printed = PRINTED[name] if digits is None else dataclasses.replace(PRINTED[name], digits=digits)
            columns.append((name, printed.header(), printed.format))
        elif _is_count(name):
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
    sets = [("", [c for c in columns if not _is_matting(c[0])]),
            ("matting measures", [c for c in columns if _is_matting(c[0])])]
    return [(title, cols) for title, cols in sets if cols] or [("", [])]


def _birefnet_cell(field: str, task: str, value: float | None, dataset: str = "") -> str:
    """BiRefNet's cell; a value that is null in results.json was NaN (printed ``nan``, as BiRefNet prints it),
    except HCE off ``DIS-`` datasets, which is not scored there (``-``)."""
    if value is None and (field != "HCE" or "DIS-" in dataset):
        value = math.nan
    return birefnet_cell(field, value, task)


def cell_text(formatter: Callable[..., str], value: float | None, dataset: str) -> str:
    """A formatted cell (BiRefNet's cells also need the dataset: HCE is scored on ``DIS-`` datasets only)."""
    if isinstance(formatter, functools.partial) and formatter.func is _birefnet_cell:
        return formatter(value, dataset)
    return formatter(value)
