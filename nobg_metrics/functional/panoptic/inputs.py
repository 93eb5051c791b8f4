"""torchmetrics' panoptic input convention, validated and turned into slot maps (:class:`SegmentBatch`).

Accepted (``preds`` and ``target`` alike; ``iscrowd`` optional):

- ``preds``, ``target``: an integer tensor :math:`(B, *spatial, 2)` of ``(category_id, instance_id)`` per point
  (images :math:`(B, H, W, 2)`, point clouds :math:`(B, N, 2)`, volumes; another rank than 2 is scored as one row of
  points, Boundary PQ takes images only), or a list/tuple of :math:`(*spatial, 2)` tensors (sizes may differ; equal
  sizes are scored as one batch); shapes checked by :mod:`nobg_metrics.functional.panoptic.shapes`;
- ``iscrowd``: a bool tensor :math:`(B, *spatial)` (or a list of :math:`(*spatial)`) marking the points of crowd gt
  segments; a gt segment is crowd when its points are marked (all of them: a segment marked in part is an error).

Reading rules (torchmetrics' ``PanopticQuality``): a segment is a distinct ``(category_id, instance_id)``; for a
stuff category the instance id is ignored (one segment per stuff category and image); a target pixel whose
category is neither a thing nor a stuff is **void**; a prediction pixel of an unknown category is an error, or
no segment (prediction void) with ``allow_unknown_preds_category=True``. Thing instance ids must lie in
``[0, 2^31)``.

Slots (:mod:`nobg_metrics.functional.panoptic.slots`): slot 0 is void; the segments of an image follow in the
order of ``(category index, instance id)``, so the last crowd segment of a category (its crowd region, as
panopticapi keeps the last one) is the one with the largest instance id.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics._inputs import (
    check_same_length,
    input_error,
)
from nobg_metrics._panoptic_batch import SegmentBatch
from nobg_metrics.functional.panoptic.shapes import as_items
from nobg_metrics.functional.panoptic.slots import assign_slots
from nobg_metrics.ops import host_reads

PanopticMaps = Tensor | Sequence[Tensor]
"""A :math:`(B, H, W, 2)` tensor or a list/tuple of :math:`(H, W, 2)` tensors."""

INSTANCE_BITS = 31
"""Thing instance ids lie in ``[0, 2^31)``; a segment's key is ``(category index + 1) * 2^shift + instance``
(``shift = 31`` in int64; on CPU the fewest bits that hold the largest instance id, in int32 when it fits)."""


class KeyLayout(NamedTuple):
    """How segment keys are packed: ``(category index + 1) << shift | instance``, in ``dtype``."""

    shift: int
    dtype: torch.dtype


WIDE_KEYS = KeyLayout(INSTANCE_BITS, torch.int64)
"""The layout of the device path (and of CPU batches whose instance ids need it)."""


@dataclass(frozen=True)
class Categories:
    """The categories scored, in output order, and which are things.

    Attributes:
        ids: category ids in the order of the per-class outputs.
        isthing: one flag per id.
    """

    ids: tuple[int, ...]
    isthing: tuple[bool, ...]

    @classmethod
    def from_sets(cls, things: Collection[int], stuffs: Collection[int],
                  order: Sequence[int] | None = None) -> Categories:
        """The categories of ``things`` and ``stuffs`` in ``order`` (by default torchmetrics' order: the things
        sorted, then the stuffs sorted); errors name the argument (``order`` is the ``category_order`` option).

        Examples:
            >>> Categories.from_sets({4, 1}, {3, 2}).ids
            (1, 4, 2, 3)
            >>> Categories.from_sets({4, 1}, {3, 2}, order=[2, 1, 3, 4]).isthing
            (False, True, False, True)
        """
        for name, values in (("things", things), ("stuffs", stuffs)):
            if isinstance(values, (str, bytes)) or not isinstance(values, Collection):
                raise TypeError(f"`{name}` must be a collection of int category ids, got {type(values).__name__}")
            bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int)]
            if bad:
                raise TypeError(f"Expected argument `{name}` to contain `int` categories (int category ids), got "
                                f"{bad[0]!r} ({type(bad[0]).__name__})")
            if len(set(values)) != len(values):  # torchmetrics: a warning, the duplicates dropped
                warnings.warn(f"The provided `{name}` categories contained duplicates, which have been removed: "
                              f"{sorted(values)}", UserWarning, stacklevel=3)
        things, stuffs = set(things), set(stuffs)
        common = things & stuffs
        if common:
            raise ValueError(f"Expected arguments `things` and `stuffs` to have distinct keys (they must be "
                             f"disjoint), both hold {sorted(common)}")
        if not things and not stuffs:
            raise ValueError("At least one of `things` and `stuffs` must be non-empty (both empty)")
        ids = (*sorted(things), *sorted(stuffs))
        if order is not None:
            if isinstance(order, (str, bytes)) or not isinstance(order, Sequence):
                raise TypeError(f"`category_order` must be a sequence of int category ids, got {type(order).__name__}")
            if len(order) != len(ids) or set(order) != set(ids):
                raise ValueError(f"`category_order` must hold every id of `things` and `stuffs` once, got "
                                 f"{list(order)} for {sorted(ids)}")
            ids = tuple(order)
        if min(ids) < -(2**62) or max(ids) >= 2**62:
            raise ValueError(f"category ids must lie in [-2^62, 2^62), got {min(ids)} .. {max(ids)}")
        thing_set = set(things)
        return cls(ids, tuple(category in thing_set for category in ids))

    @property
    def marker_id(self) -> int:
        """boundary-iou-api's ``BOUNDARY_ID``: the largest category id + 1."""
        return max(self.ids) + 1

    def lookup(self, values: Tensor, layout: KeyLayout = WIDE_KEYS) -> tuple[Tensor, Tensor]:
        """Each category id's ``(base, instance mask)``, same shape, ``layout.dtype``: ``base = (k + 1) << shift``
        for the category of index ``k`` (0: unknown), ``instance mask = 2^shift - 1`` for a thing (0: stuff,
        unknown).

        Small ids (all in ``[0, 2^20)``) are looked up in a table, others searched (``searchsorted``).

        Examples:
            >>> base, mask = Categories.from_sets({4, 1}, {3, 2}).lookup(torch.tensor([1, 2, 4, 5, -1]))
            >>> (base >> 31).tolist(), (mask > 0).tolist()
            ([1, 3, 2, 0, 0], [True, False, True, False, False])
        """
        small = min(self.ids) >= 0 and max(self.ids) < 2**20
        bases, masks, ids, table = _lookup_tables(self.ids, self.isthing, values.device, small, layout)
        if table is not None:
            index = values.clamp(-1, max(self.ids) + 1).add_(1).reshape(-1)  # below 0 or above the ids: unknown
            return (table[0].index_select(0, index).view(values.shape),
                    table[1].index_select(0, index).view(values.shape))
        ordered, order = torch.sort(ids)
        position = torch.searchsorted(ordered, values.contiguous()).clamp_(max=len(self.ids) - 1)
        found = ordered[position] == values
        return (torch.where(found, bases[order][position], 0), torch.where(found, masks[order][position], 0))

    def thing_mask(self, device: torch.device) -> Tensor:
        """:math:`(C,)` bool: which category indices are things."""
        return torch.tensor(self.isthing, dtype=torch.bool, device=device)


@functools.lru_cache(maxsize=64)
def _lookup_tables(ids: tuple[int, ...], isthing: tuple[bool, ...], device: torch.device, small: bool,
                   layout: KeyLayout) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """:meth:`Categories.lookup`'s constants, made once per device (a host-to-device copy in every update would
    make the host wait): ``(bases, masks, ids)`` per category, and for small ids the ``(2, max id + 3)`` table."""
    bases = torch.arange(1, len(ids) + 1, dtype=torch.int64) << layout.shift
    masks = torch.tensor([2**layout.shift - 1 if thing else 0 for thing in isthing], dtype=torch.int64)
    id_tensor = torch.tensor(ids, dtype=torch.int64)
    table = None
    if small:
        table = torch.zeros((2, max(ids) + 3), dtype=torch.int64)
        table[0, id_tensor + 1], table[1, id_tensor + 1] = bases, masks
        table = table.to(device=device, dtype=layout.dtype)
    return bases.to(device, layout.dtype), masks.to(device, layout.dtype), id_tensor.to(device), table


def prepare_panoptic(preds: PanopticMaps, target: PanopticMaps, iscrowd: PanopticMaps | None, categories: Categories,
                     allow_unknown_preds_category: bool, validate_args: bool,
                     engine: host_reads.Engine = "auto", planar: bool = False) -> list[SegmentBatch]:
    """Validate the inputs (module notes) and return one :class:`SegmentBatch` per image size.

    Shape, dtype and device checks always run; the value checks (unknown prediction categories, thing instance
    ids, crowd marks of part of a segment) read the data back and run with ``validate_args``. ``engine``:
    ``"data_sized"`` packs the keys in the fewest bits and builds slot tables as wide as the most segments (host
    reads), ``"fixed"`` reads nothing back, ``"auto"`` is data-sized on CPU. ``planar``: only 2-D images (Boundary
    PQ reads neighbourhoods); otherwise any spatial rank, flattened to one row of points.
    """
    pred_items, gt_items = as_items("preds", preds, 2, planar), as_items("target", target, 2, planar)
    crowd_items = as_items("iscrowd", iscrowd, 1, planar)
    assert pred_items is not None and gt_items is not None  # (only None for a None input)
    if isinstance(preds, Tensor) != isinstance(target, Tensor) or (
            crowd_items is not None and isinstance(iscrowd, Tensor) != isinstance(target, Tensor)):
        raise TypeError("`preds`, `target` (and `iscrowd`) must all be tensors or all be lists")
    counts = {"preds": len(pred_items), "target": len(gt_items)}
    if crowd_items is not None:
        counts["iscrowd"] = len(crowd_items)
    check_same_length(counts, "one entry per image")
    groups: dict[tuple, list[int]] = {}
    for index, (pred, gt) in enumerate(zip(pred_items, gt_items)):
        at = f"[{index}]" if not isinstance(target, Tensor) else ""
        given = [value if isinstance(value, Tensor) else value[index] for value in (preds, target)]
        if given[0].shape != given[1].shape:  # as given: a flattened (B, *S, 2) hides its spatial shape
            raise ValueError(f"Expected argument `preds{at}` and `target{at}` to have the same shape, but got "
                             f"{tuple(given[0].shape)} and {tuple(given[1].shape)}")
        if pred.device != gt.device:
            raise input_error(f"preds{at}", f"be on the device of `target{at}` ({gt.device})", pred.device)
        if crowd_items is not None and (
            crowd_items[index].shape != gt.shape[:3] or crowd_items[index].device != gt.device
        ):
            raise input_error(f"iscrowd{at}", f"have shape {tuple(gt.shape[:3])} on {gt.device}",
                              f"{tuple(crowd_items[index].shape)} on {crowd_items[index].device}")
        groups.setdefault(tuple(gt.shape[1:3]), []).append(index)
    batches = []
    for indices in groups.values():
        pred = torch.cat([pred_items[i] for i in indices]) if len(indices) > 1 else pred_items[indices[0]]
        gt = torch.cat([gt_items[i] for i in indices]) if len(indices) > 1 else gt_items[indices[0]]
        crowd = None
        if crowd_items is not None:
            crowd = torch.cat([crowd_items[i] for i in indices]) if len(indices) > 1 else crowd_items[indices[0]]
        names = [f"[{i}]" for i in indices] if not isinstance(target, Tensor) else None
        batches.append(_segment_batch(pred, gt, crowd, categories, allow_unknown_preds_category, validate_args, names,
                                      engine))
    return batches


def _segment_keys(maps: Tensor, categories: Categories, name: str, unknown_is_void: bool, validate_args: bool,
                  names: list[str] | None, layout: KeyLayout) -> Tensor:
    """:math:`(B, H, W, 2)` -> :math:`(B, H, W)` segment keys in ``layout`` (0: void; module notes)."""
    values = maps[..., 0].to(torch.int64)
    base, instance_mask = categories.lookup(values, layout)
    instance = maps[..., 1].to(torch.int64)  # a view of the input when it is int64: never written to
    if validate_args:
        if not unknown_is_void and bool((base == 0).any()):
            where = torch.nonzero(base == 0)[0].tolist()
            unknown = sorted(set(values[base == 0].unique().tolist()))[:10]
            at = names[where[0]] if names is not None else f"[{where[0]}]"
            raise ValueError(f"Unknown categories found: `{name}{at}` holds category ids that are neither things nor "
                             f"stuffs: {unknown} "
                             f"(first at pixel {tuple(where[1:])}); pass allow_unknown_preds_category=True to "
                             f"read them as no segment")
        bad = ((instance >> INSTANCE_BITS) != 0) & (instance_mask != 0)
        if bool(bad.any()):
            where = torch.nonzero(bad)[0].tolist()
            at = names[where[0]] if names is not None else f"[{where[0]}]"
            raise ValueError(f"`{name}{at}` thing instance ids must lie in [0, 2^31), "
                             f"got {int(instance[tuple(where)])} at pixel {tuple(where[1:])}")
    # (category index + 1) << shift | the instance of a thing (stuff: 0); unknown: 0
    return instance.to(layout.dtype, copy=True).bitwise_and_(instance_mask).bitwise_or_(base)


def _key_layout(preds: Tensor, target: Tensor, num_categories: int, engine: host_reads.Engine) -> KeyLayout:
    """int32 keys with the fewest instance bits where host reads are free and they fit (the crowd mark takes one
    more bit), else int64 keys with 31 instance bits."""
    if host_reads.resolve_engine(engine, target) == "data_sized":
        largest = max(int(preds[..., 1].max()), int(target[..., 1].max()), 1)
        shift = min(INSTANCE_BITS, largest.bit_length())
        if (num_categories + 1) << (shift + 1) < 2**31:
            return KeyLayout(shift, torch.int32)
    return WIDE_KEYS


def _segment_batch(preds: Tensor, target: Tensor, iscrowd: Tensor | None, categories: Categories,
                   allow_unknown: bool, validate_args: bool, names: list[str] | None,
                   engine: host_reads.Engine) -> SegmentBatch:
    """One equal-size group as slot maps and tables."""
    layout = _key_layout(preds, target, len(categories.ids), engine)
    gt_keys = _segment_keys(target, categories, "target", True, validate_args, names, layout)
    pred_keys = _segment_keys(preds, categories, "preds", allow_unknown, validate_args, names, layout)
    gt_slots, gt_key_table, marks = assign_slots(gt_keys, len(categories.ids), iscrowd, layout.shift, engine)
    pred_slots, pred_key_table, _ = assign_slots(pred_keys, len(categories.ids), None, layout.shift, engine)
    gt_category = (gt_key_table >> layout.shift) - 1
    pred_category = (pred_key_table >> layout.shift) - 1
    gt_crowd = torch.zeros_like(gt_category, dtype=torch.bool)
    if marks is not None:
        marked, unmarked = marks
        if validate_args:
            partial = (marked > 0) & (unmarked > 0) & (gt_category >= 0)
            if bool(partial.any()):
                image, slot = (int(v) for v in torch.nonzero(partial)[0])
                key = int(gt_key_table[image, slot])
                at = names[image] if names is not None else f"[{image}]"
                cat_id = categories.ids[(key >> layout.shift) - 1]
                raise ValueError(f"`iscrowd{at}` marks only part of the gt segment (category {cat_id}, instance "
                                 f"{key & (2**layout.shift - 1)}): a segment is crowd or not, all its pixels alike")
        gt_crowd = (marked > 0) & (gt_category >= 0)
    return SegmentBatch(gt_slots, pred_slots, gt_category, gt_crowd, pred_category)
