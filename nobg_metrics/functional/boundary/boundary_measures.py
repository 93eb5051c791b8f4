"""The Boundary IoU paper's boundary-focused comparison measures: Trimap IoU and the (approximate) boundary
F-measure (Cheng et al., "Boundary IoU: Improving Object-Centric Image Segmentation Evaluation", CVPR 2021,
Table 1; d = 2 % of the image diagonal by the Boundary IoU width rule).

With ``d = max(1, round(dilation_ratio * sqrt(H² + W²)))`` (Python round, as Boundary IoU), distances measured
with square windows of ``(2d+1)²`` pixels (the chessboard distance of Boundary IoU's erosion) and the outside of
the image read as background (:mod:`nobg_metrics.ops.morphology`):

- **Trimap IoU's band** ``G_d = dilate(G, d) AND NOT erode(G, d)``: the pixels within ``d`` of the contour of
  ``G`` read as the crack between ``G`` and its complement — ``d`` pixels deep on each side (the outside counts
  as background, so the image border is contour). ``G_d ∩ G`` is exactly Boundary IoU's inner band::

      Trimap IoU = |G_d ∩ G ∩ P| / |G_d ∩ (G ∪ P)|                      (from the gt only: asymmetric)

- **the boundary F** matches one-pixel contours: ``G_1 = G AND NOT erode(G, 1)`` (the inner 8-neighbour
  contour, image border included) and ``G_d = dilate(G_1, d)``, the pixels within chessboard distance ``d`` of a
  contour pixel (the paper's "pixels within d of them"; a contour shifted by up to ``d`` pixels either way still
  matches — the crack band would allow ``d`` outwards but only ``d - 1`` inwards)::

      p = |P_1 ∩ G_d| / |P_1|,   r = |G_1 ∩ P_d| / |G_1|,   F = 2 p r / (p + r)

  the paper's approximate F (repeated matches allowed, no bipartite matching).

Dataset value: the mean of per-image values (Trimap IoU also ``reduction="pooled"``, ``sum |I| / sum |U|``, its
0/0 — every gt empty — scored like one image's empty band).
DAVIS's contour accuracy (a Euclidean disk around another one-pixel contour) is
:mod:`nobg_metrics.functional.video.davis`.

Defined values (never NaN). ``empty_gt="reference"`` is the formula, its 0/0s named: an empty gt has an empty
band, so Trimap IoU is 1.0 for an empty prediction and 0.0 for any other (**empty band: exact match**); an empty
contour (an empty mask: any non-empty mask has one) gives precision 1 (no predicted contour) or recall 1 (no gt
contour), and F = 0 when ``p + r = 0`` (DAVIS's conventions): F = 1 for empty vs empty, 0 when only one side is
empty. ``empty_gt="agreement"`` (default) scores every gt that is all background or all foreground by the pixel
agreement ``(TP + TN) / N`` of the binarised prediction, as every overlap metric of the library does.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.boundary.boundary_iou import (
    packed_pred,
    ratio_or_one,
    rows_along_long_side,
)
from nobg_metrics.ops.band_width import dilation_radius
from nobg_metrics.ops.levels import GT_CUT
from nobg_metrics.ops.morphology import count_bits, pack_bits, pack_levels_at_least, square_window_packed

__all__ = ["boundary_f_measure", "trimap_iou"]

TrimapReduction = Literal["mean", "pooled"]


def gt_bits(batch: SegBatch) -> Tensor:
    """The gt packed into bits: uint8 ``> 128`` straight from the bytes (SWAR, no comparison pass), else its mask."""
    if batch.gt_raw.dtype == torch.uint8 and batch._gt is None:
        return pack_levels_at_least(batch.gt_raw, GT_CUT + 1)
    return pack_bits([batch.gt])


def _window(packed: Tensor, width: int, radius: int, use_and: bool) -> Tensor:
    """Square erosion / dilation of packed masks, cut back to the input's words (zero padding both ways)."""
    return square_window_packed(packed, width, radius, use_and)[0][..., :packed.shape[-1]]


def band(packed: Tensor, width: int, radius: int) -> Tensor:
    """``dilate(m, d) AND NOT erode(m, d)`` of packed masks: the pixels within ``d`` of each mask's crack.

    Bits past pixel ``W - 1`` may be set (the dilation reaches them): AND the band with a mask before counting.

    Args:
        packed: :math:`(N, H, M)` int64 (:func:`~nobg_metrics.ops.morphology.pack_bits`).
        width: ``W``.
        radius: ``d >= 1``.

    Returns:
        :math:`(N, H, M)` int64.
    """
    return _window(packed, width, radius, False).bitwise_and_(_window(packed, width, radius, True).bitwise_not_())


def _agreement(values: Tensor, pred_fg: Tensor, gt_fg: Tensor, num_pixels: int) -> Tensor:
    """``values``, with all-background / all-foreground gts scored by the pixel agreement ``(TP + TN) / N``."""
    agreement = torch.where(gt_fg == 0, (num_pixels - pred_fg) / num_pixels, pred_fg / num_pixels)
    return torch.where((gt_fg == 0) | (gt_fg == num_pixels), agreement, values)


def _trimap_counts(batch: SegBatch, threshold: float, radius: int) -> Tensor:
    """:math:`(B, 4)` int64 ``[|G_d ∩ G ∩ P|, |G_d ∩ (G ∪ P)|, |P|, |G|]`` of one equal-size batch."""
    size, width = batch.shape[0], batch.shape[-1]
    pred, gt = packed_pred(batch, threshold), gt_bits(batch)
    gt_band = band(gt, width, radius)  # G_d: from the gt only (the measure is asymmetric by design)
    pieces = torch.cat([gt_band & gt & pred, gt_band & (gt | pred), pred, gt])
    return count_bits(pieces).reshape(4, size).T


def _boundary_f_counts(batch: SegBatch, threshold: float, radius: int) -> Tensor:
    """:math:`(B, 6)` int64 ``[|P_1 ∩ G_d|, |P_1|, |G_1 ∩ P_d|, |G_1|, |P|, |G|]`` of one equal-size batch."""
    size, width = batch.shape[0], batch.shape[-1]
    masks = torch.cat([packed_pred(batch, threshold), gt_bits(batch)])  # P then G: one pass for both
    contours = masks & _window(masks, width, 1, True).bitwise_not_()
    near = _window(contours, width, radius, False)  # within d of a contour pixel (bits past W: ANDed away below)
    pred_contour, gt_contour, pred_near, gt_near = contours[:size], contours[size:], near[:size], near[size:]
    pieces = torch.cat([pred_contour & gt_near, pred_contour, gt_contour & pred_near, gt_contour, masks])
    return count_bits(pieces).reshape(6, size).T


def _trimap_values(counts: Tensor, num_pixels: int, empty_gt: EmptyGt) -> Tensor:
    """:math:`(B,)` float64 per-image Trimap IoU from :func:`_trimap_counts`."""
    inter, union, pred_fg, gt_fg = counts.double().unbind(dim=1)
    # empty band (empty gt): 1.0 for an empty prediction, 0.0 otherwise
    values = torch.where(union == 0, (pred_fg == 0).double(), inter / torch.where(union == 0, 1.0, union))
    return _agreement(values, pred_fg, gt_fg, num_pixels) if empty_gt == "agreement" else values


def _boundary_f_values(counts: Tensor, num_pixels: int, empty_gt: EmptyGt) -> Tensor:
    """:math:`(B,)` float64 per-image boundary F from :func:`_boundary_f_counts`."""
    pred_matched, pred_contour, gt_matched, gt_contour, pred_fg, gt_fg = counts.double().unbind(dim=1)
    precision = ratio_or_one(pred_matched, pred_contour)  # no predicted contour: precision 1
    recall = ratio_or_one(gt_matched, gt_contour)  # no gt contour: recall 1
    total = precision + recall
    values = torch.where(total == 0, 0.0, 2 * precision * recall / torch.where(total == 0, 1.0, total))
    return _agreement(values, pred_fg, gt_fg, num_pixels) if empty_gt == "agreement" else values


def _trimap_iou_update(pred: InputMaps, gt: InputMaps, threshold: float, dilation_ratio: float,
                       dilation_pixels: int | None, normalize: bool, empty_gt: EmptyGt,
                       validate_args: bool) -> dict[str, Tensor]:
    """Sufficient statistics of a batch, by state name: the float64 sum of per-image values, the :math:`(3,)` int64
    pooled ``[∩, ∪, |P|]`` and the int64 number of images."""
    def per_image(batch: SegBatch) -> dict[str, Tensor]:
        height, width = batch.shape[-2:]
        radius = dilation_radius(height, width, dilation_ratio, dilation_pixels)
        batch = rows_along_long_side(batch)  # square windows: the same counts on the transpose (thin images)
        counts = _trimap_counts(batch, threshold, radius)
        return {"value": _trimap_values(counts, batch.num_pixels, empty_gt), "counts": counts[:, :3]}

    sums, count = sum_per_image(per_image, prepare_segmentation(pred, gt, normalize=normalize,
                                                                validate_args=validate_args))
    assert isinstance(sums, dict)  # per_image returns a dict
    return {"trimap_value_sum": sums["value"], "trimap_counts": sums["counts"], "trimap_count": count}


def _trimap_iou_compute(trimap_value_sum: Tensor, trimap_counts: Tensor, trimap_count: Tensor,
                        reduction: TrimapReduction) -> Tensor:
    """Mean of per-image values, or the pooled ``sum |I| / sum |U|``; when every band is empty (every gt empty),
    the pooled empty band scores an exact match: 1.0 if no prediction has a pixel, else 0.0."""
    if reduction == "mean":
        return mean_over_images(trimap_value_sum, trimap_count)
    inter, union, pred_fg = trimap_counts.double().unbind()
    return torch.where(union == 0, (pred_fg == 0).double(), inter / torch.where(union == 0, 1.0, union))


def _boundary_f_update(pred: InputMaps, gt: InputMaps, threshold: float, dilation_ratio: float,
                       dilation_pixels: int | None, normalize: bool, empty_gt: EmptyGt,
                       validate_args: bool) -> dict[str, Tensor]:
    """Sufficient statistics of a batch, by state name: the float64 sum of per-image values, the int64 images."""
    def per_image(batch: SegBatch) -> Tensor:
        height, width = batch.shape[-2:]
        radius = dilation_radius(height, width, dilation_ratio, dilation_pixels)
        batch = rows_along_long_side(batch)  # square windows: the same counts on the transpose (thin images)
        return _boundary_f_values(_boundary_f_counts(batch, threshold, radius), batch.num_pixels, empty_gt)

    value_sum, count = sum_per_image(per_image, prepare_segmentation(pred, gt, normalize=normalize,
                                                                     validate_args=validate_args))
    assert isinstance(value_sum, Tensor)  # per_image returns one tensor
    return {"boundary_f_value_sum": value_sum, "boundary_f_count": count}


def _boundary_f_compute(boundary_f_value_sum: Tensor, boundary_f_count: Tensor) -> Tensor:
    """Mean of per-image values."""
    return mean_over_images(boundary_f_value_sum, boundary_f_count)


def _check_boundary_measures_args(threshold: float, dilation_ratio: float, dilation_pixels: int | None,
                                  empty_gt: str) -> None:
    check_number("threshold", threshold, low=0.0, high=1.0)
    check_number("dilation_ratio", dilation_ratio, low=0.0)
    if dilation_pixels is not None:
        check_number("dilation_pixels", dilation_pixels, low=1, integer=True)
    check_option("empty_gt", empty_gt, EmptyGt)


def trimap_iou(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, dilation_ratio: float = 0.02, *,
    dilation_pixels: int | None = None, reduction: TrimapReduction = "mean", normalize: bool = False,
    empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    r"""Trimap IoU of ``pred > threshold``: the IoU inside the gt's band, ``|G_d ∩ G ∩ P| / |G_d ∩ (G ∪ P)|``.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1], uint8 or bool.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        threshold: prediction threshold (strict ``>``; uint8 read as ``v / 255``).
        dilation_ratio: band width as a fraction of the diagonal, ``d = max(1, round(ratio * diag))``.
        dilation_pixels: a fixed ``d >= 1`` instead of the ratio.
        reduction: ``"mean"`` of per-image values or ``"pooled"`` ``sum |I| / sum |U|``.
        normalize: per-image min-max stretch of ``pred`` first.
        empty_gt: ``"agreement"`` or ``"reference"`` (the formula; module doc).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(1, 9, 12, dtype=torch.bool)
        >>> gt[0, 2:7, 3:9] = True
        >>> pred = torch.zeros(1, 9, 12)
        >>> pred[0, 2:7, 3:10] = 0.9   # one column too wide: |G_d ∩ G ∩ P| = 18, |G_d ∩ (G ∪ P)| = 23
        >>> trimap_iou(pred, gt, dilation_pixels=1)
        tensor(0.7826, dtype=torch.float64)
    """
    _check_boundary_measures_args(threshold, dilation_ratio, dilation_pixels, empty_gt)
    check_option("reduction", reduction, TrimapReduction)
    stats = _trimap_iou_update(pred, gt, threshold, dilation_ratio, dilation_pixels, normalize, empty_gt,
                               validate_args)
    return _trimap_iou_compute(**stats, reduction=reduction)


def boundary_f_measure(
    pred: InputMaps, gt: InputMaps, threshold: float = 0.5, dilation_ratio: float = 0.02, *,
    dilation_pixels: int | None = None, normalize: bool = False, empty_gt: EmptyGt = "agreement",
    validate_args: bool = True,
) -> Tensor:
    r"""Boundary F-measure of ``pred > threshold``: ``2pr / (p + r)`` of the contours matched within ``d``.

    ``p = |P_1 ∩ G_d| / |P_1|``, ``r = |G_1 ∩ P_d| / |G_1|`` (module doc); mean over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1], uint8 or bool.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        threshold: prediction threshold (strict ``>``).
        dilation_ratio: match distance as a fraction of the diagonal, ``d = max(1, round(ratio * diag))``.
        dilation_pixels: a fixed ``d >= 1`` instead of the ratio.
        normalize: per-image min-max stretch of ``pred`` first.
        empty_gt: ``"agreement"`` or ``"reference"`` (the formula; module doc).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(1, 20, 20, dtype=torch.bool)
        >>> gt[0, 5:15, 5:15] = True
        >>> pred = torch.zeros(1, 20, 20)
        >>> pred[0, 5:15, 9:19] = 1.0   # shifted by 4 > d: 20 of each 36-pixel contour lie within 2 of the other
        >>> boundary_f_measure(pred, gt, dilation_pixels=2)
        tensor(0.5556, dtype=torch.float64)
    """
    _check_boundary_measures_args(threshold, dilation_ratio, dilation_pixels, empty_gt)
    stats = _boundary_f_update(pred, gt, threshold, dilation_ratio, dilation_pixels, normalize, empty_gt,
                               validate_args)
    return _boundary_f_compute(**stats)
