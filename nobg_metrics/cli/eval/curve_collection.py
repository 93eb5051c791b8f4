"""The curves of a job, collected from its metrics after scoring (the scoring side of the command: it reads the
metrics' states, so it needs torch; the files the curves are saved in: :mod:`nobg_metrics.cli.outputs.curve_data`).

**What is collected** (:func:`collect_curves`, per job, after its metrics are computed and synced across ranks):
every mean per-image curve the job's confusion-family metrics hold — ``sum over images of the per-image T-point
curve / number of images`` (PySODMetrics' aggregation, docs/references.md), from the metrics' own ``curves()``
(:meth:`~nobg_metrics.metrics.sod.confusion.ConfusionMetric.curves`). Nothing is rescored: a curve no metric of the
run holds is absent. FMeasure / EMeasure in any threshold mode (``f_measure_*``, ``e_measure_*``) hold
precision, recall, F and E; ``<measure>_max`` / ``<measure>_mean`` hold that measure's curve (``iou_max`` ->
iou, ``dice_mean`` -> dice, ``fpr_max`` -> fpr, ...); ``pr_auc`` holds precision and recall, ``roc_auc``
recall and fpr (in a collection every family member holds the union of the family's statistics);
``grey_biou_max`` / ``grey_biou_mean`` (BiRefNet's BIoU columns) hold the grey-boundary IoU curve.

**Sources:** a curve's source is the first metric, in the run's metric order, whose own mode reads that curve
(``f_measure_max`` for F, ``e_measure_mean`` for E, ``iou_max`` for IoU, ``pr_auc`` for precision and recall);
a curve no metric's mode reads (precision and recall under ``--preset sod``) names the first metric that holds it
as a by-product of its class (``f_measure_max``: FMeasure keeps P, R, F and E). The callers pass the members in the
run's order (a ``MetricCollection`` sorts them by name).

The result is a :data:`~nobg_metrics.cli.outputs.curve_kinds.JobCurves` dict of plain Python floats (exact float64).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from torch import Tensor

from nobg_metrics.cli.core.dist import world
from nobg_metrics.cli.outputs.curve_kinds import JobCurves
from nobg_metrics.functional.sod.family import mode_requests
from nobg_metrics.metrics.boundary.grey_boundary_iou import GreyBoundaryIoU
from nobg_metrics.metrics.sod.confusion import ConfusionMetric


def collect_curves(members: dict[str, Any]) -> JobCurves | None:
    """A job's curves from its metrics ``name -> Metric`` (in the run's metric order), synced across ranks; None when
    no metric holds one.

    Each state is synced once: a member is asked only for curves no earlier member gave (every rank asks the
    same members, in the same order). Members with another number of thresholds than the first are skipped.
    Sources: module notes.
    """
    thresholds: list[float] | None = None
    values: dict[str, list[float]] = {}
    sources: dict[str, str] = {}
    holders: dict[str, str] = {}  # measure -> the first member holding it (a by-product of its class included)
    for name, metric in members.items():
        if isinstance(metric, ConfusionMetric):
            own = mode_requests(metric._measure, metric.mode, metric.reduction)  # what its mode reads itself
            own_curves = {m for m, reduction in own if reduction == "curve"}
            held = {m for m, reduction in metric.requests if reduction == "curve"}
            read: Callable[[], dict[str, Tensor]]
            read = functools.partial(ConfusionMetric.curves, metric)  # all held (FMeasure.curves() keeps P/R/F/E)
        elif isinstance(metric, GreyBoundaryIoU):
            own_curves = held = {"grey_boundary_iou"}
            read = metric.curves
        else:
            continue
        for measure in sorted(own_curves):
            sources.setdefault(measure, name)
        for measure in sorted(held):
            holders.setdefault(measure, name)
        if not held - set(values):
            continue
        with metric.sync_context(should_sync=metric.sync_on_compute and world()[1] > 1):
            curves = dict(read())
        points = curves.pop("thresholds").double().cpu().tolist()
        if thresholds is not None and len(points) != len(thresholds):
            continue
        thresholds = points
        for measure in sorted(curves):
            values.setdefault(measure, curves[measure].double().cpu().tolist())
    if not values:
        return None
    return {"thresholds": thresholds, "values": values,
            "sources": {m: sources.get(m) or holders.get(m, "") for m in values}}
