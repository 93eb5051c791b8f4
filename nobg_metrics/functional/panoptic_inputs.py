"""torchmetrics' panoptic input convention, validated and turned into slot maps (:class:`SegmentBatch`).

Accepted (``preds`` and ``target`` alike; ``iscrowd`` optional):

- ``preds``, ``target``: an integer tensor :math:`(B, H, W, 2)` of ``(category_id, instance_id)`` per pixel, or a
  list/tuple of :math:`(H, W, 2)` tensors (sizes may differ; equal sizes are scored as one batch);
- ``iscrowd``: a bool tensor :math:`(B, H, W)` (or a list of :math:`(H, W)`) marking the pixels of crowd gt
  segments; a gt segment is crowd when its pixels are marked (all of them: a segment marked in part is an error).

Reading rules (torchmetrics' ``PanopticQuality``): a segment is a distinct ``(category_id, instance_id)``; for a
stuff category the instance id is ignored (one segment per stuff category and image); a target pixel whose
category is neither a thing nor a stuff is **void**; a prediction pixel of an unknown category is an error, or
no segment (prediction void) with ``allow_unknown_preds_category=True``. Thing instance ids must lie in
``[0, 2^31)``.

Slots: slot 0 is void; the segments of an image follow in the order of ``(category index, instance id)``, so
the last crowd segment of a category (its crowd region, as panopticapi keeps the last one) is the one with
the largest instance id. The device path assigns slots without reading anything back (a sort of the packed
keys; tables one entry per pixel); on CPU ``torch.unique`` sizes the tables by the data.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Union

import torch
from torch import Tensor

from nobg_metrics.functional.panoptic_segments import SegmentBatch
from nobg_metrics.ops import host_reads

PanopticMaps = Union[Tensor, Sequence[Tensor]]
"""A :math:`(B, H, W, 2)` tensor or a list/tuple of :math:`(H, W, 2)` tensors."""

INSTANCE_BITS = 31
"""Thing instance ids lie in ``[0, 2^31)``; a segment's key is ``(category index + 1) * 2^31 + instance``."""


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
    def from_sets(cls, things: Collection[int], stuffs: Collection[int]) -> Categories:
        """torchmetrics' order: the things sorted, then the stuffs sorted; errors name the argument.

        Example:
            >>> Categories.from_sets({4, 1}, {3, 2}).ids
            (1, 4, 2, 3)
        """
        for name, values in (("things", things), ("stuffs", stuffs)):
            if isinstance(values, (str, bytes)) or not isinstance(values, Collection):
                raise TypeError(f"`{name}` must be a collection of int category ids, got {type(values).__name__}")
            bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int)]
            if bad:
                raise TypeError(f"`{name}` must hold int category ids, got {bad[0]!r} ({type(bad[0]).__name__})")
            if len(set(values)) != len(values):
                raise ValueError(f"`{name}` holds a category id twice: {sorted(values)}")
        common = set(things) & set(stuffs)
        if common:
            raise ValueError(f"`things` and `stuffs` must be disjoint, both hold {sorted(common)}")
        if not things and not stuffs:
            raise ValueError("`things` and `stuffs` are both empty: at least one category is needed")
        ids = (*sorted(things), *sorted(stuffs))
        if min(ids) < -(2**62) or max(ids) >= 2**62:
            raise ValueError(f"category ids must lie in [-2^62, 2^62), got {min(ids)} .. {max(ids)}")
        return cls(ids, tuple([True] * len(things) + [False] * len(stuffs)))

    @property
    def marker_id(self) -> int:
        """boundary-iou-api's ``BOUNDARY_ID``: the largest category id + 1."""
        return max(self.ids) + 1

    def index_of(self, values: Tensor) -> Tensor:
        """Each value's category index (``-1`` for an unknown id), same shape, int64."""
        ids = torch.tensor(self.ids, dtype=torch.int64, device=values.device)
        ordered, order = torch.sort(ids)
        position = torch.searchsorted(ordered, values).clamp_(max=len(self.ids) - 1)
        return torch.where(ordered[position] == values, order[position], -1)

    def thing_mask(self, device: torch.device) -> Tensor:
        """:math:`(C,)` bool: which category indices are things."""
        return torch.tensor(self.isthing, dtype=torch.bool, device=device)


def _as_items(name: str, value: PanopticMaps | None, pixel_dims: int) -> list[Tensor] | None:
    """The images of a batch tensor or list, each with a leading batch dim; shapes checked."""
    if value is None:
        return None
    channel = " x 2" if pixel_dims == 2 else ""
    if isinstance(value, Tensor):
        if value.ndim != 3 + (pixel_dims == 2):
            shape = "(B, H, W, 2)" if pixel_dims == 2 else "(B, H, W)"
            raise ValueError(f"`{name}` must have shape {shape}, got {tuple(value.shape)}")
        items, where = [value], [""]
    elif isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"`{name}` must hold at least one image, got an empty {type(value).__name__}")
        items, where = [], []
        for index, item in enumerate(value):
            if not isinstance(item, Tensor):
                raise TypeError(f"`{name}[{index}]` must be a torch.Tensor, got {type(item).__name__}")
            if item.ndim != 2 + (pixel_dims == 2):
                shape = "(H, W, 2)" if pixel_dims == 2 else "(H, W)"
                raise ValueError(f"`{name}[{index}]` must have shape {shape}, got {tuple(item.shape)}")
            items.append(item[None])
            where.append(f"[{index}]")
    else:
        raise TypeError(f"`{name}` must be a torch.Tensor or a list/tuple of tensors, got {type(value).__name__}")
    for item, at in zip(items, where):
        label = f"`{name}{at}`"
        if pixel_dims == 2 and item.shape[-1] != 2:
            raise ValueError(f"{label} must end in 2 channels (category_id, instance_id), got shape "
                             f"{tuple(item.shape[1:] if at else item.shape)}")
        if item.shape[0] == 0 or item.shape[1] == 0 or item.shape[2] == 0:
            raise ValueError(f"{label} must hold images of H >= 1 and W >= 1{channel}, got shape {tuple(item.shape)}")
        if pixel_dims == 2 and (item.dtype.is_floating_point or item.dtype.is_complex or item.dtype == torch.bool):
            raise TypeError(f"{label} must be an integer tensor of (category_id, instance_id), got {item.dtype}")
        if pixel_dims == 1 and item.dtype != torch.bool:
            raise TypeError(f"{label} must be a bool tensor marking crowd pixels, got {item.dtype}")
        if item.device.type == "meta":
            raise ValueError(f"{label} must hold data (a CPU or CUDA tensor), got a tensor on the meta device")
    return items


def prepare_panoptic(preds: PanopticMaps, target: PanopticMaps, iscrowd: PanopticMaps | None, categories: Categories,
                     allow_unknown_preds_category: bool, validate_args: bool) -> list[SegmentBatch]:
    """Validate the inputs (module notes) and return one :class:`SegmentBatch` per image size.

    Shape, dtype and device checks always run; the value checks (unknown prediction categories, thing instance
    ids, crowd marks of part of a segment) read the data back and run with ``validate_args``.
    """
    pred_items, gt_items = _as_items("preds", preds, 2), _as_items("target", target, 2)
    crowd_items = _as_items("iscrowd", iscrowd, 1)
    if isinstance(preds, Tensor) != isinstance(target, Tensor) or (
            crowd_items is not None and isinstance(iscrowd, Tensor) != isinstance(target, Tensor)):
        raise TypeError("`preds`, `target` (and `iscrowd`) must all be tensors or all be lists")
    if len(pred_items) != len(gt_items) or (crowd_items is not None and len(crowd_items) != len(gt_items)):
        counts = {"preds": len(pred_items), "target": len(gt_items)}
        if crowd_items is not None:
            counts["iscrowd"] = len(crowd_items)
        raise ValueError(f"the lists must have the same length, got {counts}")
    groups: dict[tuple, list[int]] = {}
    for index, (pred, gt) in enumerate(zip(pred_items, gt_items)):
        at = f"[{index}]" if not isinstance(target, Tensor) else ""
        if pred.shape != gt.shape:
            raise ValueError(f"`preds{at}` and `target{at}` must have the same shape, got {tuple(pred.shape)} and "
                             f"{tuple(gt.shape)}")
        if pred.device != gt.device:
            raise ValueError(f"`preds{at}` and `target{at}` must be on the same device, got {pred.device} and "
                             f"{gt.device}")
        if crowd_items is not None and (crowd_items[index].shape != gt.shape[:3] or crowd_items[index].device != gt.device):
            raise ValueError(f"`iscrowd{at}` must have shape {tuple(gt.shape[:3])} on {gt.device}, got "
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
        batches.append(_segment_batch(pred, gt, crowd, categories, allow_unknown_preds_category, validate_args, names))
    return batches


def _segment_keys(maps: Tensor, categories: Categories, name: str, unknown_is_void: bool, validate_args: bool,
                  names: list[str] | None) -> Tensor:
    """:math:`(B, H, W, 2)` -> :math:`(B, H, W)` int64 segment keys (0: void; module notes)."""
    category = categories.index_of(maps[..., 0].to(torch.int64).contiguous())
    instance = maps[..., 1].to(torch.int64)
    thing = categories.thing_mask(maps.device)[category.clamp(min=0)] & (category >= 0)
    if validate_args:
        if not unknown_is_void and bool((category < 0).any()):
            where = torch.nonzero(category < 0)[0].tolist()
            unknown = sorted(set(maps[..., 0][category < 0].unique().tolist()))[:10]
            at = names[where[0]] if names is not None else f"[{where[0]}]"
            raise ValueError(f"`{name}{at}` holds category ids that are neither things nor stuffs: {unknown} "
                             f"(first at pixel {tuple(where[1:])}); pass allow_unknown_preds_category=True to "
                             f"read them as no segment")
        bad = thing & ((instance < 0) | (instance >= 2**INSTANCE_BITS))
        if bool(bad.any()):
            where = torch.nonzero(bad)[0].tolist()
            at = names[where[0]] if names is not None else f"[{where[0]}]"
            raise ValueError(f"`{name}{at}` thing instance ids must lie in [0, 2^31), got {int(instance[tuple(where)])} "
                             f"at pixel {tuple(where[1:])}")
    instance = torch.where(thing, instance & (2**INSTANCE_BITS - 1), 0)
    return torch.where(category >= 0, ((category + 1) << INSTANCE_BITS) + instance, 0)


def _segment_batch(preds: Tensor, target: Tensor, iscrowd: Tensor | None, categories: Categories,
                   allow_unknown: bool, validate_args: bool, names: list[str] | None) -> SegmentBatch:
    """One equal-size group as slot maps and tables."""
    gt_keys = _segment_keys(target, categories, "target", True, validate_args, names)
    pred_keys = _segment_keys(preds, categories, "preds", allow_unknown, validate_args, names)
    gt_slots, gt_key_table = _slots(gt_keys, len(categories.ids))
    pred_slots, pred_key_table = _slots(pred_keys, len(categories.ids))
    gt_category = (gt_key_table >> INSTANCE_BITS) - 1
    pred_category = (pred_key_table >> INSTANCE_BITS) - 1
    size, width = gt_category.shape
    if iscrowd is None:
        gt_crowd = torch.zeros_like(gt_category, dtype=torch.bool)
    else:
        index = (torch.arange(size, device=gt_slots.device).view(-1, 1, 1) * width + gt_slots).reshape(-1)
        marks = iscrowd.reshape(-1).to(torch.int64)
        crowd_max = torch.zeros(size * width, dtype=torch.int64, device=index.device).scatter_reduce_(
            0, index, marks, "amax")
        if validate_args:
            crowd_min = torch.ones(size * width, dtype=torch.int64, device=index.device).scatter_reduce_(
                0, index, marks, "amin")
            partial = (crowd_min != crowd_max) & (gt_category.reshape(-1) >= 0)
            if bool(partial.any()):
                slot = int(torch.nonzero(partial)[0])
                image, key = slot // width, int(gt_key_table.reshape(-1)[slot])
                at = names[image] if names is not None else f"[{image}]"
                cat_id = categories.ids[(key >> INSTANCE_BITS) - 1]
                raise ValueError(f"`iscrowd{at}` marks only part of the gt segment (category {cat_id}, instance "
                                 f"{key & (2**INSTANCE_BITS - 1)}): a segment is crowd or not, all its pixels alike")
        gt_crowd = (crowd_max > 0).view(size, width) & (gt_category >= 0)
    return SegmentBatch(gt_slots, pred_slots, gt_category, gt_crowd, pred_category)


def _slots(keys: Tensor, num_categories: int) -> tuple[Tensor, Tensor]:
    """Dense per-image slots of segment keys: ``(slots (B, H, W), key of each slot (B, S))``, slot 0 = void.

    CPU: ``torch.unique`` and a table as wide as the most segments an image holds (int16 slots when they fit).
    Elsewhere: a sort, and tables of ``H * W + 1`` slots per image (no host read).
    """
    size, height, width = keys.shape
    span = (num_categories + 1) << INSTANCE_BITS  # keys of one image lie in [0, span)
    if size * (num_categories + 1) >= 2**31:
        raise ValueError(f"a batch of {size} images of {num_categories} categories is too large to pack; "
                         f"update with fewer images at a time")
    image = torch.arange(size, device=keys.device, dtype=torch.int64) * span
    flat = torch.cat([(keys + image.view(-1, 1, 1)).reshape(-1), image])  # + one void key per image
    if host_reads.free_on(keys):
        _, run = torch.unique(flat, return_inverse=True)
    else:
        ordered, order = torch.sort(flat)
        starts = torch.ones_like(ordered, dtype=torch.bool)
        torch.ne(ordered[1:], ordered[:-1], out=starts[1:])
        run = torch.empty_like(order).scatter_(0, order, torch.cumsum(starts, 0) - 1)
    pixels = size * height * width
    local = run[:pixels].view(size, height, width) - run[pixels:].view(-1, 1, 1)  # the void key is each image's first
    slot_count = int(local.max()) + 1 if host_reads.free_on(keys) else height * width + 1
    table = torch.zeros(size * slot_count, dtype=torch.int64, device=keys.device)
    index = (torch.arange(size, device=keys.device).view(-1, 1, 1) * slot_count + local).reshape(-1)
    table.scatter_(0, index, keys.reshape(-1))
    if host_reads.free_on(keys) and slot_count <= 2**15:
        local = local.to(torch.int16)
    return local, table.view(size, slot_count)
