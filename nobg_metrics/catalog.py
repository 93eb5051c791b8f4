"""The metric catalog: one :class:`Descriptor` per registered name, the single place a metric is declared.

Every public metric class has one (or, with fixed arguments, several) entries. Everything that lists metrics reads
it: the registry and the tiers (:mod:`nobg_metrics.collection`), the compute groups of a collection, the extra inputs
a collection routes (``trimap=``, ``image=``), the command's metric sets and columns, and the docs' tables of names
(``tools/metric_names.py``, run at docs build). Adding a metric is one entry here (or :func:`register`), its
functional module and its tests (docs/adding_a_metric.md).

Each entry names its input kind (:data:`Kind`): the ``"maps"`` entries (``update(pred, gt)``) make the tiers, the
collections and ``nobg-metrics eval``'s names; the structured-input classes (``MeanAveragePrecision``,
``CityscapesInstanceAP``, ``PanopticQuality``, ``DavisJ`` / ``DavisF`` / ``DavisJAndF``) are in the catalog with their
kind and preparer, in no tier, and a collection refuses them.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from torchmetrics import Metric

import nobg_metrics.functional as F
import nobg_metrics.metrics as M
from nobg_metrics.functional.sod.confusion_measures import MEASURES
from nobg_metrics.functional.sod.family import AUC_CURVES
from nobg_metrics.functional.sod.size_invariance import SI_ENTRIES
from nobg_metrics.metrics.sod.confusion import ConfusionMetric

Tier = Literal["cheap", "medium", "expensive"]
Task = Literal["sod", "matting"]
Kind = Literal["maps", "instances", "cityscapes", "panoptic", "video"]
"""What ``update`` takes: ``maps`` (``pred`` / ``gt`` maps: the collections, the tiers and ``nobg-metrics eval``),
``instances`` (COCO-style dicts per image), ``cityscapes`` (instance-id maps and scored masks), ``panoptic`` (panoptic
maps and categories), ``video`` (frames with sequence keys)."""
MAPS_PREPARER = "nobg_metrics._inputs.prepare"

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
        kind: what its ``update`` takes (:data:`Kind`); only ``"maps"`` entries join the tiers, the collections and
            the command's metric sets.
        preparer: the dotted name of the functional layer's function that checks and prepares its inputs.
    """

    name: str
    metric: type[Metric]
    functional: Callable[..., Any]
    arguments: Mapping[str, Any] = field(default_factory=dict)
    tier: Tier | None = None
    task: Task = "sod"
    inputs: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    statistic: str | None = None
    uint8_only: bool = False
    reference: str = ""
    page: str = ""
    kind: Kind = "maps"
    preparer: str = MAPS_PREPARER

    @functools.cached_property
    def options(self) -> frozenset[str]:
        """The constructor options it takes beyond its fixed ``arguments`` (torchmetrics' own included)."""
        parameters = inspect.signature(self.metric.__init__).parameters.values()
        named = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"self"}
        return frozenset(named - set(self.arguments)) | BASE_OPTIONS

    def build(self, **options: Any) -> Metric:
        """The metric with its fixed arguments and ``options`` (each must be one it takes)."""
        return self.metric(**self.arguments, **options)


def _entry(name: str, metric: type[Metric], functional: Callable[..., Any], **fields: Any) -> Descriptor:
    arguments = fields.pop("arguments", {})
    bound = functools.partial(functional, **arguments) if arguments else functional
    return Descriptor(name, metric, bound, arguments, **fields)


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
    _entry("hqsam_iou", M.HQSAMIoU, F.hqsam_iou, reference="SysCV/sam-hq compute_iou", page="birefnet_protocol.md"),
    _entry("hqsam_boundary_iou", M.HQSAMBoundaryIoU, F.hqsam_boundary_iou,
           reference="SysCV/sam-hq compute_boundary_iou", page="birefnet_protocol.md"),
    # structured inputs: no tier, no collection (each class takes its own inputs)
    _entry("mean_average_precision", M.MeanAveragePrecision, F.mean_average_precision, kind="instances",
           preparer="nobg_metrics.functional.instance.inputs.prepare_instances",
           reference="pycocotools COCOeval / lvis-api LVISEval", page="instance_segmentation.md"),
    _entry("cityscapes_instance_ap", M.CityscapesInstanceAP, F.cityscapes_instance_ap, kind="cityscapes",
           preparer="nobg_metrics.functional.instance.cityscapes_inputs.size_groups",
           reference="cityscapesScripts evalInstanceLevelSemanticLabeling", page="cityscapes_instances.md"),
    _entry("panoptic_quality", M.PanopticQuality, F.panoptic_quality, kind="panoptic",
           preparer="nobg_metrics.functional.panoptic.inputs.prepare_panoptic",
           reference="panopticapi pq_compute", page="panoptic.md"),
    *(_entry(name, metric, functional, kind="video", preparer="nobg_metrics.functional.video.davis.prepare_davis",
             reference="davis2017-evaluation", page="boundary_measures.md")
      for name, metric, functional in (("davis_j", M.DavisJ, F.davis_j), ("davis_f", M.DavisF, F.davis_f),
                                       ("davis_j_and_f", M.DavisJAndF, F.davis_j_and_f))),
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
"""Every registered metric by name: the tiers' members first, then the rest (:func:`register` adds one)."""

TIER_ORDER: tuple[Tier, ...] = ("cheap", "medium", "expensive")


def register(entry: Descriptor) -> Descriptor:
    """Add ``entry`` to the catalog: :data:`TIERS`, :data:`METRIC_NAMES`, ``make_collection``, the command and the
    metric-names page read it from then on (they read :data:`CATALOG` when used). A name already taken is an error.

    Examples:
        >>> register(descriptor("mae"))
        Traceback (most recent call last):
        ...
        ValueError: metric name 'mae' is already registered (MAE)
    """
    if entry.name in CATALOG:
        raise ValueError(f"metric name {entry.name!r} is already registered ({CATALOG[entry.name].metric.__name__})")
    if entry.tier is not None and entry.kind != "maps":
        raise ValueError(f"a tier takes pred / gt maps only: {entry.name!r} is of kind {entry.kind!r}")
    CATALOG[entry.name] = entry
    return entry


def descriptor(name: str) -> Descriptor:
    """The descriptor of a registered name; an unknown name is a ``ValueError`` listing the known ones.

    Examples:
        >>> descriptor("f_measure_max").metric.__name__, dict(descriptor("f_measure_max").arguments)
        ('FMeasure', {'mode': 'max'})
    """
    if name not in CATALOG:
        raise ValueError(f"metric names must be among {tuple(CATALOG)}; got {name!r}")
    return CATALOG[name]


class _Names(Sequence[str]):
    """The names of the ``"maps"`` entries of :data:`CATALOG` in its order, read when used (a tuple's behaviour)."""

    def _names(self) -> tuple[str, ...]:
        return tuple(name for name, d in CATALOG.items() if d.kind == "maps")

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return name in CATALOG and CATALOG[name].kind == "maps"

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, _Names) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._names())


class _Tiers(Mapping[str, tuple[str, ...]]):
    """Each tier's names (cumulative), from :data:`CATALOG` when read."""

    def __getitem__(self, tier: str) -> tuple[str, ...]:
        if tier not in TIER_ORDER:
            raise KeyError(tier)
        chosen = TIER_ORDER[: TIER_ORDER.index(tier) + 1]
        return tuple(d.name for d in CATALOG.values() if d.tier in chosen)

    def __iter__(self) -> Iterator[str]:
        return iter(TIER_ORDER)

    def __len__(self) -> int:
        return len(TIER_ORDER)

    def __repr__(self) -> str:
        return repr(dict(self))


TIERS: Mapping[str, tuple[str, ...]] = _Tiers()
"""The names of each tier (cumulative: cheap ⊂ medium ⊂ expensive), read from :data:`CATALOG` when used.

Examples:
    >>> TIERS["cheap"]
    ('mae', 'iou_metric', 'dice', 'accuracy', 'ber', 'sad', 'mse_metric', 'boundary_iou')
"""

METRIC_NAMES: Sequence[str] = _Names()
"""Every registered name a collection and the command take (the ``"maps"`` entries), read from :data:`CATALOG`."""


def names_with(*, task: Task | None = None, input_name: str | None = None, required: str | None = None,
               statistic: str | None = None, kind: Kind | None = "maps") -> tuple[str, ...]:
    """The registered names matching every given filter (a task, an extra input read or required, a statistic, an
    input kind: ``"maps"`` unless given, ``None`` for every kind).

    Examples:
        >>> names_with(required="image")
        ('camouflage_context_measure',)
        >>> names_with(kind="video")
        ('davis_j', 'davis_f', 'davis_j_and_f')
    """
    return tuple(d.name for d in CATALOG.values()
                 if (task is None or d.task == task) and (input_name is None or input_name in d.inputs)
                 and (required is None or required in d.requires) and (statistic is None or d.statistic == statistic)
                 and (kind is None or d.kind == kind))
