"""Collections of catalog metrics: ``make_collection("cheap" | "medium" | "expensive")`` and :class:`NobgCollection`.

The names, tiers, groups and extra inputs come from :mod:`nobg_metrics.catalog`. Metrics that share statistics are
declared groups (never torchmetrics' automatic detection, which has merged unrelated metrics): the entries of one
``statistic`` key — the confusion family, the size-invariant family, SAD and MSE, the P3M pixel errors, the MSIoU and
grey-BIoU curves — compute their statistics once per batch; a family member computes the union of its group's
statistics (``share_statistics``) so that all of them hold the same states.

A :class:`NobgCollection` is all-or-nothing: ``update`` and ``forward`` first form every group's statistics of the
batch (any error — a bad trimap only the matting members read, a missing ``image`` — raises here, before any state
moves), then add them to every member in one step. A plain ``torchmetrics.MetricCollection`` of the same metrics
updates them one after the other, so a batch that a later member rejects is already counted by the earlier ones
(docs/training.md shows it): use :func:`make_collection` or :class:`NobgCollection`.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from torchmetrics import Metric, MetricCollection

from nobg_metrics._inputs import check_option
from nobg_metrics._shared_checks import shared_checks
from nobg_metrics.catalog import CATALOG, METRIC_NAMES, TIERS, Descriptor, Tier, descriptor, names_with
from nobg_metrics.metrics import torchmetrics_api as api
from nobg_metrics.metrics.base import NobgMetric, Statistics

__all__ = ["FAMILY", "IMAGE_NAMES", "METRIC_NAMES", "P3M_TRIMAP_NAMES", "TIERS", "NobgCollection",
           "accepted_options", "make_collection", "metric_class", "size_invariant_collection"]

FAMILY: tuple[str, ...] = names_with(statistic="confusion")
"""Every confusion-family entry (``make_collection(metrics=FAMILY)``: all of them from one statistics pass)."""
IMAGE_NAMES: tuple[str, ...] = names_with(required="image")
"""The entries whose ``update`` needs the RGB image, ``image=`` a :math:`(B, 3, H, W)` uint8 tensor (CCm)."""
P3M_TRIMAP_NAMES: tuple[str, ...] = names_with(required="trimap")
"""The P3M-protocol entries that need a trimap (the others score the whole image and ignore it)."""


def metric_class(name: str) -> type[Metric]:
    """The ``Metric`` class behind a registered name, e.g. ``metric_class("f_measure_max") is FMeasure``."""
    return descriptor(name).metric


def accepted_options(name: str) -> frozenset[str]:
    """The options (constructor keywords, beyond the fixed arguments) the metric behind ``name`` takes."""
    return descriptor(name).options


def _update_parameters(metric: Metric) -> tuple[frozenset[str], bool]:
    """The keyword inputs a member's ``update`` names, and whether it takes any (``**kwargs``)."""
    parameters = inspect.signature(metric.update).parameters.values()
    named = frozenset(p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    return named, any(p.kind is p.VAR_KEYWORD for p in parameters)


def _routed(metric: Metric, named: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword inputs ``metric.update`` takes (``trimap=`` reaches the matting members, ``image=`` CCm)."""
    accepted, takes_any = _update_parameters(metric)
    return dict(named) if takes_any else {key: value for key, value in named.items() if key in accepted}


class NobgCollection(MetricCollection):
    """A ``MetricCollection`` whose ``update`` and ``forward`` are all-or-nothing and whose groups share one pass.

    Args:
        metrics: the members, by name.
        prefix: prepended to every key (``"val/"``).
        postfix: appended to every key.
        groups: lists of member names whose states are identical by construction: the first member of a group
            computes the batch's statistics, every member adds them. Members in no group are groups of one.

    Members that are not nobg_metrics metrics update through their own ``update`` after the statistics of ours are
    formed; their states are restored if one of them raises.

    Examples:
        >>> import torch, nobg_metrics as nm
        >>> collection = NobgCollection({"mae": nm.MAE(), "iou": nm.IoU()}, prefix="val/")
        >>> collection.update(torch.rand(2, 8, 8), torch.rand(2, 8, 8) > 0.5)
        >>> sorted(collection.compute())
        ['val/iou', 'val/mae']
    """

    def __init__(self, metrics: Mapping[str, Metric], *, prefix: str | None = None, postfix: str | None = None,
                 groups: Iterable[Sequence[str]] = ()) -> None:
        super().__init__(dict(metrics), prefix=prefix, postfix=postfix, compute_groups=False)
        self.shared_groups = [list(group) for group in groups if group]

    @property
    def compute_groups(self) -> dict[int, list[str]]:
        """The groups of members that share one statistics pass, ``{index: [names]}`` (members alone included)."""
        return dict(enumerate(self._member_groups()))

    def _member_groups(self) -> list[list[str]]:
        members = dict(self.items(keep_base=True))
        grouped = [[name for name in group if name in members] for group in self.shared_groups]
        grouped = [group for group in grouped if group]
        inside = {name for group in grouped for name in group}
        return grouped + [[name] for name in members if name not in inside]

    def _plan(self, args: tuple, named: Mapping[str, Any]) -> list[tuple[list[NobgMetric], Statistics]]:
        """Every group's statistics of the batch (phase one: the only phase that can reject it)."""
        members = dict(self.items(keep_base=True))
        planned = []
        with shared_checks():  # each input tensor's value checks run once, not once per member
            for group in self._member_groups():
                leader = members[group[0]]
                if isinstance(leader, NobgMetric):
                    statistics = leader._batch_statistics(*args, **_routed(leader, named))
                    # a group's members hold its leader's states by declaration: nobg metrics like the leader
                    planned.append((cast("list[NobgMetric]", [members[name] for name in group]), statistics))
        return planned

    def _commit(self, planned: list[tuple[list[NobgMetric], Statistics]], args: tuple, named: Mapping[str, Any],
                foreign_done: bool = False) -> None:
        """Phase two: the foreign members' own updates, then every planned member's new states."""
        if not foreign_done:
            foreign = [m for m in dict(self.items(keep_base=True)).values() if not isinstance(m, NobgMetric)]
            _update_foreign(foreign, args, named)
        for members, statistics in planned:
            for member in members:
                member._accumulate(statistics)
                api.count_update(member)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Update every member with the batch, or (on any error) none of them."""
        self._commit(self._plan(args, kwargs), args, kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Every member's batch value, the batch added to every member — or, on any error, no change at all."""
        planned = self._plan(args, kwargs)
        values: dict[int, Any] = {}  # by id(member)
        for members, statistics in planned:
            for member in members:
                values[id(member)] = member._batch_value(statistics)
        for other in dict(self.items(keep_base=True)).values():
            if not isinstance(other, NobgMetric):
                values[id(other)] = other(*args, **_routed(other, kwargs))
        self._commit(planned, args, kwargs, foreign_done=True)
        for members, _ in planned:
            for member in members:
                api.set_forward_cache(member, values[id(member)])
        return self._named({name: values[id(member)] for name, member in self.items(keep_base=True)})

    def _named(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """Members' values keyed as ``compute()`` keys them: dict values flattened, prefix and postfix added."""
        flat: dict[str, Any] = {}
        for name, value in results.items():
            flat.update({f"{key}": item for key, item in value.items()} if isinstance(value, dict) else {name: value})
        prefix, postfix = self.prefix or "", self.postfix or ""
        return {f"{prefix}{key}{postfix}": value for key, value in flat.items()}


def _update_foreign(members: list[Metric], args: tuple, named: Mapping[str, Any]) -> None:
    """``update`` each non-nobg member; if one raises, every one of them gets its states and counter back."""
    if not members:
        return
    saved = [({k: (list(v) if isinstance(v, list) else v) for k, v in m.metric_state.items()}, m.update_count)
             for m in members]
    try:
        for member in members:
            member.update(*args, **_routed(member, named))
    except BaseException:
        for member, (states, count) in zip(members, saved):
            for key, value in states.items():
                setattr(member, key, value)
            api.set_update_count(member, count)
        raise


def _check_identical_states(group: list[str], built: Mapping[str, Metric]) -> None:
    """A group's members add the same statistics: they must hold the same states."""
    keys = {name: tuple(sorted(built[name].metric_state)) for name in group}
    if len(set(keys.values())) > 1:
        raise ValueError(f"the members {group} of one compute group disagree on their statistics' options "
                         f"(state names {keys}); pass the same options to all of them")


def _built(entries: Sequence[Descriptor], options: Mapping[str, Any]) -> dict[str, Metric]:
    """Each entry with the options it takes; a group whose members take ``share_statistics`` computes the union of
    their statistics in every member."""
    unused = sorted(set(options) - set().union(*(d.options for d in entries)))
    if unused:
        raise TypeError(f"options {unused} are taken by no metric of {tuple(d.name for d in entries)}")
    built = {d.name: d.build(**{k: v for k, v in options.items() if k in d.options}) for d in entries}
    for statistic in dict.fromkeys(d.statistic for d in entries if d.statistic):
        group = [d for d in entries if d.statistic == statistic]
        if len(group) > 1 and all("share_statistics" in d.options for d in group):
            # the members that take share_statistics (the confusion families) name their statistics in `requests`
            union = frozenset().union(*(cast(frozenset, built[d.name].requests) for d in group))
            for d in group:
                taken = {k: v for k, v in options.items() if k in d.options}
                built[d.name] = d.build(**taken, share_statistics=union)
            _check_identical_states([d.name for d in group], built)
    return built


def make_collection(
    tier: Tier = "cheap",
    prefix: str | None = None,
    postfix: str | None = None,
    *,
    metrics: Sequence[str] | None = None,
    **options: Any,
) -> NobgCollection:
    """A collection of a cost tier (or of named metrics), keyed by the catalog names.

    Args:
        tier: ``"cheap"``, ``"medium"`` or ``"expensive"`` (cumulative).
        prefix: prepended to every key (e.g. ``"val/"``).
        postfix: appended to every key.
        metrics: an explicit list of names instead of a tier (:data:`nobg_metrics.catalog.METRIC_NAMES`). The
            structured-input entries (``mean_average_precision``, ``panoptic_quality``, ``davis_j``, ...: another
            ``Descriptor.kind`` than ``"maps"``) take inputs of their own and are refused here (``ValueError``).
        options: passed to every metric whose constructor takes them (``normalize``, ``empty_gt``,
            ``threshold``, ``dilation_ratio``, ``beta2``, ``validate_args``, ...). An option that no metric of
            the collection takes is an error.

    Returns:
        a :class:`NobgCollection`; ``update(pred, gt)``, ``update(pred, gt, trimap=trimap)``, and ``image=image``
        (:math:`(B, 3, H, W)` uint8 RGB) for the members of :data:`IMAGE_NAMES` (required by them).

    Examples:
        >>> import torch
        >>> collection = make_collection("cheap", prefix="val/")
        >>> collection.update(torch.rand(2, 1, 16, 16), torch.rand(2, 1, 16, 16) > 0.5)
        >>> sorted(collection.compute())[:3]
        ['val/accuracy', 'val/ber', 'val/boundary_iou']
    """
    check_option("tier", tier, Tier)
    names = tuple(metrics) if metrics is not None else TIERS[tier]
    for name in names:
        if name in CATALOG and CATALOG[name].kind != "maps":
            entry = CATALOG[name]
            raise ValueError(f"a collection takes metrics of pred / gt maps (input kind 'maps'); {name!r} takes "
                             f"{entry.kind} inputs: use nobg_metrics.{entry.metric.__name__} on its own")
        if name not in CATALOG:
            raise ValueError(f"`metrics` entries must be among {METRIC_NAMES}; got {name!r}")
    entries = [CATALOG[name] for name in dict.fromkeys(names)]
    built = _built(entries, options)
    groups = [[d.name for d in entries if d.statistic == statistic]
              for statistic in dict.fromkeys(d.statistic for d in entries if d.statistic)]
    return NobgCollection(built, prefix=prefix, postfix=postfix, groups=groups)


def size_invariant_collection(names: Iterable[str] | None = None, prefix: str | None = None,
                              postfix: str | None = None, **options: Any) -> NobgCollection:
    """The size-invariant metrics by catalog name (``"si_mae"``, ``"si_f_measure_max"``, ...; default: all of them) in
    one collection: every confusion member in one group (one labelling and one counting pass per batch).

    Examples:
        >>> import torch
        >>> collection = size_invariant_collection(["si_mae", "si_f_measure_max", "si_iou_pooled"])
        >>> collection.update(torch.rand(2, 1, 16, 16), torch.rand(2, 1, 16, 16) > 0.5)
        >>> sorted(collection.compute())
        ['si_f_measure_max', 'si_iou_pooled', 'si_mae']
    """
    every = ("si_mae", *names_with(statistic="size_invariant"))
    chosen = every if names is None else tuple(names)
    for name in chosen:
        check_option("names", name, every)
    return make_collection(metrics=chosen, prefix=prefix, postfix=postfix, **options)

