"""The instance-segmentation input contract: torchmetrics' detection dicts, one per image, validated once.

``preds[i]``: ``masks`` :math:`(N, H, W)` (mask IoU types), ``boxes`` :math:`(N, 4)` (``"bbox"``), ``scores``
:math:`(N,)` float, ``labels`` :math:`(N,)` int, and optionally ``area`` :math:`(N,)` (the area that decides a
detection's area range; default: its mask's pixel count — pycocotools' ``loadRes`` takes it from the ``bbox``
when the results carry one, which the ``nobg-metrics instances`` command passes here).

``target[i]``: ``masks`` :math:`(M, H, W)`, ``boxes`` :math:`(M, 4)`, ``labels`` :math:`(M,)` int, and optionally
``iscrowd`` :math:`(M,)` (bool or 0/1), ``area`` :math:`(M,)` (default: the mask's pixel count), ``ignore`` :math:`(M,)`
(bool or 0/1: boundary-iou-api's ``ignore`` flag, OR-ed with ``iscrowd``), ``image_id`` (an int or a 0-d int
tensor: orders score ties across images, see docs/instance_segmentation.md) and, for ``protocol="lvis"``,
``neg_category_ids`` / ``not_exhaustive_category_ids`` (1-D int tensors or lists of ints: LVIS' per-image federated
lists). A ``scores`` key in ``target`` is ignored (torchmetrics ignores it).

Masks as torchmetrics takes them: bool, or any integer / float dtype holding 0 and 1 (read as ``mask != 0``; the
0/1 check reads values and runs with ``validate_args``); an image without instances may give its masks as
``Tensor([])``, :math:`(0,)` or :math:`(0, H, W)`. Boxes: :math:`(N, 4)` of any real dtype in ``box_format``
(``"xyxy"``, ``"xywh"``, ``"cxcywh"``), converted to float64 ``xyxy`` as ``torchvision.ops.box_convert`` converts
them, in float64 (``x2 = x + w``; ``x1 = cx - 0.5 * w``); no boxes: ``Tensor([])``, :math:`(0,)` or :math:`(0, 4)`.
Keys an IoU type does not read may still be given (they are checked, and boxes converted, where given).

torchmetrics' structural checks come first, in its order and with its words
(:mod:`~nobg_metrics.functional.instance.contract`). Every error names the element (``preds[3]["masks"]``), what
was expected and what came, in the words of
:mod:`nobg_metrics._inputs` (whose checks it uses). The checks that read values (NaN scores, 0/1 flags, label
range) force a device sync and run only with ``validate_args``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from nobg_metrics._inputs import (
    check_device,
    check_tensor,
    input_error,
    item_name,
)
from nobg_metrics.functional.instance.contract import (
    BOX_FORMATS,
    KEY_OF_TYPE,
    check_structure,
    needed_keys,
    read_boxes,
)
from nobg_metrics.ops.row_bands import RowBands, placeholder

LABEL_LIMIT = 2**32
"""Labels must lie in ``[-2**32, 2**32)`` (they are packed with the image index into one int64 sort key)."""

_PRED_KEYS = ("masks", "boxes", "scores", "labels", "area")
_TARGET_KEYS = ("masks", "boxes", "labels", "iscrowd", "area", "ignore", "image_id", "neg_category_ids",
                "not_exhaustive_category_ids", "scores")


@dataclass
class ImageInstances:
    """One image's detections and ground truths in canonical form (all on one device).

    Attributes:
        det_masks: :math:`(N, H, W)` bool (:math:`(N, 0, 0)` where no masks were given: box IoU only).
        det_scores: :math:`(N,)` float64. det_labels: :math:`(N,)` int64.
        det_area: :math:`(N,)` float64 or ``None`` (the mask's pixel count).
        gt_masks: :math:`(M, H, W)` bool (:math:`(M, 0, 0)` where no masks were given).
        gt_labels: :math:`(M,)` int64. gt_crowd, gt_ignore: :math:`(M,)` bool.
        gt_area: :math:`(M,)` float64 or ``None``. image_id: 0-d int64 or ``None``.
        neg_category_ids, not_exhaustive_category_ids: :math:`(L,)` int64 or ``None``.
        det_boxes, gt_boxes: :math:`(N, 4)` / :math:`(M, 4)` float64 ``xyxy`` (module notes), or ``None`` where
            the dicts had no ``boxes``.
        det_bands, gt_bands: the masks as :class:`~nobg_metrics.ops.row_bands.RowBands` where they
            were given so (``det_masks`` / ``gt_masks`` are then zero-memory stand-ins of their shape: read
            :meth:`dense_det_masks` / :meth:`dense_gt_masks` for the pixels).
    """

    det_masks: Tensor
    det_scores: Tensor
    det_labels: Tensor
    det_area: Tensor | None
    gt_masks: Tensor
    gt_labels: Tensor
    gt_crowd: Tensor
    gt_ignore: Tensor
    gt_area: Tensor | None
    image_id: Tensor | None
    neg_category_ids: Tensor | None
    not_exhaustive_category_ids: Tensor | None
    det_boxes: Tensor | None = None
    gt_boxes: Tensor | None = None
    det_bands: RowBands | None = None
    gt_bands: RowBands | None = None

    @property
    def size(self) -> tuple[int, int]:
        """``(H, W)`` (``(0, 0)`` without masks)."""
        return self.gt_masks.shape[-2], self.gt_masks.shape[-1]

    def dense_det_masks(self) -> Tensor:
        """:math:`(N, H, W)` bool detection masks (made from the bands where given so)."""
        return self.det_bands.dense() if self.det_bands is not None else self.det_masks

    def dense_gt_masks(self) -> Tensor:
        """:math:`(M, H, W)` bool gt masks (made from the bands where given so)."""
        return self.gt_bands.dense() if self.gt_bands is not None else self.gt_masks


_where = item_name


def _is_empty(tensor: Tensor) -> bool:
    """No instances, given as ``Tensor([])``, :math:`(0,)` or another empty tensor of rank < 3."""
    return tensor.numel() == 0 and tensor.ndim < 3


def _masks(value: object, name: str) -> Tensor | RowBands | None:
    """:math:`(N, H, W)` bool, or ``None`` for an empty tensor of rank < 3 (the size comes from the other side);
    :class:`~nobg_metrics.ops.row_bands.RowBands` as they are."""
    if isinstance(value, RowBands):
        return value
    masks = check_tensor(name, value)
    if masks.dtype.is_complex:
        raise input_error(name, "be a bool tensor (or 0/1 integer or float) of shape (N, H, W)", masks.dtype,
                          TypeError)
    if _is_empty(masks):
        return None
    if masks.ndim != 3:
        raise input_error(name, "have shape (N, H, W)", f"shape {tuple(masks.shape)}")
    if masks.shape[1] == 0 or masks.shape[2] == 0:
        raise input_error(name, "hold images of H >= 1 and W >= 1", f"shape {tuple(masks.shape)}")
    return (masks if masks.dtype == torch.bool else masks != 0).contiguous()


_CONVERTED = {"float": torch.float64, "int": torch.int64, "flag": torch.bool}


def _vector(value: object, argument: str, index: int, key: str, count: int, kind: str) -> Tensor:
    """``argument[index][key]``: a :math:`(count,)` tensor of ``kind`` ("float", "int" or "flag"), converted to
    float64 / int64 / bool (the element's name is only formatted for an error)."""
    if not isinstance(value, Tensor):
        raise input_error(_where(argument, index, key), "be a torch.Tensor", type(value).__name__, TypeError)
    if value.ndim != 1 or value.shape[0] != count:
        raise input_error(_where(argument, index, key), f"have shape ({count},) (one entry per instance)",
                          f"shape {tuple(value.shape)}")
    dtype = value.dtype
    converted = _CONVERTED[kind]
    if count == 0 and not dtype.is_complex:  # no instances: torchmetrics' ``Tensor([])`` of any dtype
        return value.to(converted)
    if kind == "float":
        if dtype == torch.bool or dtype.is_complex:
            raise input_error(_where(argument, index, key), "be a float or int tensor", dtype, TypeError)
    elif dtype.is_floating_point or dtype.is_complex:
        expected = "an integer tensor" if kind == "int" else "a bool or 0/1 integer tensor"
        raise input_error(_where(argument, index, key), f"be {expected}", dtype, TypeError)
    return value if dtype == converted else value.to(converted)


def _id_list(value: object, name: str, device: torch.device) -> Tensor:
    """A per-image list of category ids: a 1-D integer tensor or a list of ints (empty: any dtype)."""
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise input_error(name, "be a list of int category ids or a 1-D integer tensor", repr(value), TypeError)
        return torch.tensor(value, dtype=torch.int64).to(device)
    ids = check_tensor(name, value)
    if ids.ndim != 1 or (ids.numel() and (ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.is_complex())):
        raise input_error(name, "be a 1-D integer tensor of category ids", f"{ids.dtype} of shape {tuple(ids.shape)}",
                          TypeError)
    return ids.to(torch.int64)


def _image_id(value: object, name: str, device: torch.device) -> Tensor:
    if isinstance(value, int) and not isinstance(value, bool):
        return torch.full((), value, dtype=torch.int64, device=device)
    image_id = check_tensor(name, value)
    if image_id.numel() != 1 or image_id.dtype.is_floating_point or image_id.dtype == torch.bool:
        raise input_error(name, "be an int or a one-element integer tensor",
                          f"{image_id.dtype} of shape {tuple(image_id.shape)}", TypeError)
    return image_id.reshape(()).to(device=device, dtype=torch.int64)


def _check_unknown(item: Mapping, argument: str, index: int, known: tuple[str, ...]) -> None:
    if len(item) <= len(known) and all(key in known for key in item):
        return
    unknown = sorted(str(key) for key in item if key not in known)
    if unknown:
        raise input_error(item_name(argument, index), f"have only known keys {list(known)}",
                          f"the unknown keys {unknown}")


@functools.lru_cache(maxsize=256)
def _empty_masks(count: int, device: torch.device) -> Tensor:
    return torch.zeros((count, 0, 0), dtype=torch.bool, device=device)


def _no_masks(count: int, size: tuple[int, ...], device: torch.device) -> Tensor:
    """The :math:`(N, H, W)` bool stand-in of an item without masks: all zero (without pixels, for boxes only,
    one tensor per count and device, made once: it holds no value to change)."""
    if size == (0, 0):
        return _empty_masks(count, device)
    return torch.zeros((count, *size), dtype=torch.bool, device=device)


def _geometry(item: Mapping, argument: str, index: int, box_format: str
              ) -> tuple[Tensor | RowBands | None, Tensor | None, int | None]:
    """The item's masks and xyxy boxes (``None`` where absent or empty-masks) and its instance count (``None``: no
    count known from them)."""
    masks = _masks(item["masks"], _where(argument, index, "masks")) if "masks" in item else None
    boxes = read_boxes(item["boxes"], _where(argument, index, "boxes"), box_format) if "boxes" in item else None
    count = masks.shape[0] if masks is not None else None
    if boxes is not None:
        if count is not None and boxes.shape[0] != count:
            raise input_error(_where(argument, index, "boxes"), f"have shape ({count}, 4) (one box per mask)",
                              f"shape {tuple(boxes.shape)}")
        count = boxes.shape[0]
    return masks, boxes, count


def _one_image(pred: Mapping, gt: Mapping, index: int, box_format: str) -> ImageInstances:
    det_masks, det_boxes, num_dets = _geometry(pred, "preds", index, box_format)
    gt_masks, gt_boxes, num_gts = _geometry(gt, "target", index, box_format)
    if det_masks is not None and gt_masks is not None and det_masks.shape[1:] != gt_masks.shape[1:]:
        raise input_error(_where("preds", index, "masks"), f"have the same image size (H, W) as "
                          f"`{_where('target', index, 'masks')}` {tuple(gt_masks.shape[1:])}",
                          tuple(det_masks.shape[1:]))
    reference = gt_masks if gt_masks is not None else det_masks
    size = tuple(reference.shape[1:]) if reference is not None else ((1, 1) if "masks" in gt else (0, 0))
    first = next((t for t in (gt_masks, gt_boxes, det_masks, det_boxes) if t is not None), None)
    device = first.device if first is not None else check_tensor(_where("target", index, "labels"),
                                                                  gt["labels"]).device
    num_dets = num_dets if num_dets is not None else check_tensor(_where("preds", index, "labels"),
                                                                  pred["labels"]).reshape(-1).shape[0]
    num_gts = num_gts if num_gts is not None else check_tensor(_where("target", index, "labels"),
                                                               gt["labels"]).reshape(-1).shape[0]
    if det_masks is None:
        det_masks = _no_masks(num_dets, size, device)
    if gt_masks is None:
        gt_masks = _no_masks(num_gts, size, device)
    det = {key: _vector(pred[key], "preds", index, key, num_dets, kind)
           for key, kind in (("scores", "float"), ("labels", "int"), ("area", "float")) if key in pred}
    tgt = {key: _vector(gt[key], "target", index, key, num_gts, kind)
           for key, kind in (("labels", "int"), ("iscrowd", "flag"), ("ignore", "flag"), ("area", "float"))
           if key in gt}
    lists = {key: _id_list(gt[key], _where("target", index, key), device)
             for key in ("neg_category_ids", "not_exhaustive_category_ids") if key in gt}
    tensors = (det_masks, gt_masks, det_boxes, gt_boxes, *det.values(), *tgt.values(), *lists.values())
    if any(tensor is not None and tensor.device != device for tensor in tensors):  # names made only for an error
        named = [(det_masks, "preds", "masks"), (gt_masks, "target", "masks"),
                 *((tensor, side, "boxes") for tensor, side in ((det_boxes, "preds"), (gt_boxes, "target"))
                   if tensor is not None),
                 *((tensor, "preds", key) for key, tensor in det.items()),
                 *((tensor, "target", key) for key, tensor in (*tgt.items(), *lists.items()))]
        reference_name = _where("target", index, "masks" if "masks" in gt else "boxes")
        for tensor, side, key in named:
            check_device(_where(side, index, key), tensor, reference_name, device)  # type: ignore[arg-type]
    no_flags = torch.zeros(num_gts, dtype=torch.bool, device=device)
    det_bands, gt_bands = (masks if isinstance(masks, RowBands) else None for masks in (det_masks, gt_masks))
    if isinstance(det_masks, RowBands):
        det_masks = placeholder(det_masks)
    if isinstance(gt_masks, RowBands):
        gt_masks = placeholder(gt_masks)
    return ImageInstances(
        det_masks, det["scores"], det["labels"], det.get("area"), gt_masks, tgt["labels"],
        tgt.get("iscrowd", no_flags), tgt.get("ignore", no_flags), tgt.get("area"),
        _image_id(gt["image_id"], _where("target", index, "image_id"), device) if "image_id" in gt else None,
        lists.get("neg_category_ids"), lists.get("not_exhaustive_category_ids"), det_boxes, gt_boxes, det_bands,
        gt_bands,
    )


def _check_values(image: ImageInstances, pred: Mapping, gt: Mapping, index: int) -> None:
    """The checks that read values (a device sync): finite scores and boxes, 0/1 masks and flags, labels in range."""
    if not bool(torch.isfinite(image.det_scores).all()):
        raise input_error(_where("preds", index, "scores"), "be finite", "NaN or inf")
    for boxes, name in ((image.det_boxes, _where("preds", index, "boxes")),
                        (image.gt_boxes, _where("target", index, "boxes"))):
        if boxes is not None and not bool(torch.isfinite(boxes).all()):
            raise input_error(name, "be finite", "NaN or inf")
    areas = ((image.det_area, _where("preds", index, "area")), (image.gt_area, _where("target", index, "area")))
    for area, name in areas:
        if area is not None and bool(torch.isnan(area).any()):
            raise input_error(name, "not hold NaN", "NaN")
    for argument, item in (("preds", pred), ("target", gt)):
        masks = item.get("masks")
        if isinstance(masks, Tensor) and masks.dtype != torch.bool and bool(((masks != 0) & (masks != 1)).any()):
            raise input_error(_where(argument, index, "masks"), "hold 0 or 1 only (binarise first, e.g. "
                              "`probabilities > 0.5`)", "other values")
    for key in ("iscrowd", "ignore"):
        if key in gt and bool(((gt[key] != 0) & (gt[key] != 1)).any()):
            raise input_error(_where("target", index, key), "hold 0 or 1 only", "other values")
    for labels, name in ((image.det_labels, _where("preds", index, "labels")),
                         (image.gt_labels, _where("target", index, "labels"))):
        if labels.numel() and bool(((labels < -LABEL_LIMIT) | (labels >= LABEL_LIMIT)).any()):
            raise input_error(name, "lie in [-2**32, 2**32)", f"range [{int(labels.min())}, {int(labels.max())}]")


def _all_values_valid(images: list[ImageInstances], preds: Sequence[Mapping[str, Tensor]],
                      target: Sequence[Mapping[str, Tensor]]) -> bool:
    """Every check of :func:`_check_values` passes for every image: the same tests on the update's tensors
    concatenated (a few reductions instead of a dozen per image); where one fails, the per-image checks name it."""
    if not images:
        return True
    tests = [torch.isfinite(torch.cat([image.det_scores for image in images])).all()]
    boxes = [b for image in images for b in (image.det_boxes, image.gt_boxes) if b is not None]  # both sides at once
    if boxes:
        tests.append(torch.isfinite(torch.cat(boxes)).all())
    areas = [a for image in images for a in (image.det_area, image.gt_area) if a is not None]
    if areas:
        tests.append(~torch.isnan(torch.cat(areas)).any())
    labels = torch.cat([labels for image in images for labels in (image.det_labels, image.gt_labels)])
    if labels.numel():
        tests.append(((labels >= -LABEL_LIMIT) & (labels < LABEL_LIMIT)).all())
    for items in (preds, target):
        for item in items:  # masks given as 0/1 numbers: rare, checked one by one
            masks = item.get("masks")
            if isinstance(masks, Tensor) and masks.dtype != torch.bool:
                tests.append(((masks == 0) | (masks == 1)).all())
    for key in ("iscrowd", "ignore"):
        flags = [gt[key] for gt in target if key in gt and gt[key].dtype != torch.bool and gt[key].numel()]
        if flags:  # 1-D integers (checked); an int64 copy keeps every value other than 0 and 1 so
            joined = torch.cat(flags).to(torch.int64)
            tests.append(((joined == 0) | (joined == 1)).all())
    return bool(torch.stack(tests).all())


def prepare_instances(preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]],
                      validate_args: bool = True, iou_types: Sequence[str] = ("segm",),
                      box_format: str = "xyxy") -> list[ImageInstances]:
    """Validate one ``update``'s lists and return one :class:`ImageInstances` per image.

    Args:
        preds: a list of dicts ``{"masks" | "boxes", "scores", "labels"[, "area"]}`` (module notes).
        target: a list of dicts ``{"masks" | "boxes", "labels"[, "iscrowd", "area", "ignore", "image_id", ...]}``.
        validate_args: also run the checks that read values (a device sync).
        iou_types: the IoU types to be computed (``"bbox"``, ``"segm"``, ``"boundary"``): they decide which of
            ``masks`` and ``boxes`` every dict must hold.
        box_format: ``"xyxy"``, ``"xywh"`` or ``"cxcywh"``: how ``boxes`` are read.

    Returns:
        The images, in order.

    Examples:
        >>> masks = torch.zeros(2, 4, 6, dtype=torch.bool)
        >>> images = prepare_instances([{"masks": masks, "scores": torch.rand(2), "labels": torch.tensor([1, 2])}],
        ...                            [{"masks": masks[:1], "labels": torch.tensor([1])}])
        >>> images[0].size, images[0].gt_crowd.tolist()
        ((4, 6), [False])
        >>> boxes = prepare_instances([{"boxes": torch.tensor([[1.0, 2.0, 3.0, 4.0]]), "scores": torch.ones(1),
        ...                             "labels": torch.tensor([1])}], [{"boxes": torch.tensor([]),
        ...                             "labels": torch.tensor([])}], iou_types=("bbox",), box_format="xywh")
        >>> boxes[0].det_boxes.tolist(), boxes[0].gt_boxes.shape
        ([[1.0, 2.0, 4.0, 6.0]], torch.Size([0, 4]))
    """
    for iou_type in iou_types:
        if iou_type not in KEY_OF_TYPE:
            raise ValueError(f"`iou_type` must be one of {tuple(KEY_OF_TYPE)} or a tuple of them, got {iou_type!r}")
    if box_format not in BOX_FORMATS:
        raise ValueError(f"`box_format` must be one of {BOX_FORMATS}, got {box_format!r}")
    check_structure(preds, target, needed_keys(iou_types))
    images = []
    for index, (pred, gt) in enumerate(zip(preds, target)):
        _check_unknown(pred, "preds", index, _PRED_KEYS)
        _check_unknown(gt, "target", index, _TARGET_KEYS)
        images.append(_one_image(pred, gt, index, box_format))
    if validate_args and not _all_values_valid(images, preds, target):
        for index, (image, pred, gt) in enumerate(zip(images, preds, target)):  # the first failure, named
            _check_values(image, pred, gt, index)
    with_ids = [image.image_id is not None for image in images]
    if any(with_ids) and not all(with_ids):
        raise input_error('target[i]["image_id"]', "be given for every image or for none",
                          f"none for images {[i for i, has in enumerate(with_ids) if not has]}")
    return images
