"""Mean boundary accuracy (mBA; Cheng et al., "CascadePSP", CVPR 2020), as BiRefNet reports it.

Reference: CascadePSP ``util/compute_boundary_acc.py`` (``compute_boundary_acc``; BiRefNet
``evaluation/metrics.py`` ``MBAMeasure.cal_ba`` is the same code), per image of size ``H x W``::

    max_radius = (w + h) / 300
    for i in range(5):
        r = 1 + int((max_radius - 1) / 5 * i)
        band = cv2.morphologyEx(gt, cv2.MORPH_GRADIENT, getStructuringElement(MORPH_ELLIPSE, (2r+1, 2r+1))) > 0
        acc[i] = (pixels of band where pred == gt) / |band|
    BA = sum(acc) / 5                        # Python's sum: ((((0 + a0) + a1) + a2) + a3) + a4
    mBA = mean of BA over images

The band is the set of pixels whose elliptic window (inside the image) holds both gt classes
(:func:`nobg_metrics.ops.ellipse.gradient_ellipse`); it is computed on bit-packed masks for the whole batch.

Binarisation: both references read uint8 PNGs and binarise **both** maps with ``> 128`` (CascadePSP
``eval_post.py``: ``gt > 128``, ``seg > 128``; BiRefNet ``MBAMeasure.step``: ``pred > 128``, ``gt > 128``,
on the raw prediction — no min-max stretch). ``threshold=None`` (default) applies that rule to the
prediction too: uint8 ``> 128``, float ``> 0.5`` (bool as is); a number is a strict threshold on the
[0, 1] scale (uint8 read as ``v / 255``). The gt follows the input contract (uint8 ``> 128``, float ``> 0.5``).

Empty band (named policy): the band is empty exactly when the gt is all background or all foreground
(for a non-constant gt two 4-adjacent pixels differ and every radius' window holds both). The reference
divides 0/0 there and returns NaN, which makes the dataset mean NaN. ``empty_gt="agreement"`` (default)
scores such an image by the pixel agreement ``(TP + TN) / N`` of the binarised prediction over the whole
image (the band degenerates to the image); ``"reference"`` returns NaN, as the reference does.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.boundary.boundary_iou import packed_pred, rows_along_long_side
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.ellipse import dilate_ellipses_packed, inside_words
from nobg_metrics.ops.levels import GT_CUT
from nobg_metrics.ops.morphology import count_bits, pack_bits, pack_levels_at_least

__all__ = ["mean_boundary_accuracy"]

MBA_STEPS = 5
"""Radii per image (CascadePSP's ``num_steps``)."""

REFERENCE_PRED_CUT = 128 / 255
"""The references' ``pred > 128`` on 0..255, as a threshold on ``v / 255`` (``128/255 > 128/255`` is False)."""


def mba_radii(height: int, width: int) -> tuple[int, ...]:
    """The five radii of an image size: ``1 + int((r_max - 1) / 5 * i)``, ``r_max = (H + W) / 300``.

    ``int`` truncates towards zero, so images with ``H + W < 300`` use radius 1 throughout.

    Examples:
        >>> mba_radii(1024, 1024), mba_radii(2048, 2048), mba_radii(100, 120)
        ((1, 2, 3, 4, 5), (1, 3, 6, 8, 11), (1, 1, 1, 1, 1))
    """
    max_radius = (width + height) / 300
    return tuple(1 + int((max_radius - 1) / MBA_STEPS * step) for step in range(MBA_STEPS))


def resolve_threshold(batch: SegBatch, threshold: float | None) -> float:
    """The strict threshold on the [0, 1] scale: ``None`` is the references' rule (uint8 ``> 128``, else ``> 0.5``)."""
    if threshold is not None:
        return threshold
    return REFERENCE_PRED_CUT if batch.is_uint8 and not batch.normalize else 0.5


def _packed_gt(batch: SegBatch) -> Tensor:
    """The gt foreground packed into bits: raw uint8 ``> 128`` straight from the bytes (no bool pass), else the
    bool gt. :math:`(B, H, \\lceil W / 64 \\rceil)` int64."""
    if batch.gt_raw.dtype == torch.uint8:
        return pack_levels_at_least(batch.gt_raw, GT_CUT + 1)
    return pack_bits([batch.gt])


def _mba_counts(batch: SegBatch, threshold: float, agreement: bool,
                engine: host_reads.Engine = "auto") -> dict[str, Tensor]:
    """Band and agreeing-band pixel counts per radius of one equal-size batch.

    Returns:
        ``{"band": (B, 5), "agree": (B, 5), "agree_all": (B,)}`` int64; ``agree_all``: pixels where the
        binarised prediction equals the gt over the whole image, read (and exact) only where the band is
        empty and ``agreement``.
    """
    size, height, width = batch.shape
    radii = mba_radii(height, width)
    transposed = height > width  # a tall image is packed by columns (fewer words), its window transposed
    if transposed:
        batch = rows_along_long_side(batch)
        height, width = width, height
    foreground = _packed_gt(batch)
    inside = inside_words(height, width, foreground.shape[-1], foreground.device)  # bits < W
    masks = torch.cat([foreground, foreground.bitwise_not().bitwise_and_(inside)])  # gt, NOT gt
    pred = packed_pred(batch, threshold)
    agree_mask = (pred ^ foreground).bitwise_not_()
    distinct = sorted(set(radii))
    # with the empty-band policy, the pixels agreeing over the whole image join the same popcount pass, except
    # with the data-sized engine (by default on CPU, where the host read is free) when no band is empty: they are
    # only read for constant gts
    eager = agreement and host_reads.resolve_engine(engine, masks) == "fixed"
    pieces = masks.new_empty((2 * len(distinct) + int(eager), *foreground.shape))  # [band_r, band_r AND agree]
    for index, dilated in enumerate(dilate_ellipses_packed(masks, width, distinct,  # <= 5 radii
                                                           transposed=transposed).values()):
        # the window holds gt foreground AND background (and the pixel is inside the image: the dilations
        # spread past pixel W - 1)
        band = torch.bitwise_and(dilated[:size], dilated[size:], out=pieces[2 * index])
        if width % 64:
            band.bitwise_and_(inside)
        torch.bitwise_and(band, agree_mask, out=pieces[2 * index + 1])
    if eager:
        torch.bitwise_and(agree_mask, inside, out=pieces[-1])
    counts = count_bits(pieces.flatten(0, 1)).view(-1, size)  # one popcount pass
    column = {radius: index for index, radius in enumerate(distinct)}
    band = torch.stack([counts[2 * column[radius]] for radius in radii], dim=1)
    agree = torch.stack([counts[2 * column[radius] + 1] for radius in radii], dim=1)
    agree_all = torch.zeros(size, dtype=torch.int64, device=band.device)
    if eager:
        agree_all = counts[-1]
    elif agreement and bool((band[:, 0] == 0).any()):
        agree_all = count_bits(agree_mask & inside)
    return {"band": band, "agree": agree, "agree_all": agree_all}


def _mba_per_image(batch: SegBatch, threshold: float | None, empty_gt: EmptyGt,
                   engine: host_reads.Engine = "auto") -> Tensor:
    """:math:`(B,)` float64 boundary accuracy (BA) of each image of one equal-size group."""
    counts = _mba_counts(batch, resolve_threshold(batch, threshold), empty_gt == "agreement", engine)
    accuracy = counts["agree"].double() / counts["band"].double()  # 0/0 -> NaN, as the reference
    # sum(acc) / 5 with Python's left-to-right sum
    total = accuracy[:, 0]
    for step in range(1, MBA_STEPS):
        total = total + accuracy[:, step]
    values = total / MBA_STEPS
    if empty_gt == "agreement":
        # the band is empty exactly for an all-background / all-foreground gt: (TP + TN) / N there
        agreement = counts["agree_all"].double() / batch.num_pixels
        values = torch.where(counts["band"][:, 0] == 0, agreement, values)
    return values


def _mba_update(pred: InputMaps, gt: InputMaps, threshold: float | None, normalize: bool, empty_gt: EmptyGt,
                validate_args: bool, engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor]:
    """``(float64 sum of per-image BA, int64 image count)`` of a batch."""
    batches = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
    return sum_per_image(lambda batch: _mba_per_image(batch, threshold, empty_gt, engine), batches)


def _check_mba_args(threshold: float | None, empty_gt: str) -> None:
    if threshold is not None:
        check_number("threshold", threshold, low=0.0, high=1.0)
    check_option("empty_gt", empty_gt, EmptyGt)


def mean_boundary_accuracy(
    pred: InputMaps, gt: InputMaps, threshold: float | None = None, *, normalize: bool = False,
    empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> Tensor:
    r"""mBA: the mean over images of the boundary accuracy in 5 elliptic gt bands (CascadePSP).

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1], uint8 or bool.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        threshold: ``None`` for the references' rule (uint8 ``> 128``, float ``> 0.5``), or a strict
            threshold on the [0, 1] scale.
        normalize: per-image min-max stretch of ``pred`` before binarising (the references do not stretch).
        empty_gt: ``"agreement"`` or ``"reference"`` (NaN) for all-background/all-foreground gts (module doc).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(1, 8, 10, dtype=torch.bool)
        >>> gt[0, 2:6, 2:7] = True
        >>> pred = gt.clone()
        >>> pred[0, 2, 2] = False       # radius 1 (H + W < 300): 31 of the 32 band pixels agree
        >>> mean_boundary_accuracy(pred.float(), gt)
        tensor(0.9688, dtype=torch.float64)
    """
    _check_mba_args(threshold, empty_gt)
    return mean_over_images(*_mba_update(pred, gt, threshold, normalize, empty_gt, validate_args))
