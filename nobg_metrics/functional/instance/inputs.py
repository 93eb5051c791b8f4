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

Every error names the element (``preds[3]["masks"]``), what was expected and what came. The checks that read
values (NaN scores, 0/1 flags, label range) force a device sync and run only with ``validate_args``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

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


def _where(argument: str, index: int, key: str) -> str:
    return f'{argument}[{index}]["{key}"]'


def _tensor(value: object, name: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(value).__name__}")
    return value


def _masks(value: object, name: str) -> Tensor:
    masks = _tensor(value, name)
    if masks.dtype != torch.bool:
        raise TypeError(f"`{name}` must be a bool tensor of shape (N, H, W), got dtype {masks.dtype} "
                        f"(binarise first, e.g. `probabilities > 0.5`)")
    if masks.ndim != 3:
        raise ValueError(f"`{name}` must have shape (N, H, W), got shape {tuple(masks.shape)}")
    if masks.shape[1] == 0 or masks.shape[2] == 0:
        raise ValueError(f"`{name}` images must have H >= 1 and W >= 1, got shape {tuple(masks.shape)}")
    return masks.contiguous()


def _vector(value: object, name: str, count: int, kind: str) -> Tensor:
    """A :math:`(count,)` tensor of ``kind`` ("float", "int" or "flag"), converted to float64 / int64 / bool."""
    vector = _tensor(value, name)
    if vector.ndim != 1 or vector.shape[0] != count:
        raise ValueError(f"`{name}` must have shape ({count},) (one entry per mask), got shape {tuple(vector.shape)}")
    if kind == "float":
        if vector.dtype == torch.bool or vector.is_complex():
            raise TypeError(f"`{name}` must be a float or int tensor, got {vector.dtype}")
        return vector.to(torch.float64)
    if vector.dtype.is_floating_point or vector.is_complex():
        raise TypeError(f"`{name}` must be an {'integer' if kind == 'int' else 'bool or 0/1 integer'} tensor, "
                        f"got {vector.dtype}")
    return vector.to(torch.bool if kind == "flag" else torch.int64)


def _id_list(value: object, name: str, device: torch.device) -> Tensor:
    """A per-image list of category ids: a 1-D integer tensor or a list of ints (empty: any dtype)."""
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise TypeError(f"`{name}` must be a list of int category ids or a 1-D integer tensor, got {value!r}")
        return torch.tensor(value, dtype=torch.int64).to(device)
    ids = _tensor(value, name)
    if ids.ndim != 1 or (ids.numel() and (ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.is_complex())):
        raise TypeError(f"`{name}` must be a 1-D integer tensor of category ids, got {ids.dtype} of shape "
                        f"{tuple(ids.shape)}")
    return ids.to(torch.int64)


def _image_id(value: object, name: str, device: torch.device) -> Tensor:
    if isinstance(value, int) and not isinstance(value, bool):
        return torch.full((), value, dtype=torch.int64, device=device)
    image_id = _tensor(value, name)
    if image_id.numel() != 1 or image_id.dtype.is_floating_point or image_id.dtype == torch.bool:
        raise TypeError(f"`{name}` must be an int or a one-element integer tensor, got {image_id.dtype} of shape "
                        f"{tuple(image_id.shape)}")
    return image_id.reshape(()).to(device=device, dtype=torch.int64)


def _check_keys(item: object, argument: str, index: int, required: tuple[str, ...], known: tuple[str, ...]) -> None:
    if not isinstance(item, Mapping):
        raise TypeError(f"`{argument}[{index}]` must be a dict, got {type(item).__name__}")
    for key in required:
        if key not in item:
            raise ValueError(f"`{argument}[{index}]` must have the key {key!r} (keys: {sorted(map(str, item))})")
    unknown = sorted(str(key) for key in item if key not in known and key != "boxes")
    if unknown:
        raise ValueError(f"`{argument}[{index}]` has unknown keys {unknown} (known: {list(known)})")


def _one_image(pred: Mapping, gt: Mapping, index: int) -> ImageInstances:
    det_masks = _masks(pred["masks"], _where("preds", index, "masks"))
    gt_masks = _masks(gt["masks"], _where("target", index, "masks"))
    if det_masks.shape[1:] != gt_masks.shape[1:]:
        raise ValueError(f"`preds[{index}][\"masks\"]` and `target[{index}][\"masks\"]` must have the same image size "
                         f"(H, W); got {tuple(det_masks.shape[1:])} and {tuple(gt_masks.shape[1:])}")
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
    for tensor, name in zip(tensors, ["masks", *det, *tgt, *lists]):
        if tensor.device != device:
            raise ValueError(f"all tensors of image {index} must be on one device: `target[{index}][\"masks\"]` is "
                             f"on {device}, `{name}` on {tensor.device}")
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
        raise ValueError(f"`{_where('preds', index, 'scores')}` must be finite; got NaN or inf")
    areas = ((image.det_area, _where("preds", index, "area")), (image.gt_area, _where("target", index, "area")))
    for area, name in areas:
        if area is not None and bool(torch.isnan(area).any()):
            raise ValueError(f"`{name}` must not hold NaN")
    for key in ("iscrowd", "ignore"):
        if key in gt and bool(((gt[key] != 0) & (gt[key] != 1)).any()):
            raise ValueError(f"`{_where('target', index, key)}` values must be 0 or 1")
    for labels, name in ((image.det_labels, _where("preds", index, "labels")),
                         (image.gt_labels, _where("target", index, "labels"))):
        if labels.numel() and bool(((labels < -LABEL_LIMIT) | (labels >= LABEL_LIMIT)).any()):
            raise ValueError(f"`{name}` must lie in [-2**32, 2**32), got range "
                             f"[{int(labels.min())}, {int(labels.max())}]")


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
        if not isinstance(value, Sequence) or isinstance(value, (str, bytes, Mapping)):
            raise TypeError(f"`{name}` must be a list of dicts (one per image), got {type(value).__name__}")
    if len(preds) != len(target):
        raise ValueError(f"`preds` and `target` must have the same length (one dict per image); got {len(preds)} "
                         f"and {len(target)}")
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
        raise ValueError(f"`target[i][\"image_id\"]` must be given for every image or for none; images "
                         f"{[i for i, has in enumerate(with_ids) if not has]} have none")
    return images
