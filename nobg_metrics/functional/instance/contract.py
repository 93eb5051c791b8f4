"""torchmetrics' structural checks of detection inputs, in its order and with its words, plus ours.

torchmetrics' ``MeanAveragePrecision`` checks a batch in this order before it reads any value: ``preds`` and
``target`` are sequences of the same length, every dict holds the keys the IoU types need, then every needed value
is a tensor. Its users (and its own tests) match its messages, so each error here starts with torchmetrics'
sentence and goes on with ours, which names the element (``preds[3]["boxes"]``). An error about a wrong type is
an :class:`InputTypeError`: a ``ValueError`` as torchmetrics raises, and a ``TypeError`` as the rest of this
library raises for a wrong type.

Boxes as torchmetrics reads them (:func:`read_boxes`): :math:`(N, 4)` of any real dtype in ``box_format``, converted
to float64 ``xyxy`` with ``torchvision.ops.box_convert``'s arithmetic done in float64 (``x2 = x + w``,
``x1 = cx - 0.5 * w``: for float32 inputs these sums are exact, so ``x2 - x1`` gives ``w`` back); no boxes:
``Tensor([])``, :math:`(0,)` or :math:`(0, 4)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from nobg_metrics._inputs import check_tensor, input_error, item_name
from nobg_metrics.ops.row_bands import RowBands

__all__: list[str] = []  # the input contract's helpers: used by the instance modules, not public

BOX_FORMATS = ("xyxy", "xywh", "cxcywh")
"""torchmetrics' ``box_format`` choices: corners, corner + size, centre + size."""

KEY_OF_TYPE = {"bbox": "boxes", "segm": "masks", "boundary": "masks"}
"""The input key each IoU type reads."""


class InputTypeError(TypeError, ValueError):
    """A wrong input type: both a ``TypeError`` and torchmetrics' ``ValueError``."""


def needed_keys(iou_types: Sequence[str]) -> tuple[str, ...]:
    """The geometry keys the IoU types read, in torchmetrics' order (``boxes`` before ``masks``), once each.

    Examples:
        >>> needed_keys(("segm", "bbox", "boundary"))
        ('boxes', 'masks')
    """
    keys = {KEY_OF_TYPE[iou_type] for iou_type in iou_types}
    return tuple(key for key in ("boxes", "masks") if key in keys)


def _check_sequence(name: str, value: object) -> None:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise InputTypeError(f"Expected argument `{name}` to be of type Sequence, but got {type(value).__name__}: "
                             f"`{name}` must be a list of dicts (one per image)")


def check_structure(preds: object, target: object, geometry: tuple[str, ...]) -> None:
    """torchmetrics' ``_input_validator`` checks, in its order (module notes).

    Args:
        preds, target: the ``update`` arguments.
        geometry: the keys every dict must hold besides ``labels`` (and ``scores`` in ``preds``): :func:`needed_keys`.

    Examples:
        >>> check_structure([{"boxes": None, "labels": None}], [{"boxes": None, "labels": None}], ("boxes",))
        Traceback (most recent call last):
        ...
        ValueError: Expected all dicts in `preds` to contain the `scores` key: `preds[0]` must have the key 'scores', \
got the keys ['boxes', 'labels']
    """
    _check_sequence("preds", preds)
    _check_sequence("target", target)
    assert isinstance(preds, Sequence) and isinstance(target, Sequence)
    if len(preds) != len(target):
        raise ValueError(f"Expected argument `preds` and `target` to have the same length, but got {len(preds)} and "
                         f"{len(target)}: `preds` and `target` must have the same length (one dict per image)")
    for argument, items in (("preds", preds), ("target", target)):
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise InputTypeError(f"`{item_name(argument, index)}` must be a dict, got {type(item).__name__}")
    pred_keys = (*geometry, "labels", "scores")
    for argument, items, keys in (("preds", preds, pred_keys), ("target", target, (*geometry, "labels"))):
        for key in keys:
            for index, item in enumerate(items):
                if key not in item:
                    raise ValueError(f"Expected all dicts in `{argument}` to contain the `{key}` key: "
                                     f"`{item_name(argument, index)}` must have the key {key!r}, got the keys "
                                     f"{sorted(map(str, item))}")
    checks = [("preds", preds, key) for key in (*geometry, "scores", "labels")]
    checks += [("target", target, key) for key in (*geometry, "labels")]
    for argument, items, key in checks:
        for index, item in enumerate(items):
            if not isinstance(item[key], Tensor) and not (key == "masks" and isinstance(item[key], RowBands)):
                raise InputTypeError(f"Expected all {key} in `{argument}` to be of type Tensor: "
                                     f"`{item_name(argument, index, key)}` must be a torch.Tensor, got "
                                     f"{type(item[key]).__name__}")


def to_xyxy(boxes: Tensor, box_format: str) -> Tensor:
    """:math:`(N, 4)` boxes in ``box_format`` as float64 ``xyxy`` (``torchvision.ops.box_convert``'s arithmetic).

    Examples:
        >>> to_xyxy(torch.tensor([[2.0, 3.0, 4.0, 6.0]]), "cxcywh").tolist()
        [[0.0, 0.0, 4.0, 6.0]]
    """
    boxes = boxes.to(torch.float64)
    if box_format == "xywh":
        return torch.cat([boxes[:, :2], boxes[:, :2] + boxes[:, 2:]], dim=1)
    if box_format == "cxcywh":
        half = 0.5 * boxes[:, 2:]
        return torch.cat([boxes[:, :2] - half, boxes[:, :2] + half], dim=1)
    return boxes


def read_boxes(value: object, name: str, box_format: str) -> Tensor:
    """:math:`(N, 4)` float64 xyxy boxes (an empty tensor of rank < 3: no boxes)."""
    boxes = check_tensor(name, value)
    if boxes.dtype == torch.bool or boxes.dtype.is_complex:
        raise input_error(name, "be a float or int tensor of shape (N, 4)", boxes.dtype, TypeError)
    if boxes.numel() == 0 and (boxes.ndim < 2 or boxes.shape[-1] in (0, 4)):
        return torch.zeros((0, 4), dtype=torch.float64, device=boxes.device)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise input_error(name, "have shape (N, 4)", f"shape {tuple(boxes.shape)}")
    return to_xyxy(boxes, box_format)
