"""The ``ious`` of ``extended_summary``: pycocotools' ``COCOeval.ious`` as torchmetrics returns it.

torchmetrics' ``MeanAveragePrecision(extended_summary=True)`` returns ``COCOeval.ious``: a dict keyed ``(image
index, category id)`` over every evaluated image and every category seen (its ``imgIds x catIds``), each value the
IoU matrix :math:`(D, G)` float32 of the image's detections of that category — sorted by score (a stable sort),
at most the largest max-detections threshold — against its gts of that category; ``[]`` (an empty list) where
either side is empty. The evaluated images are all images, except with only mask IoU types, where torchmetrics
leaves out an image whose target has no mask. With ``average="micro"`` every label is 0.

Per update, :func:`image_ious` keeps each image's IoU matrix (its rows already sorted and capped, with the labels of
its rows and columns); :func:`ious_by_image_and_class` cuts them by category once the categories are known. The IoU
is the one the statistics use: box IoU (:func:`~nobg_metrics.functional.instance.boxes.box_ious`), mask IoU or
``min(mask IoU, boundary IoU)`` (:func:`~nobg_metrics.functional.instance.iou.image_ious`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.functional.instance.boxes import box_ious
from nobg_metrics.functional.instance.inputs import ImageInstances
from nobg_metrics.functional.instance.iou import Bands, image_ious, instance_boundaries, mask_counts
from nobg_metrics.functional.instance.matching import stable_order
from nobg_metrics.functional.instance.options import InstanceOptions

__all__: list[str] = []  # the extended summary's helpers: used by the class and the functional


class ImageIous(NamedTuple):
    """One image's IoU matrix :math:`(D, G)` float64 (rows by score, capped) and the labels of rows and columns."""

    image: int
    det_labels: Tensor
    gt_labels: Tensor
    ious: Tensor


def _matrix(image: ImageInstances, iou_type: str, dilation_ratio: float) -> Tensor:
    if iou_type == "bbox":
        assert image.det_boxes is not None and image.gt_boxes is not None
        return box_ious(image.det_boxes[None], image.gt_boxes[None], image.gt_crowd[None])[0]
    det, gt = image.dense_det_masks(), image.dense_gt_masks()
    if iou_type == "boundary":
        bands, pixels = instance_boundaries(torch.cat([det, gt]), dilation_ratio)
        n = det.shape[0]
        det_bands, gt_bands = Bands(bands.flat[:n], bands.area[:n]), Bands(bands.flat[n:], bands.area[n:])
        return image_ious(det.flatten(1), gt.flatten(1), pixels[:n], pixels[n:], image.gt_crowd, det_bands,
                          gt_bands)
    flat_det, flat_gt = det.flatten(1), gt.flatten(1)
    return image_ious(flat_det, flat_gt, mask_counts(flat_det), mask_counts(flat_gt), image.gt_crowd)


def image_iou_matrices(images: list[ImageInstances], options: InstanceOptions, first_index: int,
                       only_mask_types: bool) -> list[ImageIous]:
    """Each evaluated image's IoU matrix (module notes); images are numbered from ``first_index``."""
    out = []
    cap = max(options.max_detection_thresholds)
    micro = options.average == "micro"
    for position, image in enumerate(images):
        if only_mask_types and image.gt_masks.shape[0] == 0:
            continue  # torchmetrics leaves such an image out of its COCO dataset
        ious = _matrix(image, options.iou_type, options.dilation_ratio)
        scores = image.det_scores
        order = stable_order(-(scores + 0.0))[:cap] if scores.numel() else torch.zeros(0, dtype=torch.int64,
                                                                                         device=scores.device)
        det_labels, gt_labels = image.det_labels[order], image.gt_labels
        if micro:
            det_labels, gt_labels = torch.zeros_like(det_labels), torch.zeros_like(gt_labels)
        out.append(ImageIous(first_index + position, det_labels, gt_labels, ious[order]))
    return out


def ious_by_image_and_class(images: list[ImageIous], classes: Tensor, micro: bool
                            ) -> dict[tuple[int, int], Tensor | list]:
    """torchmetrics' ``ious`` dict from the kept matrices and the categories seen (module notes)."""
    categories = [0] if micro else [int(c) for c in classes.tolist()]
    out: dict[tuple[int, int], Tensor | list] = {}
    for image in sorted(images, key=lambda item: item.image):
        for category in categories:
            rows, columns = image.det_labels == category, image.gt_labels == category
            if not bool(rows.any()) or not bool(columns.any()):
                out[(image.image, category)] = []
            else:
                out[(image.image, category)] = image.ious[rows][:, columns].to(torch.float32)
    return out
