"""torchmetrics' COCO round trip of detection inputs: ``MeanAveragePrecision.coco_to_tm`` / ``tm_to_coco``.

:func:`coco_to_tm` reads a COCO ground-truth file and a results file into torchmetrics' input lists, as
``torchmetrics.detection.MeanAveragePrecision.coco_to_tm`` builds them from pycocotools' ``COCO`` /
``loadRes`` / ``annToMask``:

- one image per ground-truth image that has annotations, in the order of its first annotation; an image without
  detections gets empty ``scores`` / ``labels`` (and boxes / masks); detections of other images are left out;
- ``target[i]``: ``labels`` int32, ``iscrowd`` int32, ``area`` float32 (the file's), ``boxes`` float32 ``[x, y,
  w, h]`` as written (``"bbox"``), ``masks`` uint8 :math:`(M, H, W)` (``"segm"`` / ``"boundary"``);
- ``preds[i]``: ``scores`` float32, ``labels`` int32, ``boxes`` and ``masks`` likewise (shape :math:`(0,)` for an
  image without detections, as torchmetrics gives them); a result with a box and no
  segmentation has the box's rectangle as its mask (``loadRes`` draws it as a polygon).

The boxes come back in ``xywh``: read them with ``box_format="xywh"``. Masks are decoded with
:func:`~nobg_metrics.io.coco.masks.segmentation_masks` (pycocotools' reading bit for bit); the image size is the
image's ``height`` / ``width``, else the size of its first RLE.

:func:`tm_to_coco` writes what a metric recorded as ``{name}_preds.json`` (a results list) and
``{name}_target.json`` (``images``, ``annotations``, ``categories``), the layout torchmetrics writes: image ids are
the images' positions, annotation ids count from 1, an area not given (or ``<= 0``) is the mask's pixel count
(mask types) or the box's ``w * h`` (``"bbox"``), with ``area_bbox`` / ``area_segm`` both written for a tuple of
types. Unlike torchmetrics, ``categories`` lists every label seen (torchmetrics writes category 0 only).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from nobg_metrics.io.coco.masks import segmentation_masks
from nobg_metrics.io.coco.rle import encode

__all__ = ["RecordedImage", "coco_to_tm", "tm_to_coco"]


@dataclass
class RecordedImage:
    """One image's inputs as a metric recorded them: boxes float64 ``xyxy`` (or ``None``), masks bool (or ``None``).

    Attributes:
        det_labels: :math:`(N,)`. det_scores: :math:`(N,)`. det_boxes: :math:`(N, 4)`. det_masks: :math:`(N, H, W)`.
        gt_labels: :math:`(M,)`. gt_boxes: :math:`(M, 4)`. gt_masks: :math:`(M, H, W)`. gt_crowd: :math:`(M,)`.
        gt_area: :math:`(M,)` or ``None`` (not given).
    """

    det_labels: Tensor
    det_scores: Tensor
    det_boxes: Tensor | None
    det_masks: Tensor | None
    gt_labels: Tensor
    gt_boxes: Tensor | None
    gt_masks: Tensor | None
    gt_crowd: Tensor
    gt_area: Tensor | None


def _read(path: str | Path) -> object:
    with open(path) as handle:
        return json.load(handle)


def _size(image: dict, annotations: list[dict]) -> tuple[int, int]:
    if "height" in image and "width" in image:
        return int(image["height"]), int(image["width"])
    for annotation in annotations:
        segmentation = annotation.get("segmentation")
        if isinstance(segmentation, dict) and "size" in segmentation:
            return int(segmentation["size"][0]), int(segmentation["size"][1])
    raise ValueError(f"image {image.get('id')} has no `height` / `width` and no RLE to take its size from")


def _segmentation(annotation: dict) -> object:
    """The annotation's segmentation; a result with only a box: the box as a polygon (``loadRes``)."""
    if "segmentation" in annotation:
        return annotation["segmentation"]
    x, y, w, h = annotation["bbox"]
    return [[x, y, x, y + h, x + w, y + h, x + w, y]]


def _masks(annotations: list[dict], size: tuple[int, int]) -> Tensor:
    if not annotations:
        return torch.zeros(0, dtype=torch.uint8)  # torchmetrics' empty: shape (0,)
    return segmentation_masks([_segmentation(a) for a in annotations], *size).to(torch.uint8)


def _boxes(annotations: list[dict]) -> Tensor:
    if not annotations:
        return torch.zeros(0, dtype=torch.float32)  # torchmetrics' empty: shape (0,)
    return torch.tensor([a["bbox"] for a in annotations], dtype=torch.float32).reshape(-1, 4)


def coco_to_tm(coco_preds: str | Path, coco_target: str | Path, iou_types: Sequence[str]
               ) -> tuple[list[dict[str, Tensor]], list[dict[str, Tensor]]]:
    """torchmetrics' ``(preds, target)`` lists from a COCO results file and ground-truth file (module notes).

    Args:
        coco_preds: a results JSON (a list of ``{"image_id", "category_id", "score", "bbox" | "segmentation"}``).
        coco_target: a COCO ground-truth JSON (``images``, ``annotations``, ``categories``).
        iou_types: which of ``boxes`` (``"bbox"``) and ``masks`` (``"segm"``, ``"boundary"``) to read.

    Returns:
        ``(preds, target)``, one dict per annotated image.
    """
    document = _read(coco_target)
    results = _read(coco_preds)
    if not isinstance(document, dict) or not isinstance(results, list):
        raise ValueError("`coco_target` must hold a COCO dict (images, annotations) and `coco_preds` a list of results")
    with_boxes = "bbox" in iou_types
    with_masks = any(t in ("segm", "boundary") for t in iou_types)
    images = {image["id"]: image for image in document.get("images", [])}
    by_image: dict[int, list[dict]] = {}
    for annotation in document.get("annotations", []):
        by_image.setdefault(annotation["image_id"], []).append(annotation)
    detections: dict[int, list[dict]] = {}
    for result in results:
        if result["image_id"] not in images:
            raise ValueError(f"`coco_preds` has results for image {result['image_id']}, which `coco_target` lacks")
        detections.setdefault(result["image_id"], []).append(result)
    preds, target = [], []
    for image_id, gts in by_image.items():
        dets = detections.get(image_id, [])
        pred = {"scores": torch.tensor([d["score"] for d in dets], dtype=torch.float32),
                "labels": torch.tensor([d["category_id"] for d in dets], dtype=torch.int32)}
        gt = {"labels": torch.tensor([g["category_id"] for g in gts], dtype=torch.int32),
              "iscrowd": torch.tensor([g.get("iscrowd", 0) for g in gts], dtype=torch.int32),
              "area": torch.tensor([g["area"] for g in gts], dtype=torch.float32)}
        if with_boxes:
            pred["boxes"], gt["boxes"] = _boxes(dets), _boxes(gts)
        if with_masks:
            size = _size(images.get(image_id, {"id": image_id}), gts + dets)
            pred["masks"], gt["masks"] = _masks(dets, size), _masks(gts, size)
        preds.append(pred)
        target.append(gt)
    return preds, target


def _xywh(boxes: Tensor) -> list[list[float]]:
    return torch.cat([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], dim=1).tolist()


def _annotations(image_id: int, labels: Tensor, boxes: Tensor | None, masks: Tensor | None, iou_types: Sequence[str],
                 first_id: int, scores: Tensor | None = None, crowd: Tensor | None = None,
                 area: Tensor | None = None) -> list[dict]:
    rles = [encode(mask) for mask in masks] if masks is not None else None
    xywh = _xywh(boxes) if boxes is not None else None
    out = []
    for k, label in enumerate(labels.tolist()):
        box_area = xywh[k][2] * xywh[k][3] if xywh is not None else None
        mask_area = int(masks[k].sum()) if masks is not None else None
        given = float(area[k]) if area is not None else 0.0
        annotation: dict = {"id": first_id + k, "image_id": image_id,
                            "area": given if given > 0 else (mask_area if mask_area is not None else box_area),
                            "category_id": int(label), "iscrowd": int(crowd[k]) if crowd is not None else 0}
        if len(iou_types) > 1 and given <= 0:
            annotation["area_bbox"], annotation["area_segm"] = box_area, mask_area
        if xywh is not None:
            annotation["bbox"] = xywh[k]
        if rles is not None:
            annotation["segmentation"] = rles[k]
        if scores is not None:
            annotation["score"] = float(scores[k])
        out.append(annotation)
    return out


def tm_to_coco(images: Sequence[RecordedImage], name: str, iou_types: Sequence[str]) -> None:
    """Write ``{name}_preds.json`` and ``{name}_target.json`` from recorded images (module notes)."""
    target_images: list[dict] = []
    gts: list[dict] = []
    dets: list[dict] = []
    labels: set[int] = set()
    for image_id, image in enumerate(images):
        for side, boxes, masks in (("gt", image.gt_boxes, image.gt_masks), ("det", image.det_boxes, image.det_masks)):
            if boxes is None and masks is not None and masks.shape[0] == 0:
                continue  # torchmetrics leaves out an image without masks (and no boxes)
            if side == "gt":
                entry: dict = {"id": image_id}
                if masks is not None and masks.shape[0]:
                    entry["height"], entry["width"] = int(masks.shape[1]), int(masks.shape[2])
                target_images.append(entry)
                gts += _annotations(image_id, image.gt_labels, boxes, masks, iou_types, len(gts) + 1,
                                    crowd=image.gt_crowd, area=image.gt_area)
            else:
                dets += _annotations(image_id, image.det_labels, boxes, masks, iou_types, len(dets) + 1,
                                     scores=image.det_scores)
        labels.update(image.det_labels.tolist() + image.gt_labels.tolist())
    document = {"images": target_images, "annotations": gts,
                "categories": [{"id": label, "name": str(label)} for label in sorted(labels)]}
    Path(f"{name}_preds.json").write_text(json.dumps(dets, indent=4))
    Path(f"{name}_target.json").write_text(json.dumps(document, indent=4))
