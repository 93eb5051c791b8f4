"""Per-image IoU matrices of detections against ground truths: mask IoU, crowd IoU and Boundary IoU.

pycocotools ``maskUtils.iou(d, g, iscrowd)`` (``rleIou`` in ``maskApi.c``) on the RLEs of the masks::

    o[d, g] = |d ∩ g| / |d ∪ g|      (crowd g: |d ∩ g| / |d|);   0 where |d ∩ g| = 0

(its bounding-box pre-check only skips pairs whose intersection is empty, which score 0 either way).
boundary-iou-api's ``computeBoundaryIoU`` scores a non-crowd pair ``min(mask IoU, boundary IoU)`` — the
boundary IoU being the same formula on the boundaries ``mask AND NOT erode(mask, (2d+1)², outside = 0)``,
``d = max(1, int(round(ratio · sqrt(H² + W²))))`` (``mask_to_boundary``) — and a crowd pair by its crowd mask IoU.

Intersections of every pair of an image are one integer matrix product of the flattened masks (bool bytes
read as int8, ``torch._int_mm``, exact int32 sums) on CPU; on other devices a float32 product over blocks of
at most 2**24 pixels (exact: every partial sum is an integer below 2**24) summed in int64. Boundaries are
eroded on bit-packed masks (:mod:`nobg_metrics.ops.morphology`) for all masks of one image size at once.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.ops.band_width import dilation_radius
from nobg_metrics.ops.morphology import (
    count_bits,
    pack_bits,
    square_window_packed,
    unpack_bits,
)

_FLOAT_EXACT_PIXELS = 2**24
"""float32 sums of 0/1 products stay exact below this many terms."""


def _int_mm_available(tensor: Tensor) -> bool:
    """The int8 product with int32 sums serves CPU tensors (any shape); CUDA's needs multiples of 8."""
    return tensor.device.type == "cpu" and hasattr(torch, "_int_mm")


def pairwise_counts(first: Tensor, second: Tensor) -> Tensor:
    """``|a ∩ b|`` for every pair of rows of two stacks of flattened masks.

    Args:
        first: :math:`(N, P)` bool.
        second: :math:`(M, P)` bool.

    Returns:
        :math:`(N, M)` int64.

    Examples:
        >>> a = torch.tensor([[1, 1, 0, 0], [0, 1, 1, 1]], dtype=torch.bool)
        >>> pairwise_counts(a, a[:1])
        tensor([[2],
                [1]])
    """
    count, other, pixels = first.shape[0], second.shape[0], first.shape[1]
    if count == 0 or other == 0 or pixels == 0:
        return torch.zeros((count, other), dtype=torch.int64, device=first.device)
    if _int_mm_available(first) and pixels < 2**31:
        return torch._int_mm(first.view(torch.int8), second.view(torch.int8).T).to(torch.int64)
    total = torch.zeros((count, other), dtype=torch.int64, device=first.device)
    for start in range(0, pixels, _FLOAT_EXACT_PIXELS):  # blocks of pixels: a bounded number for any image size
        block = slice(start, start + _FLOAT_EXACT_PIXELS)
        total += torch.mm(first[:, block].float(), second[:, block].float().T).to(torch.int64)
    return total


def mask_counts(masks: Tensor) -> Tensor:
    """Pixels of each flattened mask: :math:`(N, P)` bool -> :math:`(N,)` int64."""
    if masks.shape[0] == 0:
        return torch.zeros(0, dtype=torch.int64, device=masks.device)
    if _int_mm_available(masks) and masks.shape[1] < 2**31:
        ones = torch.ones((masks.shape[1], 1), dtype=torch.int8, device=masks.device)
        return torch._int_mm(masks.view(torch.int8), ones)[:, 0].to(torch.int64)  # a bool sum is ~10x slower
    return masks.sum(dim=1, dtype=torch.int64)


def ratio_or_zero(intersection: Tensor, union: Tensor) -> Tensor:
    """``I / U`` in float64, 0 where ``I = 0`` (``rleIou``: ``if (i == 0) u = 1``)."""
    union = torch.where(intersection == 0, torch.ones_like(union), union)
    return intersection.double() / union.double()


class Reach(NamedTuple):
    """Which pairs the run-based counting may leave out (:func:`reachable`): those whose IoU cannot reach
    ``floor``, the lowest matching threshold. Their intersection is then given as 0, and their IoU as 0: a pair
    below every threshold is never matched (``evaluateImg``: ``if ious[d, g] < iou: continue``), so no value of
    AP or AR changes. ``gt_crowd``: per image :math:`(M,)` bool (a crowd gt's IoU is ``|d ∩ g| / |d|``)."""

    floor: float
    gt_crowd: list[Tensor]


def reachable(det_area: Tensor, gt_area: Tensor, crowd: Tensor, floor: float) -> Tensor:
    """Per pair, whether its IoU can be ``floor`` or more, from the two areas alone: :math:`(P,)` bool.

    The intersection is at most ``u = min(|d|, |g|)`` and ``I / (|d| + |g| - I)`` grows with ``I``, so the IoU is
    at most ``u / (|d| + |g| - u)`` (crowd: ``u / |d|``); float64 division rounds monotonically, so the computed IoU
    is at most the computed bound too.

    Args:
        det_area, gt_area: :math:`(P,)` int64 pixel counts of each pair's masks. crowd: :math:`(P,)` bool.
        floor: the lowest matching threshold.

    Examples:
        >>> reachable(torch.tensor([100, 100, 100]), torch.tensor([40, 60, 40]), torch.tensor([False, False, True]),
        ...           0.5).tolist()
        [False, True, False]
    """
    smaller = torch.minimum(det_area, gt_area)
    union = torch.where(crowd, det_area, det_area + gt_area - smaller)
    return ratio_or_zero(smaller, union) >= floor


class Bands(NamedTuple):
    """Boundaries of a stack of masks: ``flat`` :math:`(N, H \\cdot W')` bool, rows widened to ``W' >= W``
    pixels (zero past ``W``), and ``area`` :math:`(N,)` int64 their pixel counts."""

    flat: Tensor
    area: Tensor


def instance_boundaries(masks: Tensor, dilation_ratio: float) -> tuple[Bands, Tensor]:
    """Boundaries of a stack of same-size masks, and the pixel counts of the masks.

    Args:
        masks: :math:`(N, H, W)` bool.
        dilation_ratio: ``d = max(1, round(ratio · diagonal))``.

    Returns:
        ``(bands, mask_areas)``: :class:`Bands` and :math:`(N,)` int64.

    Examples:
        >>> m = torch.zeros(1, 5, 6, dtype=torch.bool); m[0, 1:5, 1:6] = True
        >>> bands, areas = instance_boundaries(m, 0.02)
        >>> int(bands.area[0]), int(areas[0])  # the 4 x 5 block at the corner: its 2 x 3 inside is eroded away
        (14, 20)
    """
    count, height, width = masks.shape
    if count == 0:
        none = torch.zeros(0, dtype=torch.int64, device=masks.device)
        return Bands(torch.zeros((0, height * width), dtype=torch.bool, device=masks.device), none), none
    radius = dilation_radius(height, width, dilation_ratio)
    packed = pack_bits([masks])
    eroded, widened = square_window_packed(packed, width, radius, True)
    bands = eroded.bitwise_not_().bitwise_and_(widened)
    flat = unpack_bits(bands, bands.shape[-1] * 64)
    return Bands(flat.flatten(1), count_bits(bands)), count_bits(packed)


def ious_from_counts(inter: Tensor, det_area: Tensor, gt_area: Tensor, crowd: Tensor, band_inter: Tensor | None = None,
                     det_band: Tensor | None = None, gt_band: Tensor | None = None) -> Tensor:
    """The IoU matrix from pixel counts: mask IoU (crowd columns ``|d ∩ g| / |d|``), and with the boundary counts
    ``min(mask IoU, boundary IoU)`` on the non-crowd columns.

    Args:
        inter: :math:`(N, M)` int64 ``|d ∩ g|``. det_area: :math:`(N,)`. gt_area: :math:`(M,)`. crowd: :math:`(M,)`.
        band_inter, det_band, gt_band: the same counts of the boundaries, or ``None``.

    Returns:
        :math:`(N, M)` float64.
    """
    union = det_area[:, None] + gt_area[None, :] - inter
    union = torch.where(crowd[None, :], det_area[:, None].expand_as(union), union)  # crowd: |d ∩ g| / |d|
    ious = ratio_or_zero(inter, union)
    if band_inter is None or det_band is None or gt_band is None:
        return ious
    band_ious = ratio_or_zero(band_inter, det_band[:, None] + gt_band[None, :] - band_inter)
    # ious[:, iscrowd == 0] = np.minimum(mask_ious[:, iscrowd == 0], boundary_ious[:, iscrowd == 0])
    return torch.where(crowd[None, :], ious, torch.minimum(ious, band_ious))


def image_ious(det: Tensor, gt: Tensor, det_area: Tensor, gt_area: Tensor, crowd: Tensor,
               det_bands: Bands | None = None, gt_bands: Bands | None = None) -> Tensor:
    """The IoU matrix of one image's detections against its gts, from full-image products.

    Args:
        det: :math:`(N, P)` bool flattened detection masks. gt: :math:`(M, P)` bool.
        det_area: :math:`(N,)` int64 pixel counts. gt_area: :math:`(M,)` int64.
        crowd: :math:`(M,)` bool.
        det_bands, gt_bands: the boundaries (:func:`instance_boundaries`) for ``min(mask IoU, boundary IoU)``
            on non-crowd columns, or ``None`` for mask IoU.

    Returns:
        :math:`(N, M)` float64.

    Examples:
        >>> d = torch.tensor([[1, 1, 1, 0]], dtype=torch.bool); g = torch.tensor([[0, 1, 1, 1], [0, 1, 0, 0]])
        >>> g = g.bool()
        >>> image_ious(d, g, d.sum(1), g.sum(1), torch.tensor([False, True]))  # 2/4, crowd 1/3
        tensor([[0.5000, 0.3333]], dtype=torch.float64)
    """
    inter = pairwise_counts(det, gt)
    if det_bands is None or gt_bands is None:
        return ious_from_counts(inter, det_area, gt_area, crowd)
    return ious_from_counts(inter, det_area, gt_area, crowd, pairwise_counts(det_bands.flat, gt_bands.flat),
                            det_bands.area, gt_bands.area)
