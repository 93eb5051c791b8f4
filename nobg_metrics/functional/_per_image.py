"""The reduction every per-image metric shares: sum the per-image values of each equal-size group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import torch
from torch import Tensor

Batch = TypeVar("Batch")


def sum_per_image(per_image: Callable[[Batch], Tensor], batches: Iterable[Batch]) -> tuple[Tensor, Tensor]:
    """Sum of ``per_image(batch)`` over all groups and the number of images.

    Args:
        per_image: maps one equal-size group to its :math:`(B,)` (or :math:`(B, K)`: K values per image)
            per-image values.
        batches: the groups (from ``prepare_segmentation`` or ``prepare_matting``).

    Returns:
        ``(total, count)``: float64 sum (scalar, or :math:`(K,)`), int64 scalar image count (the state a mean
        needs).
    """
    totals, count = [], 0
    for batch in batches:
        values = per_image(batch)
        totals.append(values.sum(dim=0))
        count += values.shape[0]
    total = torch.stack(totals).sum(dim=0)
    return total, torch.full((), count, dtype=torch.int64, device=total.device)
