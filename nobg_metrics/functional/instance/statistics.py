"""One update of instance AP: images in, per-detection and per-gt sufficient statistics out (no pixels kept).

For each image, on the images' device: the IoU matrix of its detections against its gts
(:mod:`~nobg_metrics.functional.instance.iou` on a device; on CPU, where reading sizes back is free, from the
masks' row bands, :mod:`~nobg_metrics.functional.instance.crops`; ``iou_type="bbox"``: the box IoU of all images
at once, :mod:`~nobg_metrics.functional.instance.boxes`), then COCO's matching for every threshold and area
range (:mod:`~nobg_metrics.functional.instance.matching`). What is kept:

- per detection: ``det_scores`` (float64), ``det_labels``, ``det_keys`` :math:`(N, 4)` int64 = (image key, DDP
  rank, rank in the image by score, rank in its (image, category) group by score) and ``det_outcomes``
  :math:`(N, A, T)` int8 (true positive / false positive / ignored / absent, per area range and threshold);
  ``det_outcomes_micro`` the same with all categories merged (``average="micro"``);
- per gt: ``gt_labels`` and ``gt_counted`` :math:`(M, A)` bool (a non-ignored gt of that area range: the ``npig``
  of ``accumulate``);
- per image: ``image_keys`` :math:`(B, 2)` int64 = (image key, DDP rank).

The image key is ``image_id`` when the targets give one, else the image's arrival index on its rank (the
images counted before the update plus its position). Protocol rules (REFERENCES: boundary-iou-api
``lvis_instance_api``): LVIS drops gts and detections of area ``<= 0``, keeps a detection of an image that has
``neg_category_ids`` only when its category is among the image's gt categories or those ids, and ignores an
unmatched detection of a ``not_exhaustive_category_ids`` category.
"""

from __future__ import annotations

import functools
from collections import defaultdict

import torch
from torch import Tensor

from nobg_metrics.functional.instance.boxes import BoxPairs, box_areas, box_ious, gt_box_areas, padded
from nobg_metrics.functional.instance.crops import crop_counts
from nobg_metrics.functional.instance.inputs import LABEL_LIMIT, ImageInstances
from nobg_metrics.functional.instance.iou import (
    Bands,
    Reach,
    image_ious,
    instance_boundaries,
    ious_from_counts,
    mask_counts,
)
from nobg_metrics.functional.instance.matching import (
    ABSENT,
    descending_key,
    match_detections,
    segment_ranks,
    stable_order,
)
from nobg_metrics.functional.instance.options import AREA_RANGES, InstanceOptions
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.row_bands import RowBands

_KEY_SHIFT = 2 * LABEL_LIMIT  # group key = image * 2**33 + label + 2**32: labels in [-2**32, 2**32)


@functools.lru_cache(maxsize=32)
def constant(values: tuple, device: torch.device) -> Tensor:
    """A float64 tensor of ``values`` on ``device``, made once (a host-to-device copy per update would be a
    transfer on every call)."""
    return torch.tensor(values, dtype=torch.float64).to(device)


def _cat(tensors: list[Tensor], dtype: torch.dtype, device: torch.device) -> Tensor:
    if not tensors:
        return torch.zeros(0, dtype=dtype, device=device)
    if all(t.dtype == tensors[0].dtype for t in tensors):  # one conversion after the cat (exact either way)
        return torch.cat(tensors).to(dtype)
    return torch.cat([t.to(dtype) for t in tensors])


def _positions(counts: list[int], device: torch.device, data_sized: bool) -> tuple[Tensor, Tensor]:
    """:math:`(N,)` int64 the image of each instance and its index in the image, for ``counts`` per image: one
    ``repeat_interleave`` where the counts may be copied to the device (CPU), else one small tensor per image."""
    if not data_sized:
        return (_cat([torch.full((n,), i, device=device) for i, n in enumerate(counts)], torch.int64, device),
                _cat([torch.arange(n, device=device) for n in counts], torch.int64, device))
    sizes = torch.tensor(counts, dtype=torch.int64, device=device)
    total = sum(counts)
    image = torch.repeat_interleave(torch.arange(len(counts), device=device), sizes, output_size=total)
    starts = sizes.cumsum(0) - sizes
    return image, torch.arange(total, device=device) - starts[image]


def _outside(area: Tensor, lvis: bool) -> Tensor:
    """:math:`(A, N)` bool: ``area`` outside each area range (COCO: ``[lo, hi]``; LVIS: ``[lo, hi)``)."""
    bounds = constant(AREA_RANGES, area.device)
    low, high = bounds[:, :1], bounds[:, 1:]
    above = area[None] >= high if lvis else area[None] > high
    return (area[None] < low) | above


def _given(bands: RowBands | None, masks: Tensor) -> Tensor | RowBands:
    return bands if bands is not None else masks


def _pixels_and_ious(images: list[ImageInstances], options: InstanceOptions, engine: host_reads.Engine,
                     all_pairs: bool = False) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
    """Per image: detection and gt pixel counts, and the IoU matrix (boundaries eroded per image size); the
    ``"data_sized"`` engine counts from the row bands of the masks' crops (the CPU path), there only the pairs of
    one category unless ``all_pairs`` (or the micro average) asks for every pair."""
    by_size: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, image in enumerate(images):
        by_size[image.size].append(index)
    det_pixels: list[Tensor] = [torch.empty(0)] * len(images)
    gt_pixels, ious = list(det_pixels), list(det_pixels)
    for members in by_size.values():  # one group per image size: the erosion runs on all its masks at once
        if host_reads.resolve_engine(engine, images[members[0]].gt_masks) == "data_sized":  # docs: the CPU path
            counts = crop_counts([_given(images[i].det_bands, images[i].det_masks) for i in members],
                                 [_given(images[i].gt_bands, images[i].gt_masks) for i in members],
                                 [images[i].det_labels for i in members], [images[i].gt_labels for i in members],
                                 all_pairs or options.average == "micro",
                                 options.dilation_ratio if options.iou_type == "boundary" else None,
                                 None if all_pairs else Reach(min(options.match_thresholds, default=0.0),
                                                              [images[i].gt_crowd for i in members]))
            for i, count in zip(members, counts):
                det_pixels[i], gt_pixels[i] = count["det_area"], count["gt_area"]
                ious[i] = ious_from_counts(count["inter"], count["det_area"], count["gt_area"], images[i].gt_crowd,
                                           count.get("band_inter"), count.get("det_band"), count.get("gt_band"))
            continue
        dense = {i: (images[i].dense_det_masks(), images[i].dense_gt_masks()) for i in members}
        flat_det = [dense[i][0].flatten(1) for i in members]
        flat_gt = [dense[i][1].flatten(1) for i in members]
        bands: list[tuple[Bands, Bands] | None] = [None] * len(members)
        if options.iou_type == "boundary":
            stack = torch.cat([m for i in members for m in dense[i]])
            all_bands, all_pixels = instance_boundaries(stack, options.dilation_ratio)
            start = 0
            for slot, i in enumerate(members):
                n, m = images[i].det_masks.shape[0], images[i].gt_masks.shape[0]
                det_b = Bands(all_bands.flat[start:start + n], all_bands.area[start:start + n])
                gt_b = Bands(all_bands.flat[start + n:start + n + m], all_bands.area[start + n:start + n + m])
                bands[slot] = (det_b, gt_b)
                det_pixels[i], gt_pixels[i] = all_pixels[start:start + n], all_pixels[start + n:start + n + m]
                start += n + m
        else:
            for slot, i in enumerate(members):
                det_pixels[i], gt_pixels[i] = mask_counts(flat_det[slot]), mask_counts(flat_gt[slot])
        for slot, i in enumerate(members):  # one product per image: its detections against its own gts
            pair = bands[slot]
            ious[i] = image_ious(flat_det[slot], flat_gt[slot], det_pixels[i], gt_pixels[i], images[i].gt_crowd,
                                 *(pair if pair is not None else (None, None)))
    return det_pixels, gt_pixels, ious


def _boxes(images: list[ImageInstances], side: str, device: torch.device) -> Tensor:
    """The ``det_boxes`` / ``gt_boxes`` of every image, concatenated: :math:`(N, 4)` float64 ``xyxy``."""
    boxes = [getattr(image, f"{side}_boxes", None) for image in images]
    if any(box is None for box in boxes):
        missing = [i for i, box in enumerate(boxes) if box is None]
        argument = "preds" if side == "det" else "target"
        raise ValueError(f'`{argument}[i]["boxes"]` is required with iou_type="bbox"; missing for images {missing[:5]}')
    return _cat([box for box in boxes if box is not None], torch.float64, device).reshape(-1, 4)  # each (n, 4)


def _box_areas_and_ious(images: list[ImageInstances], det_at: tuple[Tensor, Tensor], gt_at: tuple[Tensor, Tensor],
                        shape: tuple[int, int, int], device: torch.device, full: bool
                        ) -> tuple[Tensor, Tensor, Tensor | BoxPairs]:
    """``iou_type="bbox"``: detection areas :math:`(N,)`, gt areas :math:`(M,)` and the padded IoU
    :math:`(B, D, G)` of all images at once (:mod:`~nobg_metrics.functional.instance.boxes`), computed for the
    pairs the matching reads only unless ``full``."""
    count, max_det, max_gt = shape
    det_boxes, gt_boxes = _boxes(images, "det", device), _boxes(images, "gt", device)
    given = [image.gt_area for image in images]
    gt_given = None
    if any(area is not None for area in given):  # a missing area list counts as "not given" (0) for its image
        gt_given = _cat([area if area is not None else torch.zeros(image.gt_labels.shape[0], device=device)
                         for area, image in zip(given, images)], torch.float64, device)
    crowd = _cat([image.gt_crowd for image in images], torch.bool, device)
    pairs = BoxPairs(padded(det_boxes, *det_at, count, max_det), padded(gt_boxes, *gt_at, count, max_gt),
                     padded(crowd, *gt_at, count, max_gt, fill=False), box_ious)
    return box_areas(det_boxes), gt_box_areas(gt_boxes, gt_given), pairs.full() if full else pairs


def _member_of(values: Tensor, allowed: Tensor | None, where: Tensor | None = None) -> Tensor:
    """:math:`(N,)` bool: ``values[i]`` is among ``allowed`` (only the entries ``where`` is True; none for ``None``)."""
    if allowed is None or allowed.numel() == 0 or values.numel() == 0:
        return torch.zeros(values.shape, dtype=torch.bool, device=values.device)
    equal = values[:, None] == allowed[None, :].to(values.device)
    return (equal & where[None, :] if where is not None else equal).any(dim=1)


def _ranks(image: Tensor, local: Tensor, scores: Tensor, labels: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Rank of each detection in its image and in its (image, category) group, by score (ties: input order), and
    the permutations sorting by (image, rank) and by (group, rank).

    numpy's ``argsort(-score, kind="mergesort")`` (:func:`~nobg_metrics.functional.instance.matching.descending_key`:
    ``-0.0`` and ``0.0`` tie). ``image`` is non-decreasing and ``local`` each detection's index in its image, so
    the detections sorted by (image, score) hold image ``i``'s ranks at image ``i``'s own positions.
    """
    order = stable_order(image, descending_key(scores))
    image_rank = torch.empty_like(order)
    image_rank[order] = local
    group = image * _KEY_SHIFT + labels
    group_order = order[torch.sort(group[order], stable=True).indices]  # by group, then rank in the image
    group_rank = torch.empty_like(order)
    group_rank[group_order] = segment_ranks(group[group_order])[0]
    return image_rank, group_rank, order, group_order


def instance_update(images: list[ImageInstances], options: InstanceOptions, first_index: Tensor,
                    world_rank: int, engine: host_reads.Engine = "auto", *, with_ious: bool = False
                    ) -> dict[str, Tensor]:
    """The sufficient statistics of one batch of images (module notes).

    Args:
        images: from :func:`~nobg_metrics.functional.instance.inputs.prepare_instances`, on one device.
        options: from :func:`~nobg_metrics.functional.instance.options.make_options`.
        first_index: 0-d int64, the images counted before this batch (the arrival index of the first).
        world_rank: this process' DDP rank (0 without DDP).
        engine: ``"data_sized"`` (crops and matching rounds sized by the data: host reads), ``"fixed"`` (no host
            read) or ``"auto"`` (data-sized on CPU); the statistics are the same.
        with_ious: also return ``"ious"``, the :math:`(B, D, G)` float64 IoU of every (detection, gt) pair of each
            image, padded, categories crossed too (what TIDE's errors read: no second IoU pass).

    Returns:
        ``{state name: tensor}`` as listed in the module notes (and ``"ious"``).
    """
    device = first_index.device
    if images:
        device = images[0].gt_labels.device
    count = len(images)
    det_counts = [image.det_scores.shape[0] for image in images]
    gt_counts = [image.gt_labels.shape[0] for image in images]
    data_sized = host_reads.resolve_engine(engine, images[0].gt_labels if images else first_index) == "data_sized"
    det_image, det_local = _positions(det_counts, device, data_sized)
    gt_image, gt_local = _positions(gt_counts, device, data_sized)
    def cat(tensors: list[Tensor], dtype: torch.dtype) -> Tensor:
        return _cat(tensors, dtype, device)

    scores = cat([image.det_scores for image in images], torch.float64)
    labels = cat([image.det_labels for image in images], torch.int64)
    gt_labels = cat([image.gt_labels for image in images], torch.int64)
    max_det = max(det_counts, default=0)
    max_gt = max(gt_counts, default=0)
    if options.iou_type == "bbox":
        det_area, gt_area, iou = _box_areas_and_ious(images, (det_image, det_local), (gt_image, gt_local),
                                                     (count, max_det, max_gt), device, with_ious)
    else:
        det_pixels, gt_pixels, ious = _pixels_and_ious(images, options, engine, with_ious)
        det_area = cat([image.det_area if image.det_area is not None else det_pixels[i].double()
                        for i, image in enumerate(images)], torch.float64)
        gt_area = cat([image.gt_area if image.gt_area is not None else gt_pixels[i].double()
                       for i, image in enumerate(images)], torch.float64)
        iou = torch.zeros((count, max_det, max_gt), dtype=torch.float64, device=device)
        for index, matrix in enumerate(ious):  # padded into one tensor: the matching runs on all images at once
            iou[index, :matrix.shape[0], :matrix.shape[1]] = matrix
    crowd = cat([image.gt_crowd for image in images], torch.bool)
    flagged = cat([image.gt_ignore for image in images], torch.bool) | crowd  # boundary-iou-api: ignore OR iscrowd
    lvis = options.lvis
    gt_valid = (gt_area > 0) & (gt_area < torch.inf) if lvis else torch.ones_like(crowd)
    det_active = (det_area > 0) & (det_area < torch.inf) if lvis else torch.ones_like(scores, dtype=torch.bool)
    not_exhaustive = torch.zeros_like(det_active)
    if lvis:
        kept, listed = [], []
        start, gt_start = 0, 0
        for image, n, m in zip(images, det_counts, gt_counts):  # the images' own category lists
            own = labels[start:start + n]
            if image.neg_category_ids is not None:  # federated: the image's gt categories and its negatives
                present = _member_of(own, gt_labels[gt_start:gt_start + m], gt_valid[gt_start:gt_start + m])
                kept.append(present | _member_of(own, image.neg_category_ids))
            else:
                kept.append(torch.ones_like(own, dtype=torch.bool))
            listed.append(_member_of(own, image.not_exhaustive_category_ids))
            start, gt_start = start + n, gt_start + m
        if kept:
            det_active = det_active & torch.cat(kept)
            not_exhaustive = torch.cat(listed)
    image_rank, group_rank, image_order, group_order = _ranks(det_image, det_local, scores, labels)
    gt_ignored = flagged[None] | _outside(gt_area, lvis)
    unmatched_ignored = _outside(det_area, lvis) | not_exhaustive[None]
    thresholds = constant(options.match_thresholds, device)
    cap = max(options.max_detection_thresholds)
    exact = host_reads.resolve_engine(engine, scores) == "data_sized"
    gt_key_base = torch.where(gt_valid, gt_image * _KEY_SHIFT, torch.full_like(gt_image, -2))

    def outcomes(merged: bool) -> Tensor:
        det_key = det_image * _KEY_SHIFT + (0 if merged else labels)
        gt_key = torch.where(gt_valid, gt_key_base + (0 if merged else gt_labels), gt_key_base)
        found = match_detections(iou, det_image, det_local, det_key, image_rank if merged else group_rank,
                                 det_active, unmatched_ignored, gt_local, gt_key, crowd, gt_ignored, thresholds,
                                 cap, exact, image_order if merged else group_order)
        if not lvis:  # every detection is active
            return found
        inactive = (~det_active).to(torch.int8)[:, None, None]  # products: torch.where is slow on CPU
        return found * (1 - inactive) + inactive * ABSENT

    ids = [image.image_id for image in images if image.image_id is not None]
    image_key = torch.stack(ids) if count and len(ids) == count else first_index.to(device) + torch.arange(
        count, device=device)
    stats = {
        "det_scores": scores, "det_labels": labels,
        "det_keys": torch.stack([image_key[det_image], torch.full_like(det_image, world_rank), image_rank, group_rank],
                                dim=1),
        "gt_labels": gt_labels, "gt_counted": ~gt_ignored.T & gt_valid[:, None],
        "image_keys": torch.stack([image_key, torch.full_like(image_key, world_rank)], dim=1),
    }
    if options.needs_macro:
        stats["det_outcomes"] = outcomes(merged=False)
    if options.average == "micro":
        stats["det_outcomes_micro"] = outcomes(merged=True)
    if with_ious:
        assert isinstance(iou, Tensor)  # the full IoU where asked for
        stats["ious"] = iou
    return stats
