"""The :class:`Descriptor` of one registered metric: its class, functional, fixed arguments, tier, task, input kind
and preparer, extra inputs, compute group, the header papers print it under, its printed unit, reference and page.

The catalog's entries (:mod:`nobg_metrics.catalog.entries`) and :func:`nobg_metrics.catalog.register` make them;
everything else reads them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from torchmetrics import Metric

Tier = Literal["cheap", "medium", "expensive"]
Task = Literal["sod", "matting"]
Kind = Literal["maps", "instances", "cityscapes", "panoptic", "video"]
"""What ``update`` takes: ``maps`` (``pred`` / ``gt`` maps: the collections, the tiers and ``nobg-metrics eval``),
``instances`` (COCO-style dicts per image), ``cityscapes`` (instance-id maps and scored masks), ``panoptic`` (panoptic
maps and categories), ``video`` (frames with sequence keys)."""
MAPS_PREPARER = "nobg_metrics._inputs.prepare"
"""The preparer of every ``"maps"`` entry."""

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
        label: ``(Markdown / Unicode, LaTeX)``: the column header papers print (``("S_α", r"$S_\\alpha$")``);
            ``None``: :func:`derived_label` of the name (the confusion family's ``P^max``, ``SI-F^max_β``).
        printed: ``(factor, decimals)`` the matting protocols' tables print the value with (``SAD (÷1000)``: ``(1e-3,
            2)``); ``None``: raw.
        count: its value counts something (HCE: corrections per image): the tables print it as an integer, as the
            DIS5K tables do.
        toolkit: the names PySODEvalToolkit gives it: its metric names (``em``: the E-measure's max, mean and adaptive
            entries) and result columns (``maxem``; its converter's ``maxE``), which ``--metric-names`` and
            ``--metrics`` take.
        birefnet: BiRefNet's column name of it under ``--protocol birefnet`` (``maxFm``, ``HCE``).
        protocol: the one ``--protocol`` of the command that scores it (BiRefNet's own readings); ``None``: any.
        stands_for: under that protocol, the entry of the other protocols it takes the place of (``birefnet_hce``:
            ``hce``).
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
    label: tuple[str, str] | None = None
    printed: tuple[float, int] | None = None
    count: bool = False
    toolkit: tuple[str, ...] = ()
    birefnet: str | None = None
    protocol: str | None = None
    stands_for: str | None = None

    @functools.cached_property
    def options(self) -> frozenset[str]:
        """The constructor options it takes beyond its fixed ``arguments`` (torchmetrics' own included)."""
        parameters = inspect.signature(self.metric.__init__).parameters.values()
        named = {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"self"}
        return frozenset(named - set(self.arguments)) | BASE_OPTIONS

    @property
    def header(self) -> tuple[str, str]:
        """``(Markdown, LaTeX)`` column header: :attr:`label`, else :func:`derived_label` of the name."""
        return self.label if self.label is not None else derived_label(self.name)

    def build(self, **options: Any) -> Metric:
        """The metric with its fixed arguments and ``options`` (each must be one it takes)."""
        return self.metric(**self.arguments, **options)


def declare(name: str, metric: type[Metric], functional: Callable[..., Any], **fields: Any) -> Descriptor:
    """A :class:`Descriptor` whose functional is ``functional`` with the entry's fixed ``arguments`` applied."""
    arguments = fields.pop("arguments", {})
    bound = functools.partial(functional, **arguments) if arguments else functional
    return Descriptor(name, metric, bound, arguments, **fields)


_MEASURES = {  # the confusion family's measures: (Markdown, LaTeX) of the letter the papers use
    "precision": ("P", "P"), "recall": ("R", "R"), "specificity": ("Spec", r"\mathrm{Spec}"),
    "fpr": ("FPR", r"\mathrm{FPR}"),
    "iou": ("IoU", r"\mathrm{IoU}"), "dice": ("Dice", r"\mathrm{Dice}"), "accuracy": ("Acc", r"\mathrm{Acc}"),
    "ber": ("BER", r"\mathrm{BER}"), "kappa": ("κ", r"\kappa"), "f1": ("F_1", "F_1"), "f_measure": ("F_β", r"F_\beta"),
    "msiou": ("MSIoU", r"\mathrm{MSIoU}"),
}
_MODES = {"max": "max", "mean": "m", "adaptive": "adp", "binary": "bin", "pooled": "pool", "max_overall": "max,all"}


def derived_label(name: str) -> tuple[str, str]:
    """``(Markdown, LaTeX)`` header of a ``[si_]<measure>_<mode>`` name from its measure's letter and its mode
    (``precision_max``: ``P^max``); another name prints with spaces for underscores.

    Examples:
        >>> derived_label("precision_max"), derived_label("si_f_measure_max"), derived_label("my_metric")
        (('P^max', '$P^{max}$'), ('SI-F^max_β', 'SI-$F^{max}_\\\\beta$'), ('my metric', 'my metric'))
    """
    prefix, base = ("SI-", name[3:]) if name.startswith("si_") else ("", name)
    for mode, short in sorted(_MODES.items(), key=lambda item: -len(item[0])):
        measure = base[: -len(mode) - 1]
        if base.endswith("_" + mode) and measure in _MEASURES:
            markdown, latex = _MEASURES[measure]
            head, _, sub = markdown.partition("_")
            tex_head, _, tex_sub = latex.partition("_")
            md = f"{head}^{short}" + (f"_{sub}" if sub else "")
            tex = f"{tex_head}^{{{short}}}" + (f"_{tex_sub}" if tex_sub else "")
            return prefix + md, f"{prefix}${tex}$"
    plain = name.replace("_", " ")
    return plain, plain
