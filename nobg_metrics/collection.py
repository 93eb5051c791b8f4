"""Tiers of metrics by cost: ``make_collection("cheap" | "medium" | "expensive")``.

The tiers follow the seed's cost table and are cumulative (cheap ⊂ medium ⊂ expensive):

- cheap, O(N) per image: mae, iou_metric, dice, accuracy, ber, sad, mse_metric, boundary_iou — per training step;
- medium adds the histogram measures f_measure_{max,mean,adaptive}, e_measure_{max,mean,adaptive} and
  gradient_error — per validation epoch;
- expensive adds s_measure, weighted_f_measure, connectivity_error — final evaluation.

Metrics that share statistics are declared as explicit compute groups (never automatic detection,
which has merged unrelated metrics in torchmetrics): the four overlap metrics share one confusion
count, SAD and MSE one difference map, the six F/E entries share one histogram per image.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

from torchmetrics import Metric, MetricCollection

from nobg_metrics import metrics as _metrics
from nobg_metrics._inputs import check_option

Tier = Literal["cheap", "medium", "expensive"]

# name -> (class name in nobg_metrics.metrics, fixed constructor arguments)
_REGISTRY: dict[str, tuple[str, dict[str, Any]]] = {
    "mae": ("MAE", {}),
    "iou_metric": ("IoU", {}),
    "dice": ("Dice", {}),
    "accuracy": ("Accuracy", {}),
    "ber": ("BER", {}),
    "sad": ("SAD", {}),
    "mse_metric": ("MSE", {}),
    "boundary_iou": ("BoundaryIoU", {}),
    "f_measure_max": ("FMeasure", {"mode": "max"}),
    "f_measure_mean": ("FMeasure", {"mode": "mean"}),
    "f_measure_adaptive": ("FMeasure", {"mode": "adaptive"}),
    "e_measure_max": ("EMeasure", {"mode": "max"}),
    "e_measure_mean": ("EMeasure", {"mode": "mean"}),
    "e_measure_adaptive": ("EMeasure", {"mode": "adaptive"}),
    "gradient_error": ("GradientError", {}),
    "s_measure": ("SMeasure", {}),
    "weighted_f_measure": ("WeightedFMeasure", {}),
    "connectivity_error": ("ConnectivityError", {}),
}

TIERS: dict[str, tuple[str, ...]] = {
    "cheap": ("mae", "iou_metric", "dice", "accuracy", "ber", "sad", "mse_metric", "boundary_iou"),
}
TIERS["medium"] = TIERS["cheap"] + (
    "f_measure_max", "f_measure_mean", "f_measure_adaptive",
    "e_measure_max", "e_measure_mean", "e_measure_adaptive", "gradient_error",
)
TIERS["expensive"] = TIERS["medium"] + ("s_measure", "weighted_f_measure", "connectivity_error")

SHARED_GROUPS: tuple[tuple[str, ...], ...] = (
    ("iou_metric", "dice", "accuracy", "ber"),
    ("sad", "mse_metric"),
    ("f_measure_max", "f_measure_mean", "f_measure_adaptive", "e_measure_max", "e_measure_mean", "e_measure_adaptive"),
)
"""Metrics whose states are identical by construction (same names, same statistics)."""

METRIC_NAMES: tuple[str, ...] = TIERS["expensive"]


_BASE_OPTIONS = frozenset(
    {"sync_on_compute", "dist_sync_on_step", "process_group", "dist_sync_fn", "distributed_available_fn",
     "compute_on_cpu", "compute_with_cache"}
)
"""``torchmetrics.Metric`` keyword arguments every metric takes."""


def metric_class(name: str) -> type[Metric]:
    """The ``Metric`` class behind a collection name, e.g. ``metric_class("f_measure_max") is FMeasure``."""
    if name not in _REGISTRY:
        raise ValueError(f"`name` must be among {METRIC_NAMES}; got {name!r}")
    return getattr(_metrics, _REGISTRY[name][0])


def accepted_options(name: str) -> frozenset[str]:
    """The options (constructor keywords, beyond the fixed mode) the metric behind ``name`` takes."""
    parameters = inspect.signature(metric_class(name).__init__).parameters
    named = {key for key, parameter in parameters.items() if parameter.kind is parameter.KEYWORD_ONLY
             or parameter.kind is parameter.POSITIONAL_OR_KEYWORD}
    return frozenset(named - {"self"} - set(_REGISTRY[name][1])) | _BASE_OPTIONS


def _build(name: str, options: dict[str, Any], used: set[str]) -> Metric:
    accepted = accepted_options(name)
    kwargs = {key: value for key, value in options.items() if key in accepted}
    used.update(kwargs)
    return metric_class(name)(**_REGISTRY[name][1], **kwargs)


def make_collection(
    tier: Tier = "cheap",
    prefix: str | None = None,
    postfix: str | None = None,
    *,
    metrics: list[str] | tuple[str, ...] | None = None,
    **options: Any,
) -> MetricCollection:
    """A ``MetricCollection`` of a cost tier, keyed by the functional names.

    Args:
        tier: ``"cheap"``, ``"medium"`` or ``"expensive"`` (cumulative).
        prefix: prepended to every key (e.g. ``"val/"``).
        postfix: appended to every key.
        metrics: an explicit subset of names instead of a tier.
        options: passed to every metric whose constructor takes them (``normalize``, ``empty_gt``,
            ``threshold``, ``dilation_ratio``, ``beta2``, ``validate_args``, ...). An option that no metric of
            the collection takes is an error.

    Returns:
        a ``torchmetrics.MetricCollection`` with explicit compute groups; ``update(pred, gt)`` or
        ``update(pred, gt, trimap=trimap)``.

    Example:
        >>> import torch
        >>> collection = make_collection("cheap", prefix="val/")
        >>> collection.update(torch.rand(2, 1, 16, 16), torch.rand(2, 1, 16, 16) > 0.5)
        >>> sorted(collection.compute())[:3]
        ['val/accuracy', 'val/ber', 'val/boundary_iou']
    """
    check_option("tier", tier, Tier)
    names = tuple(metrics) if metrics is not None else TIERS[tier]
    for name in names:
        if name not in _REGISTRY:
            raise ValueError(f"`metrics` entries must be among {METRIC_NAMES}; got {name!r}")
    used: set[str] = set()
    built = {name: _build(name, options, used) for name in names}
    unused = sorted(set(options) - used)
    if unused:
        raise TypeError(f"options {unused} are taken by no metric of {names}")
    groups = [[name for name in group if name in built] for group in SHARED_GROUPS]
    groups = [group for group in groups if group]
    grouped = {name for group in groups for name in group}
    groups += [[name] for name in names if name not in grouped]
    return MetricCollection(built, prefix=prefix, postfix=postfix, compute_groups=groups)
