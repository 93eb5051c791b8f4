"""The metric catalog: one :class:`Descriptor` per registered name, the single place a metric is declared.

Everything that lists metrics reads it: the registry and the tiers (:mod:`nobg_metrics.collection`), the compute
groups of a collection, the extra inputs a collection routes (``trimap=``, ``image=``), the command's metric sets
and columns, and the docs' tables of names (``tools/metric_names.py``). Adding a metric is one entry here, its
functional module and its tests (docs/adding_a_metric.md).

Tiers, by measured cost per image (docs/performance.md), cumulative:

- ``cheap``, O(N): mae, iou_metric, dice, accuracy, ber, sad, mse_metric, boundary_iou — per training step;
- ``medium`` adds the histogram measures (F and E max / mean / adaptive), gradient_error and the Boundary IoU paper's
  trimap_iou and boundary_f_measure (the cost of boundary_iou) — per validation epoch;
- ``expensive`` adds s_measure, weighted_f_measure, connectivity_error, msiou_max / msiou_mean, context_measure and
  hce — final evaluation.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from torch import Tensor
from torchmetrics import Metric

import nobg_metrics.functional as F
import nobg_metrics.metrics as M
from nobg_metrics.functional.boundary.hqsam import _hqsam_boundary_iou_update, _hqsam_iou_update, check_hqsam_options
from nobg_metrics.functional.sod.confusion_measures import MEASURES
from nobg_metrics.functional.sod.family import AUC_CURVES
from nobg_metrics.functional.sod.size_invariance import SI_ENTRIES
from nobg_metrics.metrics.per_image import per_image_metric
from nobg_metrics.metrics.sod.confusion import ConfusionMetric

Tier = Literal["cheap", "medium", "expensive"]
Task = Literal["sod", "matting"]

BASE_OPTIONS = frozenset({"sync_on_compute", "dist_sync_on_step", "process_group", "dist_sync_fn",
                          "distributed_available_fn", "compute_on_cpu", "compute_with_cache"})
"""``torchmetrics.Metric`` keyword arguments every metric takes."""


@dataclass(frozen=True)
class Descriptor:
    """One registered metric.

    Attributes:
        name: the registry name (a collection key, a column of the command's tables).
        metric: the ``Metric`` class.
        functional: its functional form with ``arguments`` applied: ``functional(pred, gt, ...)``.
        arguments: fixed constructor arguments (``{"mode": "max"}``).
        tier: the cost tier it joins (and every tier above), or ``None`` (by name only).
        task: ``"sod"`` or ``"matting"`` (the command prints matting measures in their own table and units).
        inputs: the extra ``update`` inputs it reads (``"trimap"``, ``"image"``, ``"gt_skeleton"``).
        requires: those of ``inputs`` without which its ``update`` raises.
        statistic: a compute-group key: the entries of a collection with the same key share one statistics pass.
        uint8_only: it reads 8-bit maps only (BiRefNet's and the DIS tool's readings of PNG bytes).
        reference: the reference tool it equals.
        page: its docs page.
    """

    name: str
    metric: type[Metric]
    functional: Callable[..., Tensor]
    arguments: Mapping[str, Any] = field(default_factory=dict)
    tier: Tier | None = None
    task: Task = "sod"
    inputs: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    statistic: str | None = None
    uint8_only: bool = False
    reference: str = ""
    page: str = ""

    @functools.cached_property
    def options(self) -> frozenset[str]:
        """The constructor options it takes beyond its fixed ``arguments`` (torchmetrics' own included)."""
        parameters = inspect.signature(self.metric.__init__).parameters.values()
        named = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"self"}
        return frozenset(named - set(self.arguments)) | BASE_OPTIONS

    def build(self, **options: Any) -> Metric:
        """The metric with its fixed arguments and ``options`` (each must be one it takes)."""
        return self.metric(**self.arguments, **options)


def _entry(name: str, metric: type[Metric], functional: Callable[..., Tensor], **fields: Any) -> Descriptor:
    arguments = fields.pop("arguments", {})
    bound = functools.partial(functional, **arguments) if arguments else functional
    return Descriptor(name, metric, bound, arguments, **fields)


HQSAMIoU = per_image_metric("HQSAMIoU", F.hqsam_iou, _hqsam_iou_update, higher_is_better=True,
                            check=check_hqsam_options)
"""HQ-SAM's mIoU as a ``Metric`` (:func:`nobg_metrics.functional.hqsam_iou`: options and value)."""
HQSAMBoundaryIoU = per_image_metric("HQSAMBoundaryIoU", F.hqsam_boundary_iou, _hqsam_boundary_iou_update,
                                    higher_is_better=True, check=check_hqsam_options)
"""HQ-SAM's mBIoU as a ``Metric`` (:func:`nobg_metrics.functional.hqsam_boundary_iou`: options and value)."""

_PYSOD = "PySODMetrics 1.6.2"
_DIM = "DIM MATLAB evaluation"
_P3M = "JizhiziLi/P3M core/evaluate.py"
_MATTING = {"task": "matting", "inputs": ("trimap",)}
_CURVES = {"statistic": "confusion", "reference": f"{_PYSOD} Fmeasure / Emeasure", "page": "confusion_family.md"}
_P3M_ERRORS = {**_MATTING, "statistic": "p3m_pixel_errors", "reference": _P3M, "page": "matting_protocols.md"}
_P3M_TRIMAP = {**_P3M_ERRORS, "requires": ("trimap",)}

_DECLARED: tuple[Descriptor, ...] = (
    # cheap
    _entry("mae", M.MAE, F.mae, tier="cheap", reference=f"{_PYSOD} MAE", page="mae.md"),
    _entry("iou_metric", M.IoU, F.iou_metric, tier="cheap", statistic="confusion",
           reference=f"{_PYSOD} FmeasureV2 IOUHandler", page="overlap.md"),
    _entry("dice", M.Dice, F.dice, tier="cheap", statistic="confusion",
           reference=f"{_PYSOD} FmeasureV2 DICEHandler", page="overlap.md"),
    _entry("accuracy", M.Accuracy, F.accuracy, tier="cheap", statistic="confusion",
           reference=f"{_PYSOD} FmeasureV2 OverallAccuracyHandler", page="overlap.md"),
    _entry("ber", M.BER, F.ber, tier="cheap", statistic="confusion",
           reference=f"{_PYSOD} FmeasureV2 BERHandler", page="overlap.md"),
    _entry("sad", M.SAD, F.sad, tier="cheap", **_MATTING, statistic="sad_mse", reference=_DIM, page="matting.md"),
    _entry("mse_metric", M.MSE, F.mse_metric, tier="cheap", **_MATTING, statistic="sad_mse", reference=_DIM,
           page="matting.md"),
    _entry("boundary_iou", M.BoundaryIoU, F.boundary_iou, tier="cheap", reference="boundary-iou-api",
           page="boundary_iou.md"),
    # medium
    *(_entry(f"{measure}_{mode}", metric, functional, arguments={"mode": mode}, tier="medium", **_CURVES)
      for measure, metric, functional in (("f_measure", M.FMeasure, F.f_measure),
                                          ("e_measure", M.EMeasure, F.e_measure))
      for mode in ("max", "mean", "adaptive")),
    _entry("gradient_error", M.GradientError, F.gradient_error, tier="medium", **_MATTING, reference=_DIM,
           page="matting.md"),
    _entry("trimap_iou", M.TrimapIoU, F.trimap_iou, tier="medium", reference="the Boundary IoU paper's Trimap IoU",
           page="boundary_measures.md"),
    _entry("boundary_f_measure", M.BoundaryFMeasure, F.boundary_f_measure, tier="medium",
           reference="the Boundary IoU paper's boundary F-measure", page="boundary_measures.md"),
    # expensive
    _entry("s_measure", M.SMeasure, F.s_measure, tier="expensive", reference=f"{_PYSOD} Smeasure",
           page="s_measure.md"),
    _entry("weighted_f_measure", M.WeightedFMeasure, F.weighted_f_measure, tier="expensive",
           reference=f"{_PYSOD} WeightedFmeasure", page="weighted_f_measure.md"),
    _entry("connectivity_error", M.ConnectivityError, F.connectivity_error, tier="expensive", **_MATTING,
           reference=_DIM, page="matting.md"),
    *(_entry(f"msiou_{mode}", M.MSIoU, F.msiou, arguments={"mode": mode}, tier="expensive" if mode in ("max", "mean")
             else None, statistic="msiou_curve" if mode in ("max", "mean") else None, reference=f"{_PYSOD} MSIoU",
             page="msiou.md")
      for mode in ("max", "mean", "adaptive", "binary")),
    _entry("context_measure", M.ContextMeasure, F.context_measure, tier="expensive",
           reference=f"{_PYSOD} ContextMeasure", page="context_measure.md"),
    _entry("hce", M.HCE, F.hce, tier="expensive", inputs=("gt_skeleton",),
           reference=f"{_PYSOD} HumanCorrectionEffortMeasure", page="hce.md"),
    # by name
    _entry("camouflage_context_measure", M.CamouflageContextMeasure, F.camouflage_context_measure, inputs=("image",),
           requires=("image",), reference=f"{_PYSOD} CamouflageContextMeasure", page="context_measure.md"),
    _entry("si_mae", M.SizeInvariantMAE, F.si_mae, reference=f"{_PYSOD} SizeInvarianceMAE", page="size_invariance.md"),
    *(Descriptor(name, M.SizeInvariantConfusion,
                 functools.partial(F.size_invariant, measure, mode=mode, sample_based=sample_based),
                 {"measure": measure, "mode": mode, "sample_based": sample_based}, statistic="size_invariant",
                 reference=f"{_PYSOD} SizeInvarianceFmeasureV2", page="size_invariance.md")
      for name, (measure, mode, sample_based) in SI_ENTRIES.items()),
    # the P3M-10k / AM-2k / AIM-500 protocol (raw values)
    _entry("p3m_sad", M.P3MSAD, F.p3m_sad, **_P3M_ERRORS),
    _entry("p3m_sad_trimap", M.P3MSAD, F.p3m_sad, arguments={"region": "trimap"}, **_P3M_TRIMAP),
    _entry("p3m_sad_fg", M.P3MSAD, F.p3m_sad, arguments={"region": "fg"}, **_P3M_TRIMAP),
    _entry("p3m_sad_bg", M.P3MSAD, F.p3m_sad, arguments={"region": "bg"}, **_P3M_TRIMAP),
    _entry("p3m_mse", M.P3MMSE, F.p3m_mse, **_P3M_ERRORS),
    _entry("p3m_mse_trimap", M.P3MMSE, F.p3m_mse, arguments={"region": "trimap"}, **_P3M_TRIMAP),
    _entry("p3m_mad", M.P3MMAD, F.p3m_mad, **_P3M_ERRORS),
    _entry("p3m_mad_trimap", M.P3MMAD, F.p3m_mad, arguments={"region": "trimap"}, **_P3M_TRIMAP),
    _entry("p3m_gradient", M.P3MGradientError, F.p3m_gradient_error, **_MATTING, reference=_P3M,
           page="matting_protocols.md"),
    _entry("p3m_connectivity", M.P3MConnectivityError, F.p3m_connectivity_error, **_MATTING, reference=_P3M,
           page="matting_protocols.md"),
    # BiRefNet's boundary columns and its own readings
    _entry("mba", M.MBA, F.mean_boundary_accuracy, reference="CascadePSP compute_boundary_acc",
           page="birefnet_protocol.md"),
    *(_entry(f"grey_biou_{mode}", M.GreyBoundaryIoU, F.grey_boundary_iou, arguments={"mode": mode},
             statistic="grey_boundary_curve", reference="BiRefNet evaluation/metrics.py", page="birefnet_protocol.md")
      for mode in ("max", "mean")),
    _entry("birefnet_mse", M.BinarisedGtMSE, F.binarised_gt_mse, uint8_only=True,
           reference="BiRefNet evaluation/metrics.py", page="birefnet_protocol.md"),
    _entry("birefnet_hce", M.HCE, F.hce, arguments={"protocol": "dis", "normalize": False}, inputs=("gt_skeleton",),
           uint8_only=True,
           reference="DIS hce_metric_main.py (BiRefNet's column)", page="birefnet_protocol.md"),
    _entry("birefnet_mba", M.MBA, F.mean_boundary_accuracy, arguments={"empty_gt": "reference", "normalize": False},
           reference="CascadePSP compute_boundary_acc (BiRefNet's column)", page="birefnet_protocol.md"),
    # HQ-SAM's training-time mIoU / mBIoU (SysCV/sam-hq train/utils/misc.py)
    _entry("hqsam_iou", HQSAMIoU, F.hqsam_iou, reference="SysCV/sam-hq compute_iou", page="birefnet_protocol.md"),
    _entry("hqsam_boundary_iou", HQSAMBoundaryIoU, F.hqsam_boundary_iou, reference="SysCV/sam-hq compute_boundary_iou",
           page="birefnet_protocol.md"),
)


def _family() -> tuple[Descriptor, ...]:
    """``<measure>_<mode>`` entries of every confusion-family class (measures and modes from the classes and the
    measure registry), except those declared above (``iou_metric`` is IoU's binary mode, ``f_measure_max`` ...)."""

    def effective(metric: type[ConfusionMetric], arguments: Mapping[str, Any]) -> tuple[type, str, str]:
        return metric, arguments.get("mode", metric._default_mode), arguments.get("reduction", "mean")

    declared = {effective(d.metric, d.arguments) for d in _DECLARED
                if isinstance(d.metric, type) and issubclass(d.metric, ConfusionMetric)}
    entries: list[Descriptor] = []
    for name in sorted(M.__all__):  # the classes in name order (the registry's order of these entries)
        metric = getattr(M, name)
        measure = metric.__dict__.get("_measure") if isinstance(metric, type) else None
        if not (issubclass(metric, ConfusionMetric) and measure):
            continue
        fields = {"statistic": "confusion", "reference": f"{_PYSOD} FmeasureV2", "page": "confusion_family.md"}
        if measure in AUC_CURVES:
            entries.append(_entry(measure, metric, metric.functional, **fields))
            continue
        modes: dict[str, dict[str, Any]] = {mode: {"mode": mode} for mode in ("max", "mean", "adaptive")}
        if MEASURES[measure].binary_reference:  # the E-measure's binary mode has no reference
            modes["binary"] = {"mode": "binary"}
            modes["pooled"] = {"mode": "binary", "reduction": "pooled"}
        for mode, arguments in modes.items():
            candidate = _entry(f"{measure}_{mode}", metric, metric.functional, arguments=arguments, **fields)
            if effective(metric, candidate.arguments) not in declared:
                entries.append(candidate)
    return tuple(entries)


CATALOG: dict[str, Descriptor] = {d.name: d for d in (*_DECLARED, *_family())}
"""Every registered metric by name: the tiers' members first, then the rest."""


def descriptor(name: str) -> Descriptor:
    """The descriptor of a registered name; an unknown name is a ``ValueError`` listing the known ones.

    Examples:
        >>> descriptor("f_measure_max").metric.__name__, dict(descriptor("f_measure_max").arguments)
        ('FMeasure', {'mode': 'max'})
    """
    if name not in CATALOG:
        raise ValueError(f"metric names must be among {tuple(CATALOG)}; got {name!r}")
    return CATALOG[name]


TIER_ORDER: tuple[Tier, ...] = ("cheap", "medium", "expensive")
TIERS: dict[str, tuple[str, ...]] = {
    tier: tuple(d.name for d in CATALOG.values() if d.tier in TIER_ORDER[: TIER_ORDER.index(tier) + 1])
    for tier in TIER_ORDER
}
"""The names of each tier (cumulative: cheap ⊂ medium ⊂ expensive)."""

METRIC_NAMES: tuple[str, ...] = tuple(CATALOG)
"""Every registered name."""


def names_with(*, task: Task | None = None, input_name: str | None = None, required: str | None = None,
               statistic: str | None = None) -> tuple[str, ...]:
    """The registered names matching every given filter (a task, an extra input read or required, a statistic).

    Examples:
        >>> names_with(required="image")
        ('camouflage_context_measure',)
    """
    return tuple(d.name for d in CATALOG.values()
                 if (task is None or d.task == task) and (input_name is None or input_name in d.inputs)
                 and (required is None or required in d.requires) and (statistic is None or d.statistic == statistic))
