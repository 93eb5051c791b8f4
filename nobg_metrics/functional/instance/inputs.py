"""The instance-segmentation input contract: torchmetrics' detection dicts, one per image, validated once.

``preds[i]``: ``masks`` :math:`(N, H, W)` bool, ``scores`` :math:`(N,)` float, ``labels`` :math:`(N,)` int, and
optionally ``area`` :math:`(N,)` (the area that decides a detection's area range; default: its mask's pixel
count — pycocotools' ``loadRes`` takes it from the ``bbox`` when the results carry one, which the
``nobg-metrics instances`` command passes here).

``target[i]``: ``masks`` :math:`(M, H, W)` bool, ``labels`` :math:`(M,)` int, and optionally ``iscrowd``
:math:`(M,)` (bool or 0/1), ``area`` :math:`(M,)` (default: the mask's pixel count), ``ignore`` :math:`(M,)`
(bool or 0/1: boundary-iou-api's ``ignore`` flag, OR-ed with ``iscrowd``), ``image_id`` (an int or a 0-d int
tensor: orders score ties across images, see docs/instance_segmentation.md) and, for ``protocol="lvis"``,
``neg_category_ids`` / ``not_exhaustive_category_ids`` (1-D int tensors or lists of ints: LVIS' per-image federated
lists).

Every error names the element (``preds[3]["masks"]``), what was expected and what came, in the words of
:mod:`nobg_metrics._inputs` (whose checks it uses). The checks that read values (NaN scores, 0/1 flags, label
range) force a device sync and run only with ``validate_args``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from nobg_metrics._inputs import (
    check_device,
    check_same_length,
    check_sequence,
    check_tensor,
    input_error,
    item_name,
)

LABEL_LIMIT = 2**32
"""Labels must lie in ``[-2**32, 2**32)`` (they are packed with the image index into one int64 sort key)."""

_PRED_KEYS = ("masks", "scores", "labels", "area")
_TARGET_KEYS = ("masks", "labels", "iscrowd", "area", "ignore", "image_id", "neg_category_ids",
                "not_exhaustive_category_ids")


@dataclass
class ImageInstances:
    """One image's detections and ground truths in canonical form (all on one device).

    Attributes:
        det_masks: :math:`(N, H, W)` bool. det_scores: :math:`(N,)` float64. det_labels: :math:`(N,)` int64.
        det_area: :math:`(N,)` float64 or ``None`` (the mask's pixel count).
        gt_masks: :math:`(M, H, W)` bool. gt_labels: :math:`(M,)` int64. gt_crowd, gt_ignore: :math:`(M,)` bool.
        gt_area: :math:`(M,)` float64 or ``None``. image_id: 0-d int64 or ``None``.
        neg_category_ids, not_exhaustive_category_ids: :math:`(L,)` int64 or ``None``.
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

    @property
    def size(self) -> tuple[int, int]:
        """``(H, W)``."""
        return self.gt_masks.shape[-2], self.gt_masks.shape[-1]


_where = item_name


def _masks(value: object, name: str) -> Tensor:
    masks = check_tensor(name, value)
    if masks.dtype != torch.bool:
        raise input_error(name, "be a bool tensor of shape (N, H, W)",
                          f"dtype {masks.dtype} (binarise first, e.g. `probabilities > 0.5`)", TypeError)
    if masks.ndim != 3:
        raise input_error(name, "have shape (N, H, W)", f"shape {tuple(masks.shape)}")
    if masks.shape[1] == 0 or masks.shape[2] == 0:
        raise input_error(name, "hold images of H >= 1 and W >= 1", f"shape {tuple(masks.shape)}")
    return masks.contiguous()


def _vector(value: object, name: str, count: int, kind: str) -> Tensor:
    """A :math:`(count,)` tensor of ``kind`` ("float", "int" or "flag"), converted to float64 / int64 / bool."""
    vector = check_tensor(name, value)
    if vector.ndim != 1 or vector.shape[0] != count:
        raise input_error(name, f"have shape ({count},) (one entry per mask)", f"shape {tuple(vector.shape)}")
    if kind == "float":
        if vector.dtype == torch.bool or vector.is_complex():
            raise input_error(name, "be a float or int tensor", vector.dtype, TypeError)
        return vector.to(torch.float64)
    if vector.dtype.is_floating_point or vector.is_complex():
        expected = "an integer tensor" if kind == "int" else "a bool or 0/1 integer tensor"
        raise input_error(name, f"be {expected}", vector.dtype, TypeError)
    return vector.to(torch.bool if kind == "flag" else torch.int64)


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


def _check_keys(item: object, argument: str, index: int, required: tuple[str, ...], known: tuple[str, ...]) -> None:
    name = item_name(argument, index)
    if not isinstance(item, Mapping):
        raise input_error(name, "be a dict", type(item).__name__, TypeError)
    for key in required:
        if key not in item:
            raise input_error(name, f"have the key {key!r}", f"the keys {sorted(map(str, item))}")
    unknown = sorted(str(key) for key in item if key not in known and key != "boxes")
    if unknown:
        raise input_error(name, f"have only known keys {list(known)}", f"the unknown keys {unknown}")


def _one_image(pred: Mapping, gt: Mapping, index: int) -> ImageInstances:
    det_masks = _masks(pred["masks"], _where("preds", index, "masks"))
    gt_masks = _masks(gt["masks"], _where("target", index, "masks"))
    if det_masks.shape[1:] != gt_masks.shape[1:]:
        raise input_error(_where("preds", index, "masks"), f"have the same image size (H, W) as "
                          f"`{_where('target', index, 'masks')}` {tuple(gt_masks.shape[1:])}",
                          tuple(det_masks.shape[1:]))
    device = gt_masks.device
    num_dets, num_gts = det_masks.shape[0], gt_masks.shape[0]
    det = {key: _vector(pred[key], _where("preds", index, key), num_dets, kind)
           for key, kind in (("scores", "float"), ("labels", "int"), ("area", "float")) if key in pred}
    tgt = {key: _vector(gt[key], _where("target", index, key), num_gts, kind)
           for key, kind in (("labels", "int"), ("iscrowd", "flag"), ("ignore", "flag"), ("area", "float"))
           if key in gt}
    lists = {key: _id_list(gt[key], _where("target", index, key), gt_masks.device)
             for key in ("neg_category_ids", "not_exhaustive_category_ids") if key in gt}
    tensors = [det_masks, *det.values(), *tgt.values(), *lists.values()]
    names = [_where("preds", index, "masks"), *(_where("preds", index, key) for key in det),
             *(_where("target", index, key) for key in (*tgt, *lists))]
    for tensor, name in zip(tensors, names):
        check_device(name, tensor, _where("target", index, "masks"), device)
    no_flags = torch.zeros(num_gts, dtype=torch.bool, device=device)
    return ImageInstances(
        det_masks, det["scores"], det["labels"], det.get("area"), gt_masks, tgt["labels"],
        tgt.get("iscrowd", no_flags), tgt.get("ignore", no_flags), tgt.get("area"),
        _image_id(gt["image_id"], _where("target", index, "image_id"), device) if "image_id" in gt else None,
        lists.get("neg_category_ids"), lists.get("not_exhaustive_category_ids"),
    )


def _check_values(image: ImageInstances, pred: Mapping, gt: Mapping, index: int) -> None:
    """The checks that read values (a device sync): finite scores and areas, 0/1 flags, labels in range."""
    if not bool(torch.isfinite(image.det_scores).all()):
        raise input_error(_where("preds", index, "scores"), "be finite", "NaN or inf")
    areas = ((image.det_area, _where("preds", index, "area")), (image.gt_area, _where("target", index, "area")))
    for area, name in areas:
        if area is not None and bool(torch.isnan(area).any()):
            raise input_error(name, "not hold NaN", "NaN")
    for key in ("iscrowd", "ignore"):
        if key in gt and bool(((gt[key] != 0) & (gt[key] != 1)).any()):
            raise input_error(_where("target", index, key), "hold 0 or 1 only", "other values")
    for labels, name in ((image.det_labels, _where("preds", index, "labels")),
                         (image.gt_labels, _where("target", index, "labels"))):
        if labels.numel() and bool(((labels < -LABEL_LIMIT) | (labels >= LABEL_LIMIT)).any()):
            raise input_error(name, "lie in [-2**32, 2**32)", f"range [{int(labels.min())}, {int(labels.max())}]")


def prepare_instances(preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]],
                      validate_args: bool = True) -> list[ImageInstances]:
    """Validate one ``update``'s lists and return one :class:`ImageInstances` per image.

    Args:
        preds: a list of dicts ``{"masks", "scores", "labels"[, "area"]}`` (module notes).
        target: a list of dicts ``{"masks", "labels"[, "iscrowd", "area", "ignore", "image_id", ...]}``.
        validate_args: also run the checks that read values (a device sync).

    Returns:
        The images, in order.

    Examples:
        >>> masks = torch.zeros(2, 4, 6, dtype=torch.bool)
        >>> images = prepare_instances([{"masks": masks, "scores": torch.rand(2), "labels": torch.tensor([1, 2])}],
        ...                            [{"masks": masks[:1], "labels": torch.tensor([1])}])
        >>> images[0].size, images[0].gt_crowd.tolist()
        ((4, 6), [False])
    """
    for name, value in (("preds", preds), ("target", target)):
        check_sequence(name, value, "a list of dicts (one per image)")
    check_same_length({"preds": len(preds), "target": len(target)}, "one dict per image")
    images = []
    for index, (pred, gt) in enumerate(zip(preds, target)):
        _check_keys(pred, "preds", index, ("masks", "scores", "labels"), _PRED_KEYS)
        _check_keys(gt, "target", index, ("masks", "labels"), _TARGET_KEYS)
        image = _one_image(pred, gt, index)
        if validate_args:
            _check_values(image, pred, gt, index)
        images.append(image)
    with_ids = [image.image_id is not None for image in images]
    if any(with_ids) and not all(with_ids):
        raise input_error('target[i]["image_id"]', "be given for every image or for none",
                          f"none for images {[i for i, has in enumerate(with_ids) if not has]}")
    return images
