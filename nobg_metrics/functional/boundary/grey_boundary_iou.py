"""BiRefNet's grey-boundary IoU curve (``maxBIoU`` / ``meanBIoU``): the Boundary IoU of a *grey* prediction's
boundary, swept over 256 thresholds.

Reference: BiRefNet ``evaluation/metrics.py`` ``BIoUMeasure`` (ZhengPeng7/BiRefNet), per image::

    pred, gt = _prepare_data(pred, gt)          # pred / 255, per-image min-max stretch; gt > 128
    pred = mask_to_boundary((pred * 255).astype(uint8))   # u8 - erode(u8): a GREY boundary
    gt = mask_to_boundary((gt * 255).astype(uint8)) > 128 # the binary inner band G_b
    fg_hist, bg_hist = histograms of the pred boundary over G_b and outside it (256 levels)
    TP = cumsum(flip(fg_hist)); FP = cumsum(flip(bg_hist)); T = max(|G_b|, 1)
    ious = TP / (T + FP)                        # index k <-> boundary >= 255 - k
    curve = mean of ious over images;  maxBIoU = curve.max(), meanBIoU = curve.mean()

``mask_to_boundary`` is the boundary-iou-api's (``d = max(1, int(round(0.02 * diagonal)))``, a 1-pixel zero
pad, ``d`` erosions by a 3x3 square, crop): on grey values it is a ``(2d+1)²`` **min** filter with zero
padding (the zero ring is inside every window that leaves the image), so the pred boundary is
``u8 - min_window(u8)`` and the gt band is ``gt AND NOT erode(gt)``
(:mod:`nobg_metrics.functional.boundary.boundary_iou`).
``TP / (T + FP)`` is ``TP / (TP + FN + FP)`` with ``T = |G_b|``: an IoU of the band with the thresholded grey
boundary. This is not :func:`~nobg_metrics.functional.boundary.boundary_iou.boundary_iou` (binarised masks, one
threshold); both keep their names.

Reading: BiRefNet always stretches (``normalize=True`` reproduces it on uint8 PNG bytes); levels are the
reference's ``floor(255 * pred)`` (uint8 input without the stretch: the bytes themselves).

Degenerate gt (named policy): an empty gt has an empty band; the reference's guard ``T = max(|G_b|, 1)``
gives IoU 0 at every threshold, even for an empty prediction. ``empty_gt="reference"`` keeps that;
``"agreement"`` (default) scores every all-background/all-foreground gt per threshold by the pixel agreement
of the binarised prediction ``floor(255 pred) >= t`` with the gt (as the curve measures do). Nothing divides
0/0 under either policy.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.boundary.boundary_iou import rows_along_long_side
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.band_width import dilation_radius
from nobg_metrics.ops.histogram import NUM_LEVELS, bincount_per_image, joint_histogram
from nobg_metrics.ops.levels import lookup_levels, quantize
from nobg_metrics.ops.morphology import erode

__all__ = ["grey_boundary_iou"]

GreyMode = Literal["max", "mean", "curve"]


def _window_min(image: Tensor, length: int, dim: int) -> Tensor:
    """Minimum over ``length`` consecutive entries along ``dim`` (output ``i`` covers ``i .. i + length - 1``).

    ``ceil(log2(length))`` rounds of ``minimum`` with a shifted copy (a sparse-table query); the output is
    ``length - 1`` shorter along ``dim``.
    """
    covered = 1
    while covered < length:
        shift = min(covered, length - covered)
        size = image.shape[dim]
        image = torch.minimum(image.narrow(dim, 0, size - shift), image.narrow(dim, shift, size - shift))
        covered += shift
    return image


def grey_erode(levels: Tensor, radius: int) -> Tensor:
    """Grey erosion by a ``(2r+1)²`` square with zero padding (the boundary-iou-api's padded ``r``-fold 3x3 erosion).

    Args:
        levels: :math:`(B, H, W)` uint8.
        radius: ``r >= 1``.

    Returns:
        :math:`(B, H, W)` uint8.

    Examples:
        >>> grey_erode(torch.full((1, 3, 5), 9, dtype=torch.uint8), 1)[0]
        tensor([[0, 0, 0, 0, 0],
                [0, 9, 9, 9, 0],
                [0, 0, 0, 0, 0]], dtype=torch.uint8)
    """
    _, height, width = levels.shape
    if height <= 2 * radius or width <= 2 * radius:  # every window reaches the zero padding
        return torch.zeros_like(levels)
    padded = F.pad(levels, (radius, radius, radius, radius))
    return _window_min(_window_min(padded, 2 * radius + 1, 1), 2 * radius + 1, 2)


def _levels(batch: SegBatch) -> Tensor:
    """:math:`(B, H, W)` uint8 ``floor(255 * pred)`` as the reference quantises (uint8 without stretch: the bytes)."""
    if batch.is_uint8:
        if not batch.normalize:
            return batch.pred_raw
        return lookup_levels(quantize(batch.level_values), batch.pred_raw)  # 256 entries per image
    return quantize(batch.pred)


def _grey_boundary_curves(batch: SegBatch, dilation_ratio: float, dilation_pixels: int | None,
                          empty_gt: EmptyGt, engine: host_reads.Engine = "auto") -> Tensor:
    """:math:`(B, 256)` float64 per-image IoU curves, index ``k`` <-> boundary level ``>= 255 - k``.

    With ``empty_gt="agreement"`` the ``"data_sized"`` engine (by default on CPU) reads whether a gt is constant
    and skips the agreement curves when none is; ``"fixed"`` computes them always (no host read)."""
    height, width = batch.shape[-2:]
    radius = dilation_radius(height, width, dilation_ratio, dilation_pixels)
    batch = rows_along_long_side(batch)  # square windows and histograms: the same counts on the transpose
    levels = _levels(batch)
    boundary = levels - grey_erode(levels, radius)  # >= 0: every window holds its own pixel
    band = batch.gt & ~erode(batch.gt, radius)
    hist = joint_histogram(boundary, band)  # (B, 2, 256): [:, 0] outside G_b, [:, 1] on G_b
    at_least = hist.flip(-1).cumsum(-1)  # pixels with boundary >= 255 - k
    false_pos, true_pos = at_least[:, 0], at_least[:, 1]
    band_size = true_pos[:, -1:].clamp(min=1)  # T = max(|G_b|, 1)
    curves = true_pos.double() / (band_size + false_pos).double()
    if empty_gt == "agreement":
        gt_fg = batch.gt.flatten(1).sum(dim=1)
        degenerate = (gt_fg == 0) | (gt_fg == batch.num_pixels)
        if host_reads.resolve_engine(engine, gt_fg) == "fixed" or bool(degenerate.any()):
            positives = bincount_per_image(levels.flatten(1).to(torch.int32), NUM_LEVELS).flip(-1).cumsum(-1)
            pixels = batch.num_pixels
            positives = positives.double()
            agreement = torch.where((gt_fg == 0)[:, None], (pixels - positives) / pixels, positives / pixels)
            curves = torch.where(degenerate[:, None], agreement, curves)
    return curves


def _grey_boundary_update(pred: InputMaps, gt: InputMaps, dilation_ratio: float, dilation_pixels: int | None,
                          normalize: bool, empty_gt: EmptyGt, validate_args: bool,
                          engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor]:
    """``(sum of per-image curves (256,) float64, int64 image count)`` of a batch."""
    batches = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
    return sum_per_image(lambda b: _grey_boundary_curves(b, dilation_ratio, dilation_pixels, empty_gt, engine),
                         batches)


def _grey_boundary_compute(curve_sum: Tensor, count: Tensor, mode: GreyMode) -> Tensor:
    """``max`` / ``mean`` over the 256 thresholds of the mean curve, or the curve itself."""
    curve = mean_over_images(curve_sum, count)  # the mean per-image curve
    if mode == "curve":
        return curve
    return curve.max() if mode == "max" else curve.mean()


def _check_grey_boundary_args(mode: str, dilation_ratio: float, dilation_pixels: int | None, empty_gt: str) -> None:
    check_option("mode", mode, GreyMode)
    check_number("dilation_ratio", dilation_ratio, low=0.0)
    if dilation_pixels is not None:
        check_number("dilation_pixels", dilation_pixels, low=1, integer=True)
    check_option("empty_gt", empty_gt, EmptyGt)


def grey_boundary_iou(
    pred: InputMaps, gt: InputMaps, mode: GreyMode = "max", dilation_ratio: float = 0.02, *,
    dilation_pixels: int | None = None, normalize: bool = False, empty_gt: EmptyGt = "agreement",
    validate_args: bool = True,
) -> Tensor:
    r"""BiRefNet's max / mean BIoU: the IoU curve of the grey boundary ``u8 - erode(u8)`` against the gt band.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        mode: ``"max"`` (maxBIoU), ``"mean"`` (meanBIoU) or ``"curve"`` (the :math:`(256,)` mean curve,
            index ``k`` <-> threshold ``(255 - k) / 255``).
        dilation_ratio: band width as a fraction of the diagonal, ``d = max(1, round(ratio * diagonal))``.
        dilation_pixels: a fixed ``d >= 1`` instead of the ratio.
        normalize: per-image min-max stretch of ``pred`` first (BiRefNet always stretches: ``True`` for parity).
        empty_gt: ``"agreement"`` or ``"reference"`` (BiRefNet's guarded 0) for all-background/all-foreground gts.
        validate_args: run the checks that force a device sync.

    Returns:
        float64: scalar, or :math:`(256,)` for ``mode="curve"``.

    Examples:
        >>> gt = torch.zeros(1, 9, 12, dtype=torch.bool)
        >>> gt[0, 2:7, 3:9] = True
        >>> grey_boundary_iou(gt.float(), gt, dilation_pixels=1)  # a perfect hard map: IoU 1 at level >= 1
        tensor(1., dtype=torch.float64)
    """
    _check_grey_boundary_args(mode, dilation_ratio, dilation_pixels, empty_gt)
    curve_sum, count = _grey_boundary_update(pred, gt, dilation_ratio, dilation_pixels, normalize, empty_gt,
                                             validate_args)
    return _grey_boundary_compute(curve_sum, count, mode)
