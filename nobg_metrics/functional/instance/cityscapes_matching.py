"""Per-prediction statistics of the Cityscapes instance evaluation for one group of equal-size images.

What boundary-iou-api's ``evalInstanceLevelSemanticLabeling.py`` does image by image and prediction by prediction
(``assignGt2Preds``, then the loops of ``evaluateMatches``), here for all images of one size at once:

1. **Segments**: every distinct value of each gt map (``instances2dict``); class ``v // 1000`` (``v < 1000``: the
   value itself, a *group* region for an evaluated class); ``pixels = |gt == v|``; in boundary mode the size of its
   band ``mask_to_boundary(gt == v, ratio)`` (:func:`~nobg_metrics.ops.segment_bands.segment_interiors`).
2. **Pairs** (prediction, segment of its image): ``|mask ∩ segment|`` and ``|band(mask) ∩ band(segment)|``, from
   the list of predicted pixels (one count per pixel, never a mask per pair). A pair is *recorded* when the
   classes agree, the mask intersection is > 0 and, in boundary mode, the band intersection is > 0
   (``if (intersection > 0 and boundary_intersection > 0)``).
3. **Per overlap threshold** ``t`` of ``np.arange(0.5, 1., 0.05)``: a recorded pair matches when
   ``overlap > t`` (strict), ``overlap = inter / (gt + pred - inter)``, or its min with the band IoU
   (``overlap = min(overlap, overlap_boundary)``). A gt (``v >= 1000``, ``pixels >= minRegionSize``) with matches
   gives one *true* entry at the best score and one *false* entry per other match ("the prediction with the lower
   score is automatically a false positive"); the best is credited to the first prediction holding that score — the
   entries, hence the AP, are the same whichever one carries it. A prediction matching no segment at all (groups and
   small gts included) is a false entry unless ``(void + Σ group ∩ + Σ small ∩) / pixels > t`` over its recorded
   pairs (``proportionIgnore <= overlapTh``; a small group counts twice, as there). Void: pixels whose raw gt value
   is an ``ignoreInEval`` label id.

Host reads (the shapes below are data): the number of distinct gt values, the most segments of one image, the number
of non-zero packed mask words and of predicted pixels — four per group of equal-size images off the CPU (plus the
value checks of ``validate_args``); everything after them is fixed-shape.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.functional.instance.cityscapes_inputs import SizeGroup, raise_bad_value
from nobg_metrics.functional.instance.cityscapes_labels import (
    EVAL_LABEL_IDS,
    GROUP_LIMIT,
    HIGHEST_LABEL_ID,
    LOWEST_LABEL_ID,
    eval_class_index,
    is_void_value,
    label_ids,
)
from nobg_metrics.ops.morphology import pack_bits, square_window_packed
from nobg_metrics.ops.segment_bands import segment_interiors

OVERLAPS: tuple[float, ...] = tuple(0.5 + i * ((0.5 + 0.05) - 0.5) for i in range(10))
"""``np.arange(0.5, 1., 0.05)`` value for value: numpy fills ``start + i * (start + step - start)``."""
_VALUE_SPAN = (HIGHEST_LABEL_ID + 1) * GROUP_LIMIT - LOWEST_LABEL_ID  # values -1 .. 33999 -> keys 0 .. 34000
_PACK_BYTES = 1 << 23


def _counts(index: Tensor, size: int, weights: Tensor | None = None) -> Tensor:
    """int64 ``bincount`` of ``index`` into ``size`` bins (``weights``: 0/1 flags).

    ``torch.bincount`` of the flagged indices on the CPU (the fastest there; a host read is free); ``index_add_``
    elsewhere (``bincount`` and the selection read sizes on the host).
    """
    if index.device.type == "cpu":
        return torch.bincount(index if weights is None else index[weights], minlength=size)
    ones = torch.ones_like(index) if weights is None else weights.to(torch.int64)
    return torch.zeros(size, dtype=torch.int64, device=index.device).index_add_(0, index, ones)


def _byte_bits(device: torch.device) -> Tensor:
    """:math:`(256, 8)` bool: bit ``b`` of each byte value."""
    return ((torch.arange(256, device=device).view(-1, 1) >> torch.arange(8, device=device)) & 1).bool()


def _pixel_list(packed: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(mask, row, column)`` of every set pixel of packed masks: their non-zero words, then those words' set bits
    through a 256-entry byte table (the masks are read at 1 bit per pixel; their bytes are never scanned again)."""
    mask, row, word = (packed != 0).nonzero(as_tuple=True)  # host read: the non-zero words
    octets = packed[mask, row, word].view(torch.uint8).view(-1, 8)  # little-endian: byte j holds pixels 8j .. 8j+7
    bits = _byte_bits(packed.device)[octets.long()].view(-1, 64)
    which, bit = bits.nonzero(as_tuple=True)  # host read: the pixels
    return mask[which], row[which], word[which] * 64 + bit


def group_statistics(group: SizeGroup, boundary: bool, radius: int, min_region_size: int) -> dict[str, Tensor]:
    """Sufficient statistics of one size group (module doc).

    Returns:
        ``detection_scores`` :math:`(P,)` float64, ``detection_classes`` :math:`(P,)` int64 (evaluated class 0..7,
        ``-1`` for a dropped prediction), ``detection_true`` / ``detection_false`` :math:`(P, T)` int64 entries per
        threshold, ``gt_instance_count`` / ``prediction_count`` :math:`(C,)` int64 per class.
    """
    gts, masks, image_of = group.gts, group.masks, group.image_of
    device, (images, height, width), count = gts.device, gts.shape, image_of.numel()
    num_classes, thresholds = len(EVAL_LABEL_IDS), torch.tensor(OVERLAPS, dtype=torch.float64, device=gts.device)

    # segments: the distinct (image, value) keys, ranked through a table over the bounded key range (no sort)
    key_type = torch.int32 if images * _VALUE_SPAN < 2**31 else torch.int64
    offsets = _VALUE_SPAN * torch.arange(images, device=device, dtype=key_type).view(-1, 1, 1) - LOWEST_LABEL_ID
    pixel_keys = (gts.to(key_type) + offsets).view(-1)
    key_pixels = _counts(pixel_keys, images * _VALUE_SPAN)
    if group.validate:  # values 34 .. 999: a label id that does not exist (keys 35 .. 1000 of each image)
        unknown = key_pixels.view(images, _VALUE_SPAN)[:, HIGHEST_LABEL_ID + 2:GROUP_LIMIT + 1] > 0
        if bool(unknown.any()):
            image, position = (int(v) for v in unknown.nonzero()[0])
            raise_bad_value(group.names[image], position + HIGHEST_LABEL_ID + 1)
    present = key_pixels > 0
    rank = torch.cumsum(present, 0) - 1
    keys = present.nonzero().flatten()  # host read: the number of segments
    num_segments = keys.numel()
    value = keys % _VALUE_SPAN + LOWEST_LABEL_ID
    seg_class = eval_class_index(label_ids(value))
    seg_pixels = key_pixels[keys]  # pixelCount = (imgNp == instID).sum()
    seg_group, seg_small = value < GROUP_LIMIT, seg_pixels < min_region_size
    seg_is_gt = (seg_class >= 0) & ~seg_group & ~seg_small  # gt["instID"] >= 1000 and pixelCount >= minRegionSize
    per_image = _counts(torch.div(keys, _VALUE_SPAN, rounding_mode="floor"), images)
    start = torch.cumsum(per_image, 0) - per_image
    columns = int(per_image.max())  # host read: the widest image's segments, the pair table's width

    # every predicted pixel once, with the segment under it: the pair table's counts
    pred_class = eval_class_index(group.labels)
    words = -(-width // 64)
    # packed in blocks of <= 8 MB of mask bytes (the multiply's temporary stays in cache: ~2x faster on a CPU),
    # image by image (never one byte copy of the whole group)
    block = max(1, _PACK_BYTES // (height * width))
    pieces = [piece for image_masks in masks if image_masks.shape[0] for piece in image_masks.split(block)]
    packed = pack_bits(pieces) if pieces else torch.zeros((0, height, words), dtype=torch.int64, device=device)
    pred_index, row, column_of = _pixel_list(packed)
    pixel_image = image_of[pred_index]
    pixel_at = (pixel_image * height + row) * width + column_of
    segment = rank[pixel_keys[pixel_at]]
    code = pred_index * columns + (segment - start[pixel_image])
    pair_pixels = _counts(code, count * columns).view(count, columns)
    pred_pixels = pair_pixels.sum(1)  # the segments cover the image
    if boundary:
        outside = ~segment_interiors(gts, radius).view(-1)  # each pixel in its own segment's band
        seg_band = _counts(pixel_keys, images * _VALUE_SPAN, weights=outside)[keys]
        eroded, _ = square_window_packed(packed, width, radius, True)  # pixel (y, x): bit x % 64 of word x // 64
        eroded_words = eroded[pred_index, row, torch.div(column_of, 64, rounding_mode="floor")]
        in_band = ((eroded_words >> (column_of % 64)) & 1) == 0  # boundary = mask - erode(mask)
        pred_band = _counts(pred_index, count, weights=in_band)
        pair_band = _counts(code, count * columns, weights=in_band & outside[pixel_at]).view(count, columns)

    column = torch.arange(columns, device=device)
    pair_segment = (start[image_of].view(-1, 1) + column).clamp(max=max(num_segments - 1, 0))  # (P, columns)
    exists = column < per_image[image_of].view(-1, 1)
    kept = (pred_class >= 0) & (pred_pixels > 0)  # evaluated label, non-empty mask ("skip if actually empty")
    recorded = exists & kept.view(-1, 1) & (seg_class[pair_segment] == pred_class.view(-1, 1)) & (pair_pixels > 0)
    # overlap = float(intersection) / (gt["pixelCount"] + pred["pixelCount"] - intersection)
    overlap = pair_pixels.double() / (seg_pixels[pair_segment] + pred_pixels.view(-1, 1) - pair_pixels).clamp(min=1)
    if boundary:
        recorded &= pair_band > 0
        band_union = (seg_band[pair_segment] + pred_band.view(-1, 1) - pair_band).clamp(min=1)
        overlap = torch.minimum(overlap, pair_band.double() / band_union)
    matched = recorded.unsqueeze(-1) & (overlap.unsqueeze(-1) > thresholds)  # (P, columns, T)

    # gt side: per (gt, threshold) the best score among its matches is the true entry, the others false entries
    counted = matched & seg_is_gt[pair_segment].unsqueeze(-1)
    scores = group.scores.view(-1, 1, 1).expand_as(counted)
    target = pair_segment.unsqueeze(-1).expand_as(counted).reshape(-1, thresholds.numel())
    best = torch.full((num_segments, thresholds.numel()), -torch.inf, dtype=torch.float64, device=device)
    best = best.scatter_reduce(0, target, torch.where(counted, scores, -torch.inf).reshape(target.shape), "amax")
    tied = counted & (scores == best.gather(0, target).view(counted.shape))
    order = torch.arange(count, device=device).view(-1, 1, 1).expand_as(counted)
    first = torch.full_like(best, count, dtype=torch.int64).scatter_reduce(
        0, target, torch.where(tied, order, count).reshape(target.shape), "amin")
    credited = tied & (order == first.gather(0, target).view(counted.shape))
    true_entries = credited.sum(1)
    false_entries = (counted & ~credited).sum(1)

    # prediction side: no match with any segment -> a false entry unless mostly on void, groups or small gts
    void = (pair_pixels * (exists & is_void_value(value)[pair_segment])).sum(1)
    ignored = void + (pair_pixels * (recorded & seg_group[pair_segment])).sum(1) \
        + (pair_pixels * (recorded & seg_small[pair_segment])).sum(1)
    proportion = ignored.double() / pred_pixels.clamp(min=1)  # float(nbIgnorePixels) / pred["pixelCount"]
    unmatched = kept.view(-1, 1) & ~matched.any(1) & (proportion.view(-1, 1) <= thresholds)
    class_slot = seg_class.clamp(min=0)
    return {
        "detection_scores": group.scores,
        "detection_classes": torch.where(kept, pred_class, -1),
        "detection_true": true_entries,
        "detection_false": false_entries + unmatched,
        "gt_instance_count": _counts(class_slot, num_classes, weights=seg_is_gt),
        "prediction_count": _counts(pred_class.clamp(min=0), num_classes, weights=kept),
    }
