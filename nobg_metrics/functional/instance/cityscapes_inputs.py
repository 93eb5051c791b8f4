"""Inputs of the Cityscapes instance evaluation: checked, converted and grouped by image size.

- ``preds``: a list/tuple with one dict per image, ``{"masks": (N, H, W), "scores": (N,), "labels": (N,)}`` —
  torchmetrics' detection format. ``masks`` bool (or an integer dtype, non-zero = foreground, as the reference reads a
  mask PNG), ``scores`` any float dtype (read as float64; NaN rejected), ``labels`` integer Cityscapes label *ids*
  (``labels.py``'s ``id``, not train ids; any id ``-1 .. 33``: masks of classes that are not evaluated are dropped, as
  the reference drops them). ``N = 0`` is an image without predictions.
- ``target``: the ``*_instanceIds`` maps: an integer :math:`(B, H, W)` tensor or a list/tuple of :math:`(H, W)` ones
  (sizes may differ), values ``label id * 1000 + instance`` or a bare label id (``-1 .. 33`` or ``1000 .. 33999``).

Value checks (NaN scores, unknown label ids, values outside the encoding) read the tensors on the host; they are
skipped with ``validate_args=False``. Shapes, dtypes and devices are always checked. Errors name the element
(``preds[3]["masks"]``, ``target[3]``) in the words of :mod:`nobg_metrics._inputs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Union

import torch
from torch import Tensor

from nobg_metrics._inputs import (
    check_device,
    check_holds_data,
    check_integer_dtype,
    check_same_length,
    check_sequence,
    check_tensor,
    input_error,
    item_name,
)
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
            raise input_error("target", "have shape (B, H, W) or (H, W) (instanceIds maps)",
                              f"shape {tuple(target.shape)}")
        return [(item_name("target", i), image) for i, image in enumerate(target)]
    if not isinstance(target, (list, tuple)):
        raise input_error("target", "be a torch.Tensor or a list/tuple of tensors", type(target).__name__, TypeError)
    items = []
    for i, image in enumerate(target):
        name = item_name("target", i)
        check_tensor(name, image)
        if image.ndim != 2:
            raise input_error(name, "have shape (H, W) (an instanceIds map)", f"shape {tuple(image.shape)}")
        items.append((name, image))
    return items


def _check_gt(name: str, gt: Tensor, validate_args: bool) -> Tensor:
    check_integer_dtype(name, gt, "an integer instanceIds map (label id * 1000 + instance)")
    check_holds_data(name, gt)
    if gt.shape[0] == 0 or gt.shape[1] == 0:
        raise input_error(name, "have H >= 1 and W >= 1", f"shape {tuple(gt.shape)}")
    if validate_args:  # the range here; values 34 .. 999 are found in the segment table (cityscapes_matching)
        low, high = (int(v) for v in torch.aminmax(gt.to(torch.int64) if gt.dtype == torch.uint16 else gt))
        if low < LOWEST_LABEL_ID or high >= (HIGHEST_LABEL_ID + 1) * GROUP_LIMIT:
            raise_bad_value(name, low if low < LOWEST_LABEL_ID else high)
    return gt.to(torch.int32).contiguous()  # values < 34000: half the memory traffic of int64


def raise_bad_value(name: str, value: int) -> None:
    """The error for an instanceIds value outside the encoding."""
    raise input_error(name, "hold Cityscapes instanceIds values (a label id -1..33, or label id * 1000 + instance "
                      "for ids 1..33: 1000..33999)", value)


def _check_prediction(index: int, pred: object, size: tuple[int, int], gt_name: str, device: torch.device,
                      validate_args: bool) -> tuple[Tensor, Tensor, Tensor]:
    where = item_name("preds", index)
    if not isinstance(pred, Mapping):
        raise input_error(where, "be a dict with 'masks', 'scores' and 'labels'", type(pred).__name__, TypeError)
    for key in ("masks", "scores", "labels"):
        if key not in pred:
            raise input_error(where, f"have the key {key!r} (it needs 'masks', 'scores' and 'labels')",
                              f"the keys {sorted(map(str, pred))}")
        check_tensor(item_name("preds", index, key), pred[key])
        check_device(item_name("preds", index, key), pred[key], gt_name, device)
    masks, scores, labels = pred["masks"], pred["scores"], pred["labels"]
    if masks.ndim != 3 or tuple(masks.shape[1:]) != size:
        raise input_error(item_name("preds", index, "masks"), f"have shape (N, {size[0]}, {size[1]}) (its gt's size)",
                          tuple(masks.shape))
    if masks.dtype.is_floating_point or masks.dtype.is_complex:
        raise input_error(item_name("preds", index, "masks"), "be bool (or integer, non-zero = foreground)",
                          masks.dtype, TypeError)
    count = masks.shape[0]
    for key, tensor in (("scores", scores), ("labels", labels)):
        if tuple(tensor.shape) != (count,):
            raise input_error(item_name("preds", index, key), f"have shape ({count},) (one per mask)",
                              tuple(tensor.shape))
    if not scores.dtype.is_floating_point:
        raise input_error(item_name("preds", index, "scores"), "be a float tensor", scores.dtype, TypeError)
    check_integer_dtype(item_name("preds", index, "labels"), labels, "integer Cityscapes label ids")
    if validate_args and count:
        if bool(torch.isnan(scores).any()):
            raise input_error(item_name("preds", index, "scores"), "not hold NaN", "NaN")
        unknown = (labels < LOWEST_LABEL_ID) | (labels > HIGHEST_LABEL_ID)
        if bool(unknown.any()):
            raise input_error(item_name("preds", index, "labels"), "hold Cityscapes label ids (-1..33, labels.py's "
                              "`id`; evaluated: 24-28, 31-33)", int(labels[unknown][0]))
    return masks if masks.dtype == torch.bool else masks != 0, scores.to(torch.float64), labels.to(torch.int64)


def size_groups(preds: Predictions, target: InstanceIds, validate_args: bool = True) -> list[SizeGroup]:
    """Check every input and stack the images of each size (in order of first appearance).

    Raises:
        TypeError, ValueError: naming the argument (``preds[3]["masks"]``), what was expected and what came.
    """
    check_sequence("preds", preds, "a list/tuple of dicts, one per image")
    gts = _gt_list(target)
    check_same_length({"preds": len(preds), "target": len(gts)}, "one prediction dict per gt image")
    grouped: dict[tuple[int, int], list[tuple[str, Tensor, Tensor, Tensor, Tensor]]] = {}
    for index, ((name, gt), pred) in enumerate(zip(gts, preds)):
        gt = _check_gt(name, gt, validate_args)
        size = (int(gt.shape[0]), int(gt.shape[1]))
        masks, scores, labels = _check_prediction(index, pred, size, name, gt.device, validate_args)
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
