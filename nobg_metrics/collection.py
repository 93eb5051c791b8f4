"""Tiers of metrics by cost: ``make_collection("cheap" | "medium" | "expensive")``.

The tiers follow the seed's cost table and are cumulative (cheap ⊂ medium ⊂ expensive):

- cheap, O(N) per image: mae, iou_metric, dice, accuracy, ber, sad, mse_metric, boundary_iou — per training step;
- medium adds the histogram measures f_measure_{max,mean,adaptive}, e_measure_{max,mean,adaptive},
  gradient_error, and the Boundary IoU paper's trimap_iou and boundary_f_measure — per validation epoch;
- expensive adds s_measure, weighted_f_measure, connectivity_error, msiou_max / msiou_mean (one pass),
  context_measure (Cm) and hce (the DIS Human Correction Effort, PySODMetrics' protocol) — final evaluation.

Beyond the tiers, by name: ``camouflage_context_measure`` (CCm, which also needs the RGB image:
``update(pred, gt, image=image)``, :data:`IMAGE_NAMES`); and every member of the confusion family is available by name (:data:`FAMILY`):
``<measure>_max``, ``_mean``, ``_adaptive``, ``_binary`` and ``_pooled`` (binary, ``sample_based=False``) for
precision, recall, specificity, fpr, iou, dice, accuracy, ber, kappa, f1 and f_measure (e_measure: the
threshold modes), plus ``pr_auc`` and ``roc_auc``; e.g. ``make_collection(metrics=FAMILY)``.

Metrics that share statistics are declared as explicit compute groups (never automatic detection,
which has merged unrelated metrics in torchmetrics): every confusion-family member of a collection is in
one group whose members all compute the union of their statistics (``share_statistics``) in one pass,
SAD and MSE share one difference map.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal

from torchmetrics import Metric, MetricCollection

from nobg_metrics import metrics as _metrics
from nobg_metrics._inputs import check_option
from nobg_metrics._shared_checks import shared_checks
from nobg_metrics.functional.confusion_measures import MEASURES
from nobg_metrics.functional.family import AUC_CURVES
from nobg_metrics.metrics.base import restore_snapshot, take_snapshot
from nobg_metrics.metrics.confusion import ConfusionMetric
from nobg_metrics.metrics.size_invariance import SizeInvariantConfusion

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
    "trimap_iou": ("TrimapIoU", {}),  # the Boundary IoU paper's comparison measures (docs/boundary_measures.md)
    "boundary_f_measure": ("BoundaryFMeasure", {}),
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
    "hce": ("HCE", {}),  # PySODMetrics' protocol; HCE(protocol="dis") is the DIS authors' tool (docs/hce.md)
    "si_mae": ("SizeInvariantMAE", {}),
    "si_f_measure_max": ("SizeInvariantConfusion", {"measure": "f_measure", "mode": "max"}),
    "si_f_measure_mean": ("SizeInvariantConfusion", {"measure": "f_measure", "mode": "mean"}),
    "si_f_measure_adaptive": ("SizeInvariantConfusion", {"measure": "f_measure", "mode": "adaptive"}),
    "si_f_measure_max_overall": ("SizeInvariantConfusion",
                                 {"measure": "f_measure", "mode": "max", "sample_based": False}),
    "si_iou_binary": ("SizeInvariantConfusion", {"measure": "iou", "mode": "binary"}),
    "si_iou_pooled": ("SizeInvariantConfusion", {"measure": "iou", "mode": "binary", "sample_based": False}),
    "si_pr_auc": ("SizeInvariantConfusion", {"measure": "pr_auc"}),
    "si_roc_auc": ("SizeInvariantConfusion", {"measure": "roc_auc"}),
    "msiou_max": ("MSIoU", {"mode": "max"}),
    "msiou_mean": ("MSIoU", {"mode": "mean"}),
    "msiou_adaptive": ("MSIoU", {"mode": "adaptive"}),
    "msiou_binary": ("MSIoU", {"mode": "binary"}),
    "context_measure": ("ContextMeasure", {}),
    "camouflage_context_measure": ("CamouflageContextMeasure", {}),  # needs update(..., image=): IMAGE_NAMES
    # the P3M-10k / AM-2k / AIM-500 protocol (docs/matting_protocols.md); raw values
    "p3m_sad": ("P3MSAD", {}),
    "p3m_sad_trimap": ("P3MSAD", {"region": "trimap"}),
    "p3m_sad_fg": ("P3MSAD", {"region": "fg"}),
    "p3m_sad_bg": ("P3MSAD", {"region": "bg"}),
    "p3m_mse": ("P3MMSE", {}),
    "p3m_mse_trimap": ("P3MMSE", {"region": "trimap"}),
    "p3m_mad": ("P3MMAD", {}),
    "p3m_mad_trimap": ("P3MMAD", {"region": "trimap"}),
    "p3m_gradient": ("P3MGradientError", {}),
    "p3m_connectivity": ("P3MConnectivityError", {}),
    # BiRefNet's boundary columns (CascadePSP's mBA, the grey-boundary BIoU)
    "mba": ("MBA", {}),
    "grey_biou_max": ("GreyBoundaryIoU", {"mode": "max"}),
    "grey_biou_mean": ("GreyBoundaryIoU", {"mode": "mean"}),
}

P3M_TRIMAP_NAMES = ("p3m_sad_trimap", "p3m_sad_fg", "p3m_sad_bg", "p3m_mse_trimap", "p3m_mad_trimap")
"""The P3M-protocol entries that need a trimap (the others score the whole image and ignore it)."""

IMAGE_NAMES = ("camouflage_context_measure",)
"""The entries whose ``update`` needs the RGB image, ``image=`` a :math:`(B, 3, H, W)` uint8 tensor (in no tier: a
collection with one of them raises ``ValueError`` naming ``image`` on an update without it; the others never see
it). CCm also reads the device once per image (its 1-NN search is sized by the data)."""


def _family_entries() -> dict[str, tuple[str, dict[str, Any]]]:
    """``<measure>_<mode>`` entries of every confusion-family class (measure names from the classes themselves),
    except those an entry above already names (``iou_metric`` is IoU's binary mode, ``f_measure_max`` ...)."""

    def effective(class_name: str, arguments: dict[str, Any]) -> tuple[str, str, str]:
        default = getattr(_metrics, class_name)._default_mode
        return class_name, arguments.get("mode", default), arguments.get("reduction", "mean")

    existing = {effective(*entry) for entry in _REGISTRY.values()
                if issubclass(getattr(_metrics, entry[0]), ConfusionMetric)}
    entries: dict[str, tuple[str, dict[str, Any]]] = {}
    for name in _metrics.__all__:
        cls = getattr(_metrics, name)
        measure = getattr(cls, "__dict__", {}).get("_measure")
        if not (isinstance(cls, type) and issubclass(cls, ConfusionMetric) and measure):
            continue
        if measure in AUC_CURVES:
            entries[measure] = (name, {})
            continue
        modes: dict[str, dict[str, Any]] = {mode: {"mode": mode} for mode in ("max", "mean", "adaptive")}
        if MEASURES[measure].binary_reference:  # the E-measure's binary mode has no reference
            modes["binary"] = {"mode": "binary"}
            modes["pooled"] = {"mode": "binary", "reduction": "pooled"}
        for mode, arguments in modes.items():
            if effective(name, arguments) not in existing:
                entries[f"{measure}_{mode}"] = (name, arguments)
    return entries


TIERS: dict[str, tuple[str, ...]] = {
    "cheap": ("mae", "iou_metric", "dice", "accuracy", "ber", "sad", "mse_metric", "boundary_iou"),
}
TIERS["medium"] = TIERS["cheap"] + (
    "f_measure_max", "f_measure_mean", "f_measure_adaptive",
    "e_measure_max", "e_measure_mean", "e_measure_adaptive", "gradient_error",
    "trimap_iou", "boundary_f_measure",  # the cost of boundary_iou or the F/E-measures (docs/boundary_measures.md)
)
TIERS["expensive"] = TIERS["medium"] + ("s_measure", "weighted_f_measure", "connectivity_error", "msiou_max",
                                        "msiou_mean", "context_measure", "hce")

SHARED_GROUPS: tuple[tuple[str, ...], ...] = (
    ("sad", "mse_metric"), ("msiou_max", "msiou_mean"),
    # one 8-column statistic; a whole-image entry first, so a group led by it accepts images without a trimap
    ("p3m_sad", "p3m_mse", "p3m_mad") + P3M_TRIMAP_NAMES,
    ("grey_biou_max", "grey_biou_mean"),
)
"""Metrics whose states are identical by construction (same names, same statistics); the confusion family's
group is formed in :func:`make_collection`."""

_FAMILY_ENTRIES = _family_entries()
_REGISTRY.update(_FAMILY_ENTRIES)
FAMILY = tuple(name for name, (class_name, _) in _REGISTRY.items()
               if issubclass(getattr(_metrics, class_name), ConfusionMetric))
METRIC_NAMES: tuple[str, ...] = TIERS["expensive"] + tuple(name for name in _REGISTRY if name not in TIERS["expensive"])
"""Every registered name: the tiers' first, then the rest (the family's modes, ...)."""


_SHARED_PASS_BASES = (ConfusionMetric, SizeInvariantConfusion)
"""Classes whose members share one statistics pass through ``requests`` / ``share_statistics``: the confusion
family, and its size-invariant variants (one labelling of the gt's targets per batch)."""

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


class NobgCollection(MetricCollection):
    """A ``MetricCollection`` whose ``update`` and ``forward`` are all-or-nothing.

    torchmetrics updates the members (or each compute group's first member) one after the other, so a batch
    that one member rejects (say, a trimap value only the matting metrics read) would already be counted by
    the members before it. Here every member's states and update counter are restored when any member raises,
    and the compute groups' shared references are re-made: a rejected batch changes nothing.

    Keyword inputs reach only the members whose ``update`` names them (torchmetrics' ``_filter_kwargs``):
    ``trimap=`` the matting metrics, ``image=`` (RGB, :math:`(B, 3, H, W)` uint8) those of :data:`IMAGE_NAMES`.
    """

    def _transaction(self, method: Callable[..., Any], *args: Any, leaders_only: bool = False, **kwargs: Any) -> Any:
        groups_checked = self._groups_checked
        if leaders_only and groups_checked and not self._state_is_copy:
            # torchmetrics' update runs only each group's first member; the others get its states by reference
            # again below, so the leaders' snapshots are all a rollback needs
            members = [self._modules[group[0]] for group in self._groups.values()]
        else:
            members = list(self._modules.values())
        snapshots = [take_snapshot(member) for member in members]
        try:
            with shared_checks():  # each input tensor's value checks run once, not once per member
                return method(*args, **kwargs)
        except BaseException:
            for member, snapshot in zip(members, snapshots):
                restore_snapshot(member, snapshot)
            self._groups_checked = groups_checked
            if groups_checked:
                self._state_is_copy = False
                self._compute_groups_create_state_ref()
            raise

    def _compute_groups_create_state_ref(self, copy: bool = False) -> None:
        """torchmetrics' state sharing within compute groups, by direct dict writes (same result): its
        ``setattr`` per member and state cost ~18 ms per update for the 60 entries of the confusion family."""
        if copy:
            super()._compute_groups_create_state_ref(copy=True)
            return
        if not self._state_is_copy:
            modules = self._modules  # the members by name (a plain dict: no Module.__getattr__ per member)
            for group in self._groups.values():
                first = modules[group[0]]
                shared = {name: first.__dict__[name] for name in first._defaults}
                shared["_update_count"] = first._update_count
                for name in group[1:]:
                    modules[name].__dict__.update(shared)
        self._state_is_copy = copy

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Update every member with the batch, or (on any error) none of them."""
        if self._groups_checked:
            self._transaction(self._grouped_update, *args, leaders_only=True, **kwargs)
        else:
            self._transaction(super().update, *args, **kwargs)

    def _grouped_update(self, *args: Any, **kwargs: Any) -> None:
        """torchmetrics' update once its compute groups are formed (``MetricCollection.update``, first branch),
        with the members' caches cleared by direct dict writes (``Module.__setattr__`` per member cost more than
        the confusion family's whole statistics pass)."""
        modules = self._modules
        for member in modules.values():
            member.__dict__["_computed"] = None
        for group in self._groups.values():
            first = modules[group[0]]  # only the first member computes; the others share its states
            first.update(*args, **first._filter_kwargs(**kwargs))
        self._state_is_copy = False
        self._compute_groups_create_state_ref()

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Every member's ``forward`` on the batch, or (on any error) no change to any member."""
        return self._transaction(super().forward, *args, **kwargs)


def _check_identical_states(group: list[str], built: dict[str, Metric]) -> None:
    """A compute group shares its first member's states by reference: they must be the same states."""
    keys = {name: tuple(sorted(built[name]._defaults)) for name in group}
    if len(set(keys.values())) > 1:
        raise ValueError(f"the confusion-family members {group} disagree on their statistics' options "
                         f"(state names {keys}); pass the same options to all of them")


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
        a :class:`NobgCollection` (a ``torchmetrics.MetricCollection`` whose update and forward are
        all-or-nothing) with explicit compute groups; ``update(pred, gt)``, ``update(pred, gt, trimap=trimap)``, and
        ``image=image`` (:math:`(B, 3, H, W)` uint8 RGB) for the members of :data:`IMAGE_NAMES` (required by them).

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
    shared = []
    for base in _SHARED_PASS_BASES:  # one pass per family: every member computes (and holds) the union
        family = [name for name in names if isinstance(built[name], base)]
        if len(family) > 1:
            union = frozenset().union(*(built[name].requests for name in family))
            built.update({name: _build(name, {**options, "share_statistics": union}, set()) for name in family})
            _check_identical_states(family, built)
        shared.append(family)
    groups = [[name for name in group if name in built] for group in SHARED_GROUPS] + shared
    groups = [group for group in groups if group]
    grouped = {name for group in groups for name in group}
    groups += [[name] for name in names if name not in grouped]
    return NobgCollection(built, prefix=prefix, postfix=postfix, compute_groups=groups)
