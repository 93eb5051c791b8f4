"""``--preset``: the metric sets and column orders of the field's benchmark tables (docs/tables.md "Presets").

A preset fills in what the command line leaves open: ``--task`` / ``--protocol`` (only when neither is given) and
``--metrics`` in the table's column order (only when neither ``--metrics`` nor ``--tier`` is given). Given
``--protocol birefnet``, the preset's columns are picked among BiRefNet's (its HCE and mBA); given another
protocol of the task, the protocol's own set stays. A metric this build lacks (``hce`` while it is being
registered) is left out with a note, as the BiRefNet protocol does. A preset also writes the combined tables
(:mod:`nobg_metrics.cli.outputs.tables`).

Importable without torch (the argument parser uses it): the protocols and the registry are imported when the preset
is applied.

Examples:
    >>> import argparse
    >>> args = argparse.Namespace(preset="matting", task=None, protocol=None, metrics=None, tier=None)
    >>> apply_preset(args, notes=False); (args.task, args.protocol, args.metrics)
    ('matting', 'dim', ['sad', 'mse_metric', 'gradient_error', 'connectivity_error'])
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from nobg_metrics.cli.core.names import LAYOUT_PRESETS, PRESET_NAMES
from nobg_metrics.cli.core.ranks import prints_notes


@dataclass(frozen=True)
class Preset:
    """A field's table: the task and protocol it is scored under, its columns in order, where they come from."""

    task: str
    protocol: str
    metrics: tuple[str, ...]
    source: str


_F = ("f_measure_max", "f_measure_mean", "f_measure_adaptive")
_E = ("e_measure_max", "e_measure_mean", "e_measure_adaptive")

PRESETS: dict[str, Preset] = {
    # PySODEvalToolkit metrics/image_metrics.py cal_metrics(metric_names=("sm", "wfm", "mae", "fmeasure", "em")), each
    # curve measure expanded max, avg, adp as its MetricExcelRecorder / eval.py writes the columns
    "sod": Preset("sod", "pysodmetrics", ("s_measure", "weighted_f_measure", "mae", *_F, *_E),
                  "PySODEvalToolkit (sm wfm mae fmeasure em: max, avg, adp)"),
    # BiRefNet eval_existingOnes.py task_to_field_names["DIS5K"] (the DIS5K paper's maxF, wF, M, S, E^m, HCE first)
    "dis": Preset("sod", "pysodmetrics", ("f_measure_max", "weighted_f_measure", "mae", "s_measure", "e_measure_mean",
                                          "hce", "e_measure_max", "f_measure_mean", "e_measure_adaptive",
                                          "f_measure_adaptive"),
                  "BiRefNet DIS5K (maxFm wFmeasure MAE Smeasure meanEm HCE maxEm meanFm adpEm adpFm)"),
    # COD tables (SINet, SINet-V2, ZoomNet, ...): S_alpha, F^w_beta, MAE, then the E_phi and F_beta modes
    "cod": Preset("sod", "pysodmetrics", ("s_measure", "weighted_f_measure", "mae", "e_measure_mean", "e_measure_max",
                                          "e_measure_adaptive", "f_measure_mean", "f_measure_max",
                                          "f_measure_adaptive"),
                  "COD papers (S_α, F^ω_β, MAE, E_φ mean/max/adp, F_β mean/max/adp)"),
    # BiRefNet task_to_field_names["HRSOD"] without its DIS-only HCE and its BIoU columns, with mBA
    "hrsod": Preset("sod", "pysodmetrics", ("s_measure", "f_measure_max", "e_measure_mean", "mae", "e_measure_max",
                                            "f_measure_mean", "weighted_f_measure", "e_measure_adaptive",
                                            "f_measure_adaptive", "mba"),
                    "BiRefNet HRSOD (Smeasure maxFm meanEm MAE maxEm meanFm wFmeasure adpEm adpFm mBA)"),
    # Composition-1k (DIM, Xu et al. 2017): SAD, MSE, Grad, Conn
    "matting": Preset("matting", "dim", ("sad", "mse_metric", "gradient_error", "connectivity_error"),
                      "Composition-1k (SAD, MSE, Grad, Conn)"),
}
"""The presets by name (:data:`~nobg_metrics.cli.core.names.PRESET_NAMES`)."""

def add_arguments(group: argparse._ArgumentGroup) -> None:
    """The ``eval`` flags of this module."""
    group.add_argument("--preset", choices=PRESET_NAMES + LAYOUT_PRESETS, default=None,
                       help="a field's table: sod (PySODEvalToolkit), dis (BiRefNet DIS5K), cod, hrsod (BiRefNet "
                            "HRSOD), matting (Composition-1k); sets --task/--protocol/--metrics unless given, and "
                            "writes the combined tables (docs/tables.md); davis: DAVIS 2017 semi-supervised J & F "
                            "from a DAVIS layout, as davis2017-evaluation prints them (docs/boundary_measures.md)")


def preset_metrics(name: str, protocol: str, task: str, available: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(metrics, left out)`` of preset ``name`` under ``protocol`` / ``task``: its columns in order, those this
    build lacks left out; ``([], [])`` when the protocol keeps its own set (another protocol of the task)."""
    # the catalog and the protocols load the metric registry (torch): not for the parser
    from nobg_metrics.catalog import CATALOG
    from nobg_metrics.cli.eval.protocols import protocol_metrics

    preset = PRESETS[name]
    fixed = protocol_metrics(protocol, task)
    if protocol == "birefnet":
        assert fixed is not None  # BiRefNet's protocol has its fixed columns
        own = {d.stands_for: d.name for d in CATALOG.values() if d.protocol == "birefnet" and d.stands_for}
        wanted = [own.get(n, n) for n in preset.metrics]  # BiRefNet's own HCE and mBA in their place
        return [n for n in wanted if n in fixed], []
    if fixed is not None and protocol != preset.protocol:
        return [], []
    if fixed is None and protocol_metrics(preset.protocol, preset.task) is not None:
        return [], []  # a matting preset under a SOD protocol: nothing of it applies
    kept = [n for n in preset.metrics if n in available]
    return kept, [n for n in preset.metrics if n not in available]


def apply_preset(args: argparse.Namespace, notes: bool = True) -> None:
    """Fill ``args`` (task, protocol, metrics) from ``args.preset``; flags given explicitly win (module docstring).
    Idempotent (ranks apply it again); notes go to stderr from the first process only."""
    name = getattr(args, "preset", None)
    if name is None:
        return
    from nobg_metrics.cli.eval.protocols import resolve_task  # loads the metric registry (torch): not for the parser
    from nobg_metrics.collection import METRIC_NAMES  # the registry (torch): not for the parser

    preset = PRESETS[name]
    if args.task is None and args.protocol is None:
        args.task, args.protocol = preset.task, preset.protocol
    if args.metrics is not None or getattr(args, "tier", None) is not None:
        return
    task, protocol = resolve_task(args.task, args.protocol)
    metrics, missing = preset_metrics(name, protocol, task, METRIC_NAMES)
    say = notes and prints_notes()
    if missing and say:
        print(f"note: this build has no {', '.join(missing)} metric: the {name} preset's "
              f"{'column is' if len(missing) == 1 else 'columns are'} left out", file=sys.stderr)
    if metrics:
        args.metrics = metrics
    elif say:
        print(f"note: --preset {name}: --protocol {protocol} keeps its own metric set", file=sys.stderr)
