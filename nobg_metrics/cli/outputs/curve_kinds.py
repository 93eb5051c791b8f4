"""What the command's curves are: the kinds it draws and the measures each needs (:data:`KINDS`), and the in-memory
form of a job's curves (:data:`JobCurves`, :data:`CurveEntry`; docs/curves.md).

Standard library only: the saved curve data (:mod:`~nobg_metrics.cli.outputs.curve_data`), the style
(:mod:`~nobg_metrics.cli.outputs.plot_style`), the figure (:mod:`~nobg_metrics.cli.outputs.plots`) and the collection
from the metrics (:mod:`~nobg_metrics.cli.eval.curve_collection`) all speak in these terms.
"""

from __future__ import annotations

from typing import Any

JobCurves = dict[str, Any]
"""``{"thresholds": [T floats, descending], "values": {measure: [T floats]}, "sources": {measure: metric name}}``
(:mod:`~nobg_metrics.cli.outputs.curve_data`)."""

CurveEntry = dict[str, Any]
"""A :data:`JobCurves` with ``"dataset"`` and ``"method"``."""

KINDS: dict[str, tuple[str, ...]] = {
    "pr": ("precision", "recall"), "roc": ("recall", "fpr"), "f": ("f_measure",), "e": ("e_measure",),
    "iou": ("iou",), "dice": ("dice",), "biou": ("grey_boundary_iou",),
}
"""The plotted curve kinds and the measures each needs: PR = precision over recall, ROC = TPR (recall) over FPR,
the others the measure against the threshold (``biou``: BiRefNet's grey-boundary IoU)."""
