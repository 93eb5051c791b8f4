"""The shapes of the panoptic inputs: torchmetrics' ``(B, *spatial, 2)`` tensors (or lists of ``(*spatial, 2)``) and
the crowd marks ``(B, *spatial)``, checked with torchmetrics' wording and brought to ``(B, H, W[, 2])``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from nobg_metrics._inputs import check_holds_data, check_integer_dtype, check_tensor, input_error, item_name

__all__: list[str] = []  # used by nobg_metrics.functional.panoptic.inputs, not exported


def as_items(name: str, value: Tensor | Sequence[Tensor] | None, pixel_dims: int,
             planar: bool = False) -> list[Tensor] | None:
    """The images of a batch tensor or list, each with a leading batch dim and two spatial dims (other spatial
    ranks are flattened to one row: :math:`(B, *S, 2)` -> :math:`(B, 1, prod(S), 2)`); shapes checked.
    ``planar``: only 2-D images (``iou_type="boundary"``)."""
    if value is None:
        return None
    channel = " x 2" if pixel_dims == 2 else ""
    tail = 1 if pixel_dims == 2 else 0  # the (category_id, instance_id) channel dim
    if isinstance(value, Tensor):
        items, names, ranks = [value], [name], [value.ndim - 1 - tail]
    elif isinstance(value, (list, tuple)):
        if not value:
            raise TypeError(f"Expected argument `{name}` to be of type `torch.Tensor` or a non-empty list/tuple of "
                            f"tensors, got an empty {type(value).__name__}")
        items, names, ranks = [], [], []
        for index, item in enumerate(value):
            check_tensor(item_name(name, index), item)
            items.append(item[None])
            names.append(item_name(name, index))
            ranks.append(item.ndim - tail)
    else:
        raise TypeError(f"Expected argument `{name}` to be of type `torch.Tensor` (or a list/tuple of tensors), "
                        f"got {type(value).__name__}")
    out = []
    for item, label, rank in zip(items, names, ranks):
        given = tuple(item.shape if label == name else item.shape[1:])
        if rank < 1:
            layout = "(B, *spatial_dims, 2)" if pixel_dims == 2 else "(B, *spatial_dims)"
            raise ValueError(f"Expected argument `{label}` to have at least one spatial dimension {layout}, "
                             f"got shape {given}")
        if pixel_dims == 2 and item.shape[-1] != 2:
            raise ValueError(f"Expected argument `{label}` to have exactly 2 channels in the last dimension "
                             f"(category_id, instance_id), got shape {given}")
        if planar and rank != 2:
            layout = "(B, H, W, 2)" if pixel_dims == 2 else "(B, H, W)"
            raise ValueError(f"`iou_type='boundary'` needs 2-D images: `{label}` must have shape {layout}, got "
                             f"{given} ({rank} spatial dim{'s' if rank != 1 else ''})")
        if item.numel() == 0:
            raise input_error(label, f"hold images of at least one pixel{channel}", f"shape {given}")
        if rank != 2:  # the rules read no neighbourhood: one row of points
            item = item.reshape(item.shape[0], 1, -1, *item.shape[item.ndim - tail:])
        if pixel_dims == 2:
            check_integer_dtype(label, item, "an integer tensor of (category_id, instance_id)")
        if pixel_dims == 1 and item.dtype != torch.bool:
            raise input_error(label, "be a bool tensor marking crowd pixels", item.dtype, TypeError)
        check_holds_data(label, item)
        out.append(item)
    return out
