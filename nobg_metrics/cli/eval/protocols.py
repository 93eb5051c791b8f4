"""The benchmark protocols of ``nobg-metrics eval``: which task takes which ``--protocol``, each protocol's
metric set, and how its tables print (units, column names and order, rounding). docs/cli.md "Protocols".

- ``--task sod`` (default): ``pysodmetrics`` (default) or ``raw`` — the ``--tier`` / ``--metrics`` sets.
- ``--task matting``: ``dim`` (default; Composition-1k, the DIM MATLAB code) or ``p3m`` (P3M-10k / AM-2k /
  AIM-500, ``core/evaluate.py`` of JizhiziLi/P3M, GFM, AIM).
- ``--task DIS5K | COD | HRSOD | General | General-2K | Matting``: ``birefnet`` (ZhengPeng7/BiRefNet
  ``eval_existingOnes.py``: ``task_to_field_names`` and ``evaluation/metrics.py`` ``sort_and_round_scores``).

``results.json`` and ``per_image.csv`` always hold raw values; only the tables apply :data:`PRINTED`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nobg_metrics.catalog import CATALOG
from nobg_metrics.cli.core.errors import ConfigError
from nobg_metrics.cli.core.names import BIREFNET_TASKS, MATTING_PROTOCOLS, SOD_PROTOCOLS
from nobg_metrics.collection import P3M_TRIMAP_NAMES

_DEFAULT_PROTOCOL = {"sod": "pysodmetrics", "matting": "dim", **dict.fromkeys(BIREFNET_TASKS, "birefnet")}


def resolve_task(task: str | None, protocol: str | None) -> tuple[str, str]:
    """``(task, protocol)`` from the flags (either may be omitted); a pair that does not go together is a usage
    error naming both flags.

    Examples:
        >>> resolve_task("matting", None), resolve_task(None, "p3m"), resolve_task(None, "birefnet")
        (('matting', 'dim'), ('matting', 'p3m'), ('DIS5K', 'birefnet'))
    """
    if task is None:
        task = "sod" if protocol in (None, *SOD_PROTOCOLS) else "matting" if protocol in MATTING_PROTOCOLS \
            else "DIS5K"  # BiRefNet's own default task (config.py)
    if protocol is None:
        protocol = _DEFAULT_PROTOCOL[task]
    allowed = SOD_PROTOCOLS if task == "sod" else MATTING_PROTOCOLS if task == "matting" else ("birefnet",)
    if protocol not in allowed:
        raise ConfigError(f"--protocol {protocol} does not go with --task {task}; --task {task} takes --protocol "
                          f"{' | '.join(allowed)}")
    return task, protocol


def reader_protocol(protocol: str) -> str:
    """How files are read and resized (:mod:`nobg_metrics.io.images`): ``raw``, else PySODEvalToolkit's cv2 rules
    (BiRefNet reads with ``cv2.imread`` + ``cv2.resize`` as well)."""
    return "raw" if protocol == "raw" else "pysodmetrics"


# ---------------------------------------------------------------------------------------------- matting
DIM_METRICS = ("sad", "mse_metric", "gradient_error", "connectivity_error")
"""DIM / Composition-1k: on the trimap's unknown region when a trimap is given, else the whole image."""
P3M_METRICS = ("p3m_sad", "p3m_mse", "p3m_mad", "p3m_gradient", "p3m_connectivity", *P3M_TRIMAP_NAMES)
"""P3M / AM-2k / AIM-500: whole-image SAD, MSE, MAD, Grad, Conn; with a trimap SAD-T, SAD-FG, SAD-BG, MSE-T, MAD-T."""


@dataclass(frozen=True)
class Printed:
    """How a table prints one raw value: ``label (unit)`` in the header, ``value * scale`` with ``digits``."""

    label: str
    scale: float
    unit: str
    digits: int

    def header(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def format(self, value: float | None) -> str:
        if value is None or not math.isfinite(value):
            return "-"
        return f"{value * self.scale:.{self.digits}f}"


def _unit(scale: float) -> str:
    """``1e-3`` -> ``"÷1000"``, ``0.1`` -> ``"÷10"``, ``1e3`` -> ``"×1000"``, ``1`` -> ``""`` (raw)."""
    if scale == 1.0:
        return ""
    return f"÷{round(1 / scale)}" if scale < 1 else f"×{round(scale)}"


def _printed(label: str, scale: float, digits: int) -> Printed:
    return Printed(label, scale, _unit(scale), digits)


PRINTED: dict[str, Printed] = {d.name: _printed(d.header[0], *d.printed) for d in CATALOG.values()
                               if d.printed is not None}
"""The one table of printed units: every matting-protocol metric's header label, factor and decimals (the catalog's
``Descriptor.printed``: Composition-1k's SAD, Grad, Conn / 1000, MSE × 1000; the P3M scripts' factors)."""


def protocol_metrics(protocol: str, task: str) -> tuple[str, ...] | None:
    """The protocol's fixed metric set (``None``: the ``--tier`` / ``--metrics`` choice, SOD protocols)."""
    if protocol == "dim":
        return DIM_METRICS
    if protocol == "p3m":
        return P3M_METRICS
    if protocol == "birefnet":
        return tuple(dict.fromkeys(name for _, name in BIREFNET_COLUMNS[task]))
    return None


def job_metrics(names: list[str], protocol: str, dataset: str, has_trimap: bool) -> list[str]:
    """The names scored for one dataset: P3M's trimap metrics only with a trimap, BiRefNet's HCE only on ``DIS-``
    datasets (the others show ``-`` there)."""
    if protocol == "p3m" and not has_trimap:
        names = [n for n in names if n not in P3M_TRIMAP_NAMES]
    if protocol == "birefnet" and "DIS-" not in dataset:
        names = [n for n in names if n != "birefnet_hce"]
    return names


# ---------------------------------------------------------------------------------------------- BiRefNet
_BIREFNET_NAMES = {d.birefnet: d.name for d in CATALOG.values() if d.birefnet}
"""BiRefNet's field names -> our entries (the catalog's ``Descriptor.birefnet``)."""
_FIELDS = {  # task_to_field_names without "Dataset", "Method"
    "DIS5K": "maxFm wFmeasure MAE Smeasure meanEm HCE maxEm meanFm adpEm adpFm mBA maxBIoU meanBIoU",
    "COD": "Smeasure wFmeasure meanFm meanEm maxEm MAE maxFm adpEm adpFm HCE mBA maxBIoU meanBIoU",
    "HRSOD": "Smeasure maxFm meanEm MAE maxEm meanFm wFmeasure adpEm adpFm HCE mBA maxBIoU meanBIoU",
    "General": "maxFm wFmeasure MAE Smeasure meanEm HCE maxEm meanFm adpEm adpFm mBA maxBIoU meanBIoU",
    "General-2K": "maxFm wFmeasure MAE Smeasure meanEm HCE maxEm meanFm adpEm adpFm mBA maxBIoU meanBIoU",
    "Matting": "Smeasure maxFm meanEm MSE maxEm meanFm wFmeasure adpEm adpFm HCE mBA maxBIoU meanBIoU",
}
BIREFNET_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    task: tuple((field, _BIREFNET_NAMES[field]) for field in fields.split()) for task, fields in _FIELDS.items()
}
"""Per task: ``(column, metric name)`` in BiRefNet's order (its field names and ``sort_and_round_scores``)."""


def birefnet_cell(column: str, value: float | None, task: str) -> str:
    """BiRefNet's printing: ``x.round(3)`` (MSE of the Matting task: ``round(5)``), HCE ``int(x.round())``, then
    ``'.' + format(x, '.3f').split('.')[-1]`` when ``x <= 1`` else ``format(x, '<4')``; NaN as ``nan``.

    Examples:
        >>> birefnet_cell("maxFm", 0.91249, "DIS5K"), birefnet_cell("HCE", 1016.5, "DIS5K")
        ('.912', '1016')
    """
    if value is None:
        return "-"
    number = np.float64(value)
    score = int(number.round()) if column == "HCE" and math.isfinite(value) else \
        number.round(5 if column == "MSE" and task == "Matting" else 3)
    return "." + format(score, ".3f").split(".")[-1] if score <= 1 else format(score, "<4").strip()
