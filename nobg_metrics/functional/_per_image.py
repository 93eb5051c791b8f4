"""The reduction every per-image metric shares: sum the per-image values of each equal-size group."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar, cast, overload

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.threads import one_thread_if_small

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Batch = TypeVar("Batch", bound="DataclassInstance")
Values = Tensor | dict[str, Tensor]
"""Per-image values: one tensor, or several named ones from the same pass."""

CPU_BLOCK_PIXELS = 1 << 20
"""On CPU a group is scored in blocks of at most this many pixels (one 1024² image, sixteen 256² ones): the
per-image work (distance transforms, filters, labelling) then stays in cache, and the weighted F's row pass
sizes its sites per block instead of by the widest object of the batch. A batch of four 1024² gts: exact
distance transform 107 -> 62 ms per image on one thread. On other devices the group stays whole."""


@overload
def sum_per_image(per_image: Callable[[Batch], Tensor], batches: Iterable[Batch]) -> tuple[Tensor, Tensor]: ...


@overload
def sum_per_image(per_image: Callable[[Batch], dict[str, Tensor]],
                  batches: Iterable[Batch]) -> tuple[dict[str, Tensor], Tensor]: ...


def sum_per_image(per_image: Callable[[Batch], Values], batches: Iterable[Batch]) -> tuple[Values, Tensor]:
    """Sum of ``per_image(batch)`` over all groups and the number of images: the one accumulation every
    per-image metric uses (on CPU each group is scored in blocks, see :data:`CPU_BLOCK_PIXELS`).

    Args:
        per_image: maps one equal-size group to its :math:`(B,)` (or :math:`(B, K...)`: K values per image)
            per-image values, or to a dict of such tensors (several statistics from one pass; integer
            counts stay integer).
        batches: the groups (from ``prepare_segmentation`` or ``prepare_matting``).

    Returns:
        ``(total, count)``: the sum over images (a tensor, or a dict of them, each without the batch
        dimension), int64 scalar image count (the state a mean needs).

    Examples:
        >>> from nobg_metrics._seg_batch import prepare_segmentation
        >>> maps = [torch.ones(2, 3), torch.zeros(1, 4, 4)]
        >>> groups = prepare_segmentation(maps, maps)
        >>> sum_per_image(lambda batch: {"pixels": torch.full((batch.shape[0],), batch.num_pixels)}, groups)
        ({'pixels': tensor(22)}, tensor(2))
    """
    totals: list[Values] = []
    count = 0
    for batch in batches:
        for block in _cpu_blocks(batch):
            with one_thread_if_small(*_size_and_device(block)):  # small CPU blocks: no thread-pool round trips
                values = per_image(block)
            if isinstance(values, dict):
                totals.append({name: _sum_images(value) for name, value in values.items()})
                count += next(iter(values.values())).shape[0]
            else:
                totals.append(_sum_images(values))
                count += values.shape[0]
    if isinstance(totals[0], dict):
        named = cast("list[dict[str, Tensor]]", totals)  # per_image returns the same kind for every group
        total: Values = named[0] if len(named) == 1 else {
            name: _sum_images(torch.stack([t[name] for t in named])) for name in named[0]}
        device = next(iter(total.values())).device
    else:
        tensors = cast("list[Tensor]", totals)  # per_image returns the same kind for every group
        total = tensors[0] if len(tensors) == 1 else _sum_images(torch.stack(tensors))
        device = total.device
    return total, torch.full((), count, dtype=torch.int64, device=device)


def _sum_images(values: Tensor) -> Tensor:
    """The sum over the leading (image) axis, each output summed as one contiguous run of B values: the same
    bits whatever else the tensor holds (a measure's value alone or as one column of the family's table)."""
    if values.ndim == 1:
        return values.sum(dim=0)
    return values.movedim(0, -1).contiguous().sum(dim=-1)


def _size_and_device(batch: Batch) -> tuple[int, torch.device]:
    """Pixels of a group (its first tensor field, :math:`(B, H, W)`) and its device."""
    first = next(getattr(batch, field.name) for field in dataclasses.fields(batch)
                 if isinstance(getattr(batch, field.name), Tensor))
    return first.numel(), first.device


def _cpu_blocks(batch: Batch) -> Iterator[Batch]:
    """``batch`` itself, or on CPU its consecutive images in blocks of at most :data:`CPU_BLOCK_PIXELS`
    (a bounded number of blocks per group: ``B * H * W / 2^20``, each one vectorised)."""
    tensors = {field.name: getattr(batch, field.name) for field in dataclasses.fields(batch)}
    first = next(value for value in tensors.values() if isinstance(value, Tensor))
    size, height, width = first.shape
    per_block = max(1, CPU_BLOCK_PIXELS // max(1, height * width))
    if size <= per_block or not host_reads.free_on(first):
        yield batch
        return
    for start in range(0, size, per_block):
        yield dataclasses.replace(batch, **{name: value[start : start + per_block]
                                            for name, value in tensors.items() if isinstance(value, Tensor)})


def mean_over_images(total: Tensor, count: Tensor) -> Tensor:
    """The dataset value of a "mean of per-image values" metric: ``total / count`` (float64; NaN with no image).

    Examples:
        >>> mean_over_images(torch.tensor(3.0, dtype=torch.float64), torch.tensor(4))
        tensor(0.7500, dtype=torch.float64)
    """
    return total / count
