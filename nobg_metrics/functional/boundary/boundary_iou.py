"""Boundary IoU (Cheng et al., "Boundary IoU: Improving Object-Centric Image Segmentation Evaluation",
CVPR 2021): the IoU of the inner boundary bands of the binarised prediction and the gt.

Reference: the boundary-iou-api's ``mask_to_boundary`` + ``boundary_iou`` (also HQ-SAM's mBIoU)::

    d = max(1, int(round(dilation_ratio * sqrt(H**2 + W**2))))         # round half to even
    boundary(m) = m - crop(erode(pad(m, 1, zeros), ones(3, 3), iterations=d))
    BIoU = |boundary(gt) & boundary(pred)| / |boundary(gt) | boundary(pred)|

The padded ``d``-fold 3x3 erosion is a :math:`(2d+1)^2` erosion with zero padding
(:mod:`nobg_metrics.ops.morphology`), computed here on bit-packed masks for the whole batch at once.
Dataset value: the mean of per-image values (mBIoU, ``reduction="mean"``) or the pooled
``sum |I| / sum |U|`` over all band pixels (``"pooled"``); ``combine="min"`` scores
``min(mask IoU, boundary IoU)`` instead (the paper's rule for Boundary AP/PQ).

Defined values (the reference divides 0/0 and returns NaN; we never do): an empty prediction against
an empty gt scores **1.0** under both policies (band union 0, mask union 0). ``empty_gt="agreement"``
additionally scores every image whose gt is all background or all foreground by the pixel agreement
``(TP + TN) / N`` of the binarised prediction (the empty-gt policy of docs/inputs.md, as the overlap metrics do);
``"reference"`` keeps the reference's value there (0 for a non-empty prediction on an empty gt; the
band IoU of the image-border ring for a full gt). ``empty_gt`` acts on per-image values only: the
pooled value is always ``sum |I| / sum |U|`` (1.0 when every band is empty).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.ops.band_width import dilation_radius
from nobg_metrics.ops.morphology import (
    count_bits,
    pack_bits,
    pack_levels_at_least,
    square_window_packed,
)

__all__ = ["boundary_iou"]

BoundaryReduction = Literal["mean", "pooled"]
BoundaryCombine = Literal["min"] | None
BOUNDARY_COUNT_NAMES = ("band_intersection", "band_union", "mask_intersection", "mask_union")
"""Order of the pooled int64 counts returned by :func:`_boundary_update`."""


def rows_along_long_side(batch: SegBatch) -> SegBatch:
    """``batch`` itself, or for tall images (``H > W``) the transposed images: the bit-packed morphology packs each
    row into ``ceil(W / 64)`` words, so a 10^6 x 1 image would take a word per pixel (and every window op a pass
    per row) where its transpose takes ``W / 64``. Square windows give the same counts on the transpose; the
    ellipse of mBA is transposed with it (``ops.ellipse.dilate_ellipses_packed(transposed=True)``).

    Examples:
        >>> batch = SegBatch(torch.rand(1, 9, 2), torch.rand(1, 9, 2) > 0.5, False)
        >>> tuple(rows_along_long_side(batch).shape)
        (1, 2, 9)
    """
    if batch.shape[-2] <= batch.shape[-1]:
        return batch
    return SegBatch(batch.pred_raw.transpose(1, 2).contiguous(), batch.gt_raw.transpose(1, 2).contiguous(),
                    batch.normalize)


def packed_pred(batch: SegBatch, threshold: float) -> Tensor:
    """``pred > threshold`` packed into bits (:func:`~nobg_metrics.ops.morphology.pack_bits` layout).

    uint8 levels without the stretch compare as integers against the first level whose float64
    ``v / 255`` exceeds the threshold — the same decision, packed straight from the bytes.

    Returns:
        :math:`(B, H, \\lceil W / 64 \\rceil)` int64.
    """
    if batch.is_uint8 and not batch.normalize:
        first_positive = next((level for level in range(256) if level / 255 > threshold), 256)
        if first_positive == 256:
            return pack_bits([torch.zeros_like(batch.gt)])
        return pack_levels_at_least(batch.pred_raw, first_positive)
    return pack_bits([batch.pred > threshold])


def boundary_stats(batch: SegBatch, threshold: float, radius: int, combine: BoundaryCombine,
                   empty_gt: EmptyGt) -> Tensor:
    """Per-image band and mask counts of one equal-size batch.

    Args:
        batch: :math:`(B, H, W)` images.
        threshold: prediction threshold (strict ``>``).
        radius: band width ``d``.
        combine: the mask counts are computed only for ``"min"`` (0 otherwise).
        empty_gt: ``|pred|`` and ``|gt|`` are computed only for ``"agreement"`` (0 otherwise).

    Returns:
        :math:`(B, 6)` int64 ``[band ∩, band ∪, mask ∩, mask ∪, |pred|, |gt|]``.
    """
    batch = rows_along_long_side(batch)  # the square window's counts do not change under transposition
    size, width = batch.shape[0], batch.shape[-1]
    packed = torch.cat([packed_pred(batch, threshold), pack_bits([batch.gt])])
    # boundary(m) = m AND NOT erode(m, d) for pred and gt at once, on packed bits.
    eroded, masks = square_window_packed(packed, width, radius, True)
    bands = eroded.bitwise_not_().bitwise_and_(masks)
    band_pred, band_gt, mask_pred, mask_gt = bands[:size], bands[size:], masks[:size], masks[size:]
    pairs, columns = [(band_pred, band_gt)], [0, 1]
    if combine == "min":
        pairs, columns = [*pairs, (mask_pred, mask_gt)], [*columns, 2, 3]
    if empty_gt == "agreement":
        columns = [*columns, 4, 5]
    # ∩ and ∪ of each pair (then the masks themselves for the agreement) in one buffer: one popcount pass
    pieces = masks.new_empty((len(columns) * size, *masks.shape[1:]))
    for index, (first, second) in enumerate(pairs):
        torch.bitwise_and(first, second, out=pieces[2 * index * size:(2 * index + 1) * size])
        torch.bitwise_or(first, second, out=pieces[(2 * index + 1) * size:(2 * index + 2) * size])
    if empty_gt == "agreement":
        pieces[-2 * size:] = masks
    counts = count_bits(pieces).reshape(len(columns), size)
    stats = torch.zeros((6, size), dtype=torch.int64, device=counts.device)
    for row, column in enumerate(columns):  # Python ints: a list index would copy it to the device (a sync)
        stats[column] = counts[row]
    return stats.T


def ratio_or_one(numerator: Tensor, denominator: Tensor) -> Tensor:
    """``numerator / denominator`` with the empty-vs-empty 0/0 defined as 1.0."""
    safe = torch.where(denominator == 0, torch.ones_like(denominator), denominator)
    return torch.where(denominator == 0, torch.ones_like(numerator), numerator / safe)


def _boundary_values(stats: Tensor, num_pixels: int, combine: BoundaryCombine, empty_gt: EmptyGt) -> Tensor:
    """Per-image values from :func:`boundary_stats` counts.

    Args:
        stats: :math:`(B, 6)` int64 counts.
        num_pixels: ``H * W``.
        combine: ``None`` (boundary IoU) or ``"min"`` (``min(mask IoU, boundary IoU)``).
        empty_gt: degenerate-gt policy.

    Returns:
        :math:`(B,)` float64.
    """
    band_inter, band_union, mask_inter, mask_union, pred_fg, gt_fg = stats.double().unbind(dim=1)
    values = ratio_or_one(band_inter, band_union)
    if combine == "min":
        values = torch.minimum(values, ratio_or_one(mask_inter, mask_union))
    if empty_gt == "agreement":
        # (TP + TN) / N: an empty gt agrees on the predicted background, a full gt on the foreground.
        agreement = torch.where(gt_fg == 0, (num_pixels - pred_fg) / num_pixels, pred_fg / num_pixels)
        values = torch.where((gt_fg == 0) | (gt_fg == num_pixels), agreement, values)
    return values


def _boundary_update(
    pred: InputMaps, gt: InputMaps, threshold: float, dilation_ratio: float, dilation_pixels: int | None,
    combine: BoundaryCombine, normalize: bool, empty_gt: EmptyGt, validate_args: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """Sufficient statistics of a batch.

    Returns:
        ``(value_sum, counts, count)``: float64 sum of per-image values, :math:`(4,)` int64 summed
        counts in :data:`BOUNDARY_COUNT_NAMES` order, int64 number of images.
    """
    def per_image(batch: SegBatch) -> dict[str, Tensor]:
        height, width = batch.shape[-2:]
        radius = dilation_radius(height, width, dilation_ratio, dilation_pixels)
        stats = boundary_stats(batch, threshold, radius, combine, empty_gt)
        return {"value": _boundary_values(stats, batch.num_pixels, combine, empty_gt), "counts": stats[:, :4]}

    batches = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
    sums, count = sum_per_image(per_image, batches)
    return sums["value"], sums["counts"], count


def _boundary_compute(
    value_sum: Tensor, counts: Tensor, count: Tensor, reduction: BoundaryReduction, combine: BoundaryCombine,
) -> Tensor:
    """The dataset value from accumulated statistics.

    Args:
        value_sum: float64 sum of per-image values.
        counts: :math:`(4,)` int64 pooled counts (:data:`BOUNDARY_COUNT_NAMES`).
        count: number of images.
        reduction: ``"mean"`` of per-image values (mBIoU) or ``"pooled"`` ``sum |I| / sum |U|``.
        combine: ``None`` or ``"min"`` (pooled: the min of the pooled mask and boundary IoUs).

    Returns:
        scalar float64.
    """
    if reduction == "mean":
        return mean_over_images(value_sum, count)
    pooled = counts.double()
    value = ratio_or_one(pooled[0], pooled[1])
    if combine == "min":
        value = torch.minimum(value, ratio_or_one(pooled[2], pooled[3]))
    return value


def _check_boundary_args(threshold: float, dilation_ratio: float, dilation_pixels: int | None, reduction: str,
                         combine: str | None, empty_gt: str) -> None:
    check_number("threshold", threshold, low=0.0, high=1.0)
    check_number("dilation_ratio", dilation_ratio, low=0.0)
    if dilation_pixels is not None:
        check_number("dilation_pixels", dilation_pixels, low=1, integer=True)
    check_option("reduction", reduction, BoundaryReduction)
    check_option("combine", combine, (None, "min"))
    check_option("empty_gt", empty_gt, EmptyGt)


def boundary_iou(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, dilation_ratio: float = 0.02, *,
    dilation_pixels: int | None = None, reduction: BoundaryReduction = "mean", combine: BoundaryCombine = None,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    r"""Boundary IoU of ``pred > threshold`` against ``gt``, mean over images (mBIoU).

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        threshold: prediction threshold (strict ``>``; uint8 is read as ``v / 255``, so HQ-SAM's
            ``pred > 128`` on 0..255 is ``threshold=128 / 255``).
        dilation_ratio: band width as a fraction of the image diagonal (0.02; Cityscapes uses 0.005).
        dilation_pixels: a fixed band width ``d >= 1`` in pixels instead of the ratio.
        reduction: ``"mean"`` of per-image values or ``"pooled"`` ``sum |I| / sum |U|``.
        combine: ``None`` or ``"min"`` for ``min(mask IoU, boundary IoU)`` per image.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts (module doc).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(1, 9, 12, dtype=torch.bool)
        >>> gt[0, 2:7, 3:9] = True
        >>> pred = torch.zeros(1, 9, 12)
        >>> pred[0, 2:7, 3:10] = 0.9
        >>> boundary_iou(pred, gt, dilation_pixels=1)  # 1-px rings of 18 and 20 pixels share 15
        tensor(0.6522, dtype=torch.float64)
    """
    _check_boundary_args(threshold, dilation_ratio, dilation_pixels, reduction, combine, empty_gt)
    value_sum, counts, count = _boundary_update(
        pred, gt, threshold, dilation_ratio, dilation_pixels, combine, normalize, empty_gt, validate_args
    )
    return _boundary_compute(value_sum, counts, count, reduction, combine)
