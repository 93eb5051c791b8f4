"""panopticapi's per-image rules on slot maps: matching, false negatives, false positives, per category.

Reference: panopticapi ``evaluation.py::pq_compute_single_core`` (Kirillov et al., "Panoptic Segmentation",
CVPR 2019) and its Boundary PQ form in boundary-iou-api ``coco_panoptic_api/evaluation.py`` (Cheng et al.,
CVPR 2021). For the pairs of one image, with ``A`` the pixel areas and ``void_p = |p ∩ gt void|``::

    union = A_p + A_g - I - void_p ;  iou = I / union                  # gt not crowd, same category
    boundary: b_union = BA_p + BA_g - BI - bvoid_p ;  iou = min(iou, BI / b_union)
    iou > 0.5  ->  tp[cat] += 1, iou_sum[cat] += iou                   # unique: the gt and the pred are matched
    unmatched non-crowd gt  ->  fn[cat] += 1 ;  crowd gts: crowd[cat] = the last one
    unmatched pred: (void_p + |p ∩ crowd[cat]|) / A_p > 0.5 ? ignored : fp[cat] += 1

Bands: every segment's boundary band (``mask_to_boundary``) comes from one pass over the slot map
(:func:`~nobg_metrics.ops.label_boundary.label_boundary`); ``BI`` counts the pixels on both bands, ``bvoid_p``
the pixels of ``p``'s band on gt void. The reference paints the bands into a copy of the id map, writing the
interiors as ``BOUNDARY_ID = max category id + 1``; a segment whose id is that value then takes every
interior (and, for its own band, the interiors of the segments painted before it). ``SegmentBatch.gt_marker``
/ ``pred_marker`` name such a slot; with them the bands are painted as the reference paints them
(the ``boundary_id_collision="reference"`` policy), without them each band is the segment's own (``"exact"``).

Sums are exact: each matched IoU is a float64 in (0.5, 1], an integer multiple of :math:`2^{-53}`, kept as two
int64 limbs of 27 and 26 bits, so any split of the data over batches or ranks gives the same bits.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from nobg_metrics._panoptic_batch import SegmentBatch
from nobg_metrics.functional.panoptic.pairs import (
    PairCounts,
    count_pairs,
    lookup_counts,
)
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.label_boundary import label_boundary, label_boundary_packed

IOU_SCALE_BITS = 53
"""A matched IoU times :math:`2^{53}` is an integer (the float64 spacing on [0.5, 1) is :math:`2^{-53}`)."""
IOU_LOW_BITS = 26
"""The low limb holds bits 0..25 of that integer, the high limb the rest (at most :math:`2^{27}`)."""
STAT_NAMES = ("iou_sum_high", "iou_sum_low", "true_positives", "false_positives", "false_negatives")
"""Per-category int64 statistics of :func:`segment_statistics`, in this order."""


def stack_batches(batches: list[SegmentBatch]) -> SegmentBatch:
    """One batch of equal-size batches: slot maps concatenated (in a common dtype), tables widened with unused
    slots; marker slots kept (``-1`` for the images without)."""
    if len(batches) == 1:
        return batches[0]

    def cat_maps(maps: list[Tensor]) -> Tensor:
        dtype = functools.reduce(torch.promote_types, [m.dtype for m in maps])
        return torch.cat([m.to(dtype) for m in maps])

    def cat_tables(tables: list[Tensor], fill: int | bool) -> Tensor:
        width = max(t.shape[1] for t in tables)
        return torch.cat([_padded(t, width, fill) for t in tables])

    def cat_markers(markers: list[Tensor | None], sizes: list[int]) -> Tensor | None:
        if all(m is None for m in markers):
            return None
        device = batches[0].gt.device
        return torch.cat([torch.full((n,), -1, dtype=torch.int64, device=device) if m is None else m.to(torch.int64)
                          for m, n in zip(markers, sizes)])

    sizes = [b.gt.shape[0] for b in batches]
    return SegmentBatch(cat_maps([b.gt for b in batches]), cat_maps([b.pred for b in batches]),
                        cat_tables([b.gt_category for b in batches], -1),
                        cat_tables([b.gt_crowd for b in batches], False),
                        cat_tables([b.pred_category for b in batches], -1),
                        cat_markers([b.gt_marker for b in batches], sizes),
                        cat_markers([b.pred_marker for b in batches], sizes))


def segment_statistics(batch: SegmentBatch, num_categories: int, radius: int | None, *,
                       with_areas: bool = False, engine: host_reads.Engine = "auto", rules: str = "panopticapi",
                       modified: Tensor | None = None) -> dict[str, Tensor]:
    """Per-category sums of one batch: :data:`STAT_NAMES` -> :math:`(C,)` int64.

    Args:
        batch: the slot maps and tables.
        num_categories: ``C``; category indices are in ``[0, C)``.
        radius: band width ``d`` for Boundary PQ, ``None`` for PQ (mask IoU only).
        with_areas: also return ``gt_area`` :math:`(B, S_g)` and ``pred_area`` :math:`(B, S_p)`, the pixels of
            every slot (the command's sanity checks read them).
        engine: how the pairs are counted (:func:`~nobg_metrics.functional.panoptic.pairs.count_pairs`).
        rules: ``"panopticapi"`` (module notes) or ``"torchmetrics"``: the union also leaves out the gt's pixels
            on prediction void, and an unmatched gt mostly (> 1/2) on prediction void is no FN.
        modified: :math:`(C,)` bool, the categories scored as modified PQ scores stuff (Porzi et al., torchmetrics'
            ``ModifiedPanopticQuality``): every same-category pair adds its IoU (no 0.5 threshold), TP counts the
            category's gt segments, no FP / FN; ``None``: none.
    """
    size = batch.gt.shape[0]
    painted = radius is not None and (batch.gt_marker is not None or batch.pred_marker is not None)
    extra = 1 if painted else 0  # the painted maps' interior slot (module notes)
    gt_width, pred_width = batch.gt_category.shape[1] + extra, batch.pred_category.shape[1] + extra
    band_flags = None if radius is None else band_code(batch.gt, batch.pred, radius)
    pairs = count_pairs(batch.gt, batch.pred, band_flags, gt_width, pred_width, engine)
    image = pairs.keys // (gt_width * pred_width)
    g = pairs.keys // pred_width % gt_width
    p = pairs.keys % pred_width
    gt_slot, pred_slot = image * gt_width + g, image * pred_width + p
    counts = pairs.counts if pairs.valid is None else pairs.counts * pairs.valid[:, None]
    inter = counts.sum(dim=1)
    gt_area = _table(size * gt_width, gt_slot, inter)
    pred_area = _table(size * pred_width, pred_slot, inter)
    pred_void = _table(size * pred_width, pred_slot, inter * (g == 0))
    gt_category = _padded(batch.gt_category, gt_width, -1).reshape(-1)
    gt_crowd = _padded(batch.gt_crowd, gt_width, False).reshape(-1)
    pred_category = _padded(batch.pred_category, pred_width, -1).reshape(-1)
    category = gt_category[gt_slot]
    eligible = (category >= 0) & (category == pred_category[pred_slot]) & ~gt_crowd[gt_slot] & (inter > 0)
    # panopticapi: union = pred area + gt area - intersection - |pred ∩ gt void|
    union = pred_area[pred_slot] + gt_area[gt_slot] - inter - pred_void[pred_slot]
    gt_void = None
    if rules == "torchmetrics":  # torchmetrics: the gt's pixels on prediction void leave the union too
        gt_void = _table(size * gt_width, gt_slot, inter * (p == 0))
        union = union - gt_void[gt_slot]
    iou = inter.double() / union.double()
    if radius is not None:
        band = _band_counts(batch, pairs, counts, gt_slot, pred_slot, g, size, gt_width, pred_width, radius, engine)
        b_inter, b_gt, b_pred, b_void = band
        # boundary-iou-api: b_union = BA_p + BA_g - BI - |pred band ∩ gt void|; iou = min(iou, BI / b_union),
        # Python's min: the mask IoU unless the boundary IoU is smaller (a NaN boundary IoU never is)
        b_union = b_pred[pred_slot] + b_gt[gt_slot] - b_inter - b_void[pred_slot]
        if gt_void is not None:  # the same void rule on the bands: |gt band ∩ prediction void| leaves it
            b_union = b_union - _table(size * gt_width, gt_slot, (counts[:, 2] + counts[:, 3]) * (p == 0))[gt_slot]
        b_iou = b_inter.double() / b_union.double()
        iou = torch.where(b_iou < iou, b_iou, iou)
    loose = torch.zeros_like(eligible)
    if modified is not None:  # modified PQ's stuff: every eligible pair adds its IoU, nothing is matched
        loose = eligible & modified[category.clamp(min=0)]
    matched = eligible & (iou > 0.5) & ~loose
    gt_matched = _table(size * gt_width, gt_slot, matched.to(torch.int64)) > 0
    pred_matched = _table(size * pred_width, pred_slot, matched.to(torch.int64)) > 0
    # exact for an IoU in (0.5, 1] (module notes); a smaller one (modified PQ) is rounded to a multiple of 2^-53
    scaled = torch.where(matched | loose, iou, 0.0).mul_(2.0**IOU_SCALE_BITS).round_().to(torch.int64)
    # crowd region of each (image, category): the last crowd slot; a prediction's |p ∩ crowd of its category|
    slots = torch.arange(size * gt_width, device=gt_slot.device)
    crowd_table = torch.full((size * num_categories,), -1, dtype=torch.int64, device=gt_slot.device)
    crowd_index = torch.where(gt_crowd & (gt_category >= 0), slots // gt_width * num_categories + gt_category, -1)
    crowd_table = torch.cat([crowd_table, crowd_table.new_full((1,), -1)])  # a sink row for non-crowd slots
    crowd_table.scatter_reduce_(0, torch.where(crowd_index >= 0, crowd_index, size * num_categories), slots,
                                "amax")
    last_crowd = crowd_table[:-1]
    pair_crowd = torch.where(category >= 0, last_crowd[image * num_categories + category.clamp(min=0)], -1)
    on_crowd = (pair_crowd == gt_slot) & (category == pred_category[pred_slot]) & (category >= 0)
    pred_crowd = _table(size * pred_width, pred_slot, inter * on_crowd)
    # FP unless (|p ∩ void| + |p ∩ crowd|) / A_p > 0.5, i.e. 2 (void + crowd) > A_p in integers
    false_positive = (pred_category >= 0) & ~pred_matched & ~(2 * (pred_void + pred_crowd) > pred_area)
    false_negative = (gt_category >= 0) & ~gt_crowd & ~gt_matched
    if gt_void is not None:  # torchmetrics: a gt mostly on prediction void is no FN
        false_negative &= ~(2 * gt_void > gt_area)
    true_positive = _by_category(num_categories, category, matched.to(torch.int64))
    if modified is not None:  # modified PQ's stuff: TP counts the gt segments, no FP, no FN
        gt_segment = (gt_category >= 0) & ~gt_crowd
        true_positive = torch.where(modified, _by_category(num_categories, gt_category, gt_segment.to(torch.int64)),
                                    true_positive)
        false_positive &= ~modified[pred_category.clamp(min=0)]
        false_negative &= ~modified[gt_category.clamp(min=0)]
    areas = {}
    if with_areas:
        areas = {"gt_area": gt_area.view(size, gt_width)[:, :gt_width - extra],
                 "pred_area": pred_area.view(size, pred_width)[:, :pred_width - extra]}
    return {
        **areas,
        "iou_sum_high": _by_category(num_categories, category, scaled >> IOU_LOW_BITS),
        "iou_sum_low": _by_category(num_categories, category, scaled & ((1 << IOU_LOW_BITS) - 1)),
        "true_positives": true_positive,
        "false_positives": _by_category(num_categories, pred_category, false_positive.to(torch.int64)),
        "false_negatives": _by_category(num_categories, gt_category, false_negative.to(torch.int64)),
    }


def band_code(gt: Tensor, pred: Tensor, radius: int) -> Tensor:
    """:math:`(B, H, W)` uint8 ``2 * (on its gt segment's band) + (on its predicted segment's band)`` per pixel.

    Both maps' bands in one :func:`~nobg_metrics.ops.label_boundary.label_boundary_packed` call, unpacked by a
    256-entry table (a byte of 8 pixel bits -> 8 bytes) and added in int64 words of 8 pixels.
    """
    size, height, width = gt.shape
    common = torch.promote_types(gt.dtype, pred.dtype)
    words = label_boundary_packed(torch.cat([gt.to(common), pred.to(common)]), radius)
    spread = _spread_table(gt.device)
    octets = words.view(torch.uint8).reshape(2, -1).to(torch.int32)
    code = spread.index_select(0, octets[0]).mul_(2).add_(spread.index_select(0, octets[1]))
    return code.view(torch.uint8).view(size, height, -1)[..., :width]


@functools.lru_cache(maxsize=8)
def _spread_table(device: torch.device) -> Tensor:
    """(256,) int64: byte ``b`` -> 8 bytes, byte ``i`` holding bit ``i`` of ``b`` (little-endian, as packed)."""
    bits = (torch.arange(256).view(-1, 1) >> torch.arange(8)) & 1
    return (bits << (8 * torch.arange(8))).sum(dim=1).to(device)


def _table(length: int, index: Tensor, values: Tensor) -> Tensor:
    """``zeros(length).index_add(index, values)`` in int64."""
    return torch.zeros(length, dtype=torch.int64, device=index.device).index_add_(0, index, values.to(torch.int64))


def _padded(table: Tensor, width: int, fill: int | bool) -> Tensor:
    """``table`` (B, S) widened to (B, width) with ``fill``."""
    out = table.new_full((table.shape[0], width), fill)
    out[:, :table.shape[1]] = table
    return out


def _by_category(num_categories: int, category: Tensor, values: Tensor) -> Tensor:
    """Per-category sums of ``values`` (entries with ``category < 0`` dropped)."""
    keep = category >= 0
    return _table(num_categories, category.clamp(min=0), torch.where(keep, values, 0))


def _band_counts(batch: SegmentBatch, pairs: PairCounts, counts: Tensor, gt_slot: Tensor, pred_slot: Tensor, g: Tensor,
                 size: int, gt_width: int, pred_width: int, radius: int, engine: host_reads.Engine
                 ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(BI per pair, BA_g per gt slot, BA_p per pred slot, bvoid per pred slot)`` (module notes).

    The flags of ``counts`` are ``2 * on gt band + on pred band``. Without marker slots the band pixels of a
    pair are its pixels on both bands; with them the bands are painted as the reference paints them.
    """
    b_inter = counts[:, 3]
    b_gt = _table(size * gt_width, gt_slot, counts[:, 2] + counts[:, 3])
    b_pred = _table(size * pred_width, pred_slot, counts[:, 1] + counts[:, 3])
    b_void = _table(size * pred_width, pred_slot, (counts[:, 1] + counts[:, 3]) * (g == 0))
    if batch.gt_marker is None and batch.pred_marker is None:
        return b_inter, b_gt, b_pred, b_void
    gt_marker = _marker(batch.gt_marker, size, gt_width, batch.gt.device)
    pred_marker = _marker(batch.pred_marker, size, pred_width, batch.gt.device)
    gt_band, pred_band = label_boundary(batch.gt, radius), label_boundary(batch.pred, radius)
    gt_painted = _painted(batch.gt, gt_band, gt_marker)
    pred_painted = _painted(batch.pred, pred_band, pred_marker)
    band_pairs = count_pairs(gt_painted, pred_painted, None, gt_width, pred_width, engine)
    b_inter = lookup_counts(band_pairs, pairs.keys)
    if pairs.valid is not None:
        b_inter = b_inter * pairs.valid
    band_keys = band_pairs.keys
    band_total = band_pairs.counts[:, 0] if band_pairs.valid is None else band_pairs.counts[:, 0] * band_pairs.valid
    band_image = band_keys // (gt_width * pred_width)
    on_void = band_keys // pred_width % gt_width == 0
    b_void = _table(size * pred_width, band_image * pred_width + band_keys % pred_width, band_total * on_void)
    b_gt = _marker_band(b_gt, batch.gt, gt_band, gt_marker, gt_width, radius)
    b_pred = _marker_band(b_pred, batch.pred, pred_band, pred_marker, pred_width, radius)
    return b_inter, b_gt, b_pred, b_void


def _marker(marker: Tensor | None, size: int, width: int, device: torch.device) -> Tensor:
    """The marker slot of each image: the given slot, or the interior slot ``width - 1`` (no segment)."""
    if marker is None:
        return torch.full((size,), width - 1, dtype=torch.int64, device=device)
    return torch.where(marker >= 0, marker.to(torch.int64), width - 1)


def _painted(slots: Tensor, band: Tensor, marker: Tensor) -> Tensor:
    """The reference's painted boundary map: band pixels and void keep their slot, interiors take the marker."""
    interior = ~band & (slots > 0)
    return torch.where(interior, marker.view(-1, 1, 1), slots.to(torch.int64))


def _marker_band(areas: Tensor, slots: Tensor, band: Tensor, marker: Tensor, width: int, radius: int) -> Tensor:
    """Band areas with each marker slot's replaced by the reference's: the band of its pixels joined with the
    interiors of the slots before it (painted before it, they hold the marker id when it is read)."""
    marker_map = marker.view(-1, 1, 1)
    earlier_interior = ~band & (slots > 0) & (slots < marker_map)
    joined = torch.where(earlier_interior, marker_map, slots.to(torch.int64))
    joined_band = label_boundary(joined, radius) & (joined == marker_map)
    counts = joined_band.flatten(1).sum(dim=1)
    index = torch.arange(slots.shape[0], device=slots.device) * width + marker
    return areas.index_put((index,), counts)
