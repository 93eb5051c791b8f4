"""The metric catalog: one :class:`Descriptor` per registered name, the single place a metric is declared.

Every public metric class has one (or, with fixed arguments, several) entries. Everything that lists metrics reads
it: the registry and the tiers (:mod:`nobg_metrics.collection`), the compute groups of a collection, the extra inputs
a collection routes (``trimap=``, ``image=``), the command's metric sets and columns, and the docs' tables of names
(``tools/metric_names.py``, run at docs build), reading :data:`CATALOG` when they are used. The entries are declared
in :mod:`nobg_metrics.catalog.entries`, the :class:`Descriptor` in :mod:`nobg_metrics.catalog.descriptor`; adding a
metric is one entry there (or :func:`register`), its functional, its class and its test (docs/adding_a_metric.md).

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

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from nobg_metrics.catalog.descriptor import (
    BASE_OPTIONS,
    MAPS_PREPARER,
    Descriptor,
    Kind,
    Task,
    Tier,
    declare,
    derived_label,
)
from nobg_metrics.catalog.entries import ENTRIES

__all__ = ["BASE_OPTIONS", "CATALOG", "MAPS_PREPARER", "METRIC_NAMES", "TIERS", "TIER_ORDER", "Descriptor", "Kind",
           "Task", "Tier", "declare", "derived_label", "descriptor", "names_with", "register"]

CATALOG: dict[str, Descriptor] = {d.name: d for d in ENTRIES}
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

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

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
