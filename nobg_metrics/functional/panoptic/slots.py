"""Dense per-image slots of segment keys (the tensor convention's ``(category, instance)`` keys), slot 0 = void.

A batch's segments become slot indices ``0 .. S - 1`` per image (0: void), in the order of their keys, with a
table of each slot's key. CPU: the runs of equal keys in row-major order (a segment is a few runs per row) are
deduplicated and each pixel takes its run's slot; tables as wide as the most segments an image holds. On a
device: a sort of all the keys, and tables of ``H * W + 1`` slots per image, so nothing is read back.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads


def assign_slots(keys: Tensor, num_categories: int, marks: Tensor | None, shift: int,
                 engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor, tuple[Tensor, Tensor] | None]:
    """Dense per-image slots of segment keys, slot 0 = void (module notes).

    Args:
        keys: :math:`(B, H, W)` integer keys ``(category index + 1) << shift | instance``, 0 for void.
        num_categories: ``C`` (the keys of an image lie below ``(C + 1) << shift``).
        marks: :math:`(B, H, W)` bool crowd marks, or ``None``.
        shift: the instance bits of the keys.
        engine: ``"data_sized"`` (the runs, tables as wide as the most segments: host reads), ``"fixed"`` (a sort,
            tables of ``H * W + 1`` slots: no host read) or ``"auto"`` (data-sized on CPU).

    Returns:
        ``(slots (B, H, W), key of each slot (B, S) int64, (marked, unmarked) (B, S) or None)``: with ``marks``
        (:math:`(B, H, W)` bool), how many marked and unmarked pixels (CPU: runs) each slot holds.
    """
    size, height, width = keys.shape
    pixels, per_image = keys.numel(), height * width
    span = (num_categories + 1) << shift  # keys of one image lie in [0, span)
    if size * (num_categories + 1) >= 2**30:
        raise ValueError(f"a batch of {size} images of {num_categories} categories is too large to pack; "
                         f"update with fewer images at a time")
    image = torch.arange(size, device=keys.device, dtype=torch.int64) * span
    if host_reads.resolve_engine(engine, keys) == "data_sized":
        flat = keys.reshape(-1) if marks is None else (keys << 1).bitwise_or_(marks).reshape(-1)
        starts = torch.ones(pixels, dtype=torch.bool)
        torch.ne(flat[1:], flat[:-1], out=starts[1:])
        starts[::per_image] = True  # every image starts a run
        run = torch.cumsum(starts, 0, dtype=torch.int32).sub_(1)
        where = torch.nonzero(starts).view(-1)
        run_keys = flat.index_select(0, where).to(torch.int64)
        run_marks = None
        if marks is not None:
            run_marks, run_keys = run_keys & 1, run_keys >> 1
        run_keys += image[where // per_image]
        unique = torch.unique(torch.cat([run_keys, image]))  # + one void key per image: each image's first
        first = torch.searchsorted(unique, image)
        run_image = run_keys // span
        run_slot = torch.searchsorted(unique, run_keys) - first[run_image]
        slot_count = int((torch.cat([first[1:], first.new_tensor([unique.numel()])]) - first).max())
        dtype = torch.int16 if slot_count <= 2**15 else torch.int32
        local = run_slot.to(dtype).index_select(0, run).view(size, height, width)
        uniq_image = unique // span
        table = torch.zeros(size * slot_count, dtype=torch.int64)
        positions = uniq_image * slot_count + torch.arange(unique.numel()) - first[uniq_image]
        table[positions] = unique - uniq_image * span
        counts = None
        if run_marks is not None:
            index = run_image * slot_count + run_slot
            marked, unmarked = (torch.bincount(index[run_marks == m], minlength=size * slot_count)
                                .view(size, slot_count) for m in (1, 0))
            counts = (marked, unmarked)
        return local, table.view(size, slot_count), counts
    flat = (keys + image.view(-1, 1, 1)).reshape(-1)
    ordered, order = torch.sort(torch.cat([flat, image]))
    starts = torch.ones_like(ordered, dtype=torch.bool)
    torch.ne(ordered[1:], ordered[:-1], out=starts[1:])
    run = torch.empty_like(order).scatter_(0, order, torch.cumsum(starts, 0) - 1)
    local = run[:pixels].view(size, height, width) - run[pixels:].view(-1, 1, 1)  # the void key is each image's first
    slot_count = per_image + 1
    index = (torch.arange(size, device=keys.device).view(-1, 1, 1) * slot_count + local).reshape(-1)
    table = torch.zeros(size * slot_count, dtype=torch.int64, device=keys.device).scatter_(0, index, keys.reshape(-1))
    counts = None
    if marks is not None:
        flags = marks.reshape(-1).to(torch.int64)
        marked, unmarked = (torch.zeros(size * slot_count, dtype=torch.int64, device=keys.device)
                            .index_add_(0, index, m).view(size, slot_count) for m in (flags, 1 - flags))
        counts = (marked, unmarked)
    return local, table.view(size, slot_count), counts
