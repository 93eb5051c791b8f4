"""Inputs of the Cityscapes instance evaluation: checked, converted and grouped by image size.

- ``preds``: a list/tuple with one dict per image, ``{"masks": (N, H, W), "scores": (N,), "labels": (N,)}`` —
  torchmetrics' detection format. ``masks`` bool (or an integer dtype, non-zero = foreground, as the reference reads a
  mask PNG), ``scores`` any float dtype (read as float64; NaN rejected), ``labels`` integer Cityscapes label *ids*
  (``labels.py``'s ``id``, not train ids; any id ``-1 .. 33``: masks of classes that are not evaluated are dropped, as
  the reference drops them). ``N = 0`` is an image without predictions.
- ``target``: the ``*_instanceIds`` maps: an integer :math:`(B, H, W)` tensor or a list/tuple of :math:`(H, W)` ones
  (sizes may differ), values ``label id * 1000 + instance`` or a bare label id (``-1 .. 33`` or ``1000 .. 33999``).

Value checks (NaN scores, unknown label ids, values outside the encoding) read the tensors on the host; they are
skipped with ``validate_args=False``. Shapes, dtypes and devices are always checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Union

import torch
from torch import Tensor

from nobg_metrics.functional.instance.cityscapes_labels import (
    GROUP_LIMIT,
    HIGHEST_LABEL_ID,
    LOWEST_LABEL_ID,
)

Predictions = Sequence[Mapping[str, Tensor]]
"""One ``{"masks", "scores", "labels"}`` dict per image."""
InstanceIds = Union[Tensor, Sequence[Tensor]]  # noqa: UP007  (a runtime alias: `|` of typing objects needs 3.10)
"""``*_instanceIds`` maps: :math:`(B, H, W)` or a list of :math:`(H, W)` integer tensors."""


@dataclass
class SizeGroup:
    """The images of one size: ``gts`` :math:`(B, H, W)` int32 (stacked), ``masks`` each image's :math:`(N_b, H, W)`
    bool masks (not concatenated: they are packed to bits one by one), ``image_of`` :math:`(P,)` int64 (the image of
    each of the group's ``P`` predictions), ``labels`` :math:`(P,)` int64, ``scores`` :math:`(P,)` float64, ``names``
    the images' argument names (``target[3]``) and ``validate`` whether values are checked."""

    gts: Tensor
    masks: list[Tensor]
    image_of: Tensor
    labels: Tensor
    scores: Tensor
    names: list[str]
    validate: bool = True


def _gt_list(target: InstanceIds) -> list[tuple[str, Tensor]]:
    if isinstance(target, Tensor):
        if target.ndim == 2:
            return [("target", target)]
        if target.ndim != 3:
            raise ValueError(f"`target` must be (B, H, W) or (H, W) instanceIds maps; got shape {tuple(target.shape)}")
        return [(f"target[{i}]", image) for i, image in enumerate(target)]
    if not isinstance(target, (list, tuple)):
        raise TypeError(f"`target` must be a tensor or a list/tuple of tensors, got {type(target).__name__}")
    items = []
    for i, image in enumerate(target):
        if not isinstance(image, Tensor):
            raise TypeError(f"`target[{i}]` must be a torch.Tensor, got {type(image).__name__}")
        if image.ndim != 2:
            raise ValueError(f"`target[{i}]` must be an (H, W) instanceIds map; got shape {tuple(image.shape)}")
        items.append((f"target[{i}]", image))
    return items


def _check_gt(name: str, gt: Tensor, validate_args: bool) -> Tensor:
    if gt.dtype == torch.bool or gt.dtype.is_floating_point or gt.dtype.is_complex:
        raise TypeError(f"`{name}` must be an integer instanceIds map (label id * 1000 + instance); got {gt.dtype}")
    if gt.device.type == "meta":
        raise ValueError(f"`{name}` must hold data (a CPU or CUDA tensor); got a tensor on the meta device")
    if gt.shape[0] == 0 or gt.shape[1] == 0:
        raise ValueError(f"`{name}` must have H >= 1 and W >= 1, got shape {tuple(gt.shape)}")
    if validate_args:  # the range here; values 34 .. 999 are found in the segment table (cityscapes_matching)
        low, high = (int(v) for v in torch.aminmax(gt.to(torch.int64) if gt.dtype == torch.uint16 else gt))
        if low < LOWEST_LABEL_ID or high >= (HIGHEST_LABEL_ID + 1) * GROUP_LIMIT:
            raise_bad_value(name, low if low < LOWEST_LABEL_ID else high)
    return gt.to(torch.int32).contiguous()  # values < 34000: half the memory traffic of int64


def raise_bad_value(name: str, value: int) -> None:
    """The error for an instanceIds value outside the encoding."""
    raise ValueError(f"`{name}` holds {value}, which is not a Cityscapes instanceIds value (a label id -1..33, or "
                     f"label id * 1000 + instance for ids 1..33: 1000..33999)")


def _check_prediction(where: str, pred: object, size: tuple[int, int], device: torch.device,
                      validate_args: bool) -> tuple[Tensor, Tensor, Tensor]:
    if not isinstance(pred, Mapping):
        raise TypeError(f"`{where}` must be a dict with 'masks', 'scores' and 'labels'; got {type(pred).__name__}")
    for key in ("masks", "scores", "labels"):
        if key not in pred:
            raise ValueError(f"`{where}` has no {key!r} (it needs 'masks', 'scores' and 'labels')")
        if not isinstance(pred[key], Tensor):
            raise TypeError(f"`{where}[{key!r}]` must be a torch.Tensor, got {type(pred[key]).__name__}")
        if pred[key].device != device:
            raise ValueError(f"`{where}[{key!r}]` is on {pred[key].device}, its gt on {device}: put them on one device")
    masks, scores, labels = pred["masks"], pred["scores"], pred["labels"]
    if masks.ndim != 3 or tuple(masks.shape[1:]) != size:
        raise ValueError(f"`{where}['masks']` must have shape (N, {size[0]}, {size[1]}) (its gt's size); "
                         f"got {tuple(masks.shape)}")
    if masks.dtype.is_floating_point or masks.dtype.is_complex:
        raise TypeError(f"`{where}['masks']` must be bool (or integer, non-zero = foreground); got {masks.dtype}")
    count = masks.shape[0]
    for key, tensor in (("scores", scores), ("labels", labels)):
        if tuple(tensor.shape) != (count,):
            raise ValueError(f"`{where}[{key!r}]` must have shape ({count},), one per mask; got {tuple(tensor.shape)}")
    if not scores.dtype.is_floating_point:
        raise TypeError(f"`{where}['scores']` must be a float tensor; got {scores.dtype}")
    if labels.dtype == torch.bool or labels.dtype.is_floating_point or labels.dtype.is_complex:
        raise TypeError(f"`{where}['labels']` must be integer Cityscapes label ids; got {labels.dtype}")
    if validate_args and count:
        if bool(torch.isnan(scores).any()):
            raise ValueError(f"`{where}['scores']` must not be NaN")
        unknown = (labels < LOWEST_LABEL_ID) | (labels > HIGHEST_LABEL_ID)
        if bool(unknown.any()):
            raise ValueError(f"`{where}['labels']` holds {int(labels[unknown][0])}, which is not a Cityscapes label "
                             f"id (-1..33, labels.py's `id`; evaluated: 24-28, 31-33)")
    return masks if masks.dtype == torch.bool else masks != 0, scores.to(torch.float64), labels.to(torch.int64)


def size_groups(preds: Predictions, target: InstanceIds, validate_args: bool = True) -> list[SizeGroup]:
    """Check every input and stack the images of each size (in order of first appearance).

    Raises:
        TypeError, ValueError: naming the argument (``preds[3]['masks']``), what was expected and what came.
    """
    if not isinstance(preds, (list, tuple)):
        raise TypeError(f"`preds` must be a list/tuple of dicts, one per image; got {type(preds).__name__}")
    gts = _gt_list(target)
    if len(preds) != len(gts):
        raise ValueError(f"`preds` has {len(preds)} images and `target` {len(gts)}: give one prediction dict per gt")
    grouped: dict[tuple[int, int], list[tuple[str, Tensor, Tensor, Tensor, Tensor]]] = {}
    for index, ((name, gt), pred) in enumerate(zip(gts, preds)):
        gt = _check_gt(name, gt, validate_args)
        size = (int(gt.shape[0]), int(gt.shape[1]))
        masks, scores, labels = _check_prediction(f"preds[{index}]", pred, size, gt.device, validate_args)
        grouped.setdefault(size, []).append((name, gt, masks, scores, labels))
    groups = []
    for images in grouped.values():  # a loop over image sizes: each size is one vectorised pass
        names, gt_maps, image_masks, image_scores, image_labels = (list(column) for column in zip(*images))
        counts = torch.tensor([m.shape[0] for m in image_masks], device=gt_maps[0].device)
        groups.append(SizeGroup(
            gts=gt_maps[0].unsqueeze(0) if len(gt_maps) == 1 else torch.stack(gt_maps),
            masks=image_masks,
            image_of=torch.repeat_interleave(torch.arange(len(images), device=counts.device), counts,
                                             output_size=sum(m.shape[0] for m in image_masks)),
            scores=torch.cat(image_scores),
            labels=torch.cat(image_labels),
            names=names,
            validate=validate_args,
        ))
    return groups
