"""DAVIS region similarity J and contour accuracy F per frame, exactly as davis2017-evaluation computes them
(``davis2017/metrics.py``: ``db_eval_iou``, ``db_eval_boundary`` / ``f_measure``, ``_seg2bmap``), on packed bits.

Per frame, with ``P`` the prediction, ``G`` the gt and ``V`` the optional void mask (binarised by the input
contract; DAVIS's semi-supervised protocol passes no void)::

    J = |P ∩ G ∖ V| / |(P ∪ G) ∖ V|,  1 when the union is empty        # db_eval_iou: j[isclose(union, 0)] = 1
    bound_pix = ceil(0.008 * sqrt(H² + W²))                               # ceil, not round (bound_th >= 1: pixels)
    P_b, G_b = seg2bmap(P ∖ V), seg2bmap(G ∖ V)                            # void pixels zeroed first
    p = |P_b ∩ disk_dilate(G_b)| / |P_b|,  r = |G_b ∩ disk_dilate(P_b)| / |G_b|
    F = 2 p r / (p + r),  0 when p + r = 0

``seg2bmap(S)`` marks a pixel that differs from its east, south or south-east neighbour; the last row compares only
east, the last column only south, the bottom-right pixel never (no padding: the image border is never contour).
The dilation is ``cv2.dilate`` with ``skimage.morphology.disk(bound_pix)`` (``x² + y² <= r²``, outside = background;
:mod:`nobg_metrics.ops.disk_morphology`). Empty contours, as the reference: no predicted contour but a gt one gives
``(p, r) = (1, 0)``; the reverse ``(0, 1)``; neither ``(1, 1)``, so F = 1 for empty vs empty. Every value is defined.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_number, prepare
from nobg_metrics._seg_batch import SegBatch, prediction_values
from nobg_metrics.functional.boundary.boundary_iou import packed_pred, ratio_or_one
from nobg_metrics.functional.boundary.boundary_measures import gt_bits
from nobg_metrics.functional.video.davis_statistics import (
    FrameKeys,
    SequenceKeys,
    frame_keys,
    sequence_keys,
)
from nobg_metrics.ops.byte_counts import count_ones
from nobg_metrics.ops.disk_morphology import bit_mask, dilate_disk_packed, shift_flat, width_mask
from nobg_metrics.ops.levels import binarize_gt, foreground_indicator
from nobg_metrics.ops.morphology import count_bits, pack_bits
from nobg_metrics.ops.uint8_stats import above

__all__ = ["davis_contour_accuracy", "davis_region_similarity"]

DAVIS_BOUND_TH = 0.008
"""davis2017-evaluation's ``bound_th``: the match distance as a fraction of the diagonal."""

STATE_NAMES = {"J": "davis_j", "F": "davis_f"}
"""The per-frame list state of each measure."""


def davis_bound_pix(height: int, width: int, bound_th: float = DAVIS_BOUND_TH) -> int:
    """``bound_th`` if ``>= 1`` (pixels), else ``ceil(bound_th * sqrt(H² + W²))`` (``np.linalg.norm`` of the shape).

    Examples:
        >>> davis_bound_pix(480, 854), davis_bound_pix(1080, 1920), davis_bound_pix(5, 5)
        (8, 18, 1)
    """
    if bound_th >= 1:
        return int(bound_th)
    return math.ceil(bound_th * math.sqrt(height**2 + width**2))


def seg2bmap_packed(seg: Tensor, width: int) -> Tensor:
    """``_seg2bmap`` of packed masks: a pixel that differs from its east, south or south-east neighbour.

    Args:
        seg: :math:`(N, H, M)` int64 rows of bits (:func:`~nobg_metrics.ops.morphology.pack_bits`), zero past
            pixel ``width - 1``.
        width: ``W``.

    Returns:
        :math:`(N, H, M)` int64 boundary map, zero past pixel ``W - 1``.
    """
    shape, words = seg.shape, seg.shape[-1]
    # e[:, :-1] = seg[:, 1:] as one stream: a row's last column reads the zero padding, or, when W % 64 == 0, the
    # next row's first pixel — that column is recomputed below, and bits past W are cleared at the end
    east = shift_flat(seg.reshape(-1), 1).view(shape)
    south = torch.zeros_like(seg)
    south[..., :-1, :] = seg[..., 1:, :]  # s[:-1, :] = seg[1:, :]
    differs_south = seg ^ south
    south_east = shift_flat(south.reshape(-1), 1).view(shape)
    bmap = (seg ^ east).bitwise_or_(differs_south).bitwise_or_(south_east.bitwise_xor_(seg))  # seg^e | seg^s | seg^se
    last_column = bit_mask(width - 1, words, seg.device)
    # b[:, -1] = seg[:, -1] ^ s[:, -1]; then b[-1, :] = seg[-1, :] ^ e[-1, :] with b[-1, -1] = 0
    bmap = bmap.bitwise_and_(~last_column).bitwise_or_(differs_south.bitwise_and_(last_column))
    bmap[..., -1, :] = (seg[..., -1, :] ^ east[..., -1, :]) & ~last_column
    return bmap.bitwise_and_(width_mask(width, words, seg.device))


def prepare_davis(pred: InputMaps, gt: InputMaps, void: InputMaps | None,
                  validate_args: bool) -> list[tuple[SegBatch, Tensor | None]]:
    """Validate the inputs and group **consecutive** equal-size images (the frames keep their order).

    Returns:
        ``[(batch, void)]``: the images as :class:`SegBatch` runs in input order and their :math:`(B, H, W)`
        bool void masks (``None`` without ``void``).
    """
    groups = prepare(pred, gt, void=void, grouping="runs", validate_args=validate_args)
    return [(SegBatch(group.pred if group.pred.dtype == torch.bool else prediction_values(group.pred), group.gt, False),
             binarize_gt(group.void) if group.void is not None else None) for group in groups]


def _pred_bits(batch: SegBatch, threshold: float) -> Tensor:
    """``pred > threshold`` packed; a bool prediction (object masks, DAVIS's case) packed as it is."""
    if batch.pred_raw.dtype == torch.bool:
        return pack_bits([batch.pred_raw if threshold < 1 else torch.zeros_like(batch.pred_raw)])
    return packed_pred(batch, threshold)


def _indicator(batch: SegBatch, threshold: float) -> Tensor:
    """:math:`(B, N)` uint8 0/1 bytes of ``pred > threshold`` (a bool prediction as it is, uint8 levels by saturating
    byte arithmetic)."""
    raw = batch.pred_raw
    if raw.dtype == torch.bool:
        return (raw if threshold < 1 else torch.zeros_like(raw)).reshape(raw.shape[0], -1).view(torch.uint8)
    if batch.is_uint8:
        first = next((level for level in range(256) if level / 255 > threshold), 256)
        cut = torch.full((raw.shape[0],), first - 1, dtype=torch.int64, device=raw.device)
        return above(raw, cut)
    return (raw > threshold).reshape(raw.shape[0], -1).view(torch.uint8)


def _region_similarity_bytes(batch: SegBatch, void: Tensor | None, threshold: float) -> Tensor:
    """J from byte masks (no packing: J alone needs three counts), ``|P ∪ G| = |P| + |G| - |P ∩ G|``."""
    pred = _indicator(batch, threshold)
    raw_gt = batch.gt_raw
    gt = foreground_indicator(raw_gt if raw_gt.dtype in (torch.bool, torch.uint8) else batch.gt)
    if void is not None:
        keep = void.reshape(pred.shape).view(torch.uint8) ^ 1
        pred, gt = pred & keep, gt & keep
    inter = count_ones(pred & gt)
    union = count_ones(pred) + count_ones(gt) - inter
    return ratio_or_one(inter.double(), union.double())  # j = inters / union; j[isclose(union, 0)] = 1


def _frame_values(batch: SegBatch, void: Tensor | None, threshold: float, bound_th: float,
                  measures: tuple[str, ...]) -> dict[str, Tensor]:
    """``{measure: (B,) float64}`` per-frame J and/or F of one equal-size run."""
    if measures == ("J",):
        return {"J": _region_similarity_bytes(batch, void, threshold)}
    size, (height, width) = batch.shape[0], batch.shape[-2:]
    pred, gt = _pred_bits(batch, threshold), gt_bits(batch)
    if void is not None:  # P ∖ V and G ∖ V: J's counts and F's zeroed void pixels alike
        keep = pack_bits([void]).bitwise_not_()
        pred, gt = pred & keep, gt & keep
    values = {}
    if "J" in measures:
        inter, union = count_bits(torch.cat([pred & gt, pred | gt])).double().reshape(2, size)
        values["J"] = ratio_or_one(inter, union)  # j = inters / union; j[isclose(union, 0)] = 1
    if "F" in measures:
        bmaps = seg2bmap_packed(torch.cat([pred, gt]), width)
        dilated = dilate_disk_packed(bmaps, width, davis_bound_pix(height, width, bound_th))
        pred_b, gt_b = bmaps[:size], bmaps[size:]
        counts = count_bits(torch.cat([pred_b & dilated[size:], pred_b, gt_b & dilated[:size], gt_b]))
        pred_match, pred_total, gt_match, gt_total = counts.double().reshape(4, size)
        precision = ratio_or_one(pred_match, pred_total)  # n_fg == 0: precision 1 (recall 0 or 1 follows)
        recall = ratio_or_one(gt_match, gt_total)  # n_gt == 0: recall 1
        total = precision + recall
        values["F"] = torch.where(total == 0, 0.0, 2 * precision * recall / torch.where(total == 0, 1.0, total))
    return values


def check_davis_args(threshold: float, bound_th: float) -> None:
    check_number("threshold", threshold, low=0.0, high=1.0)
    check_number("bound_th", bound_th, low=0.0, low_open=True)
    if bound_th >= 1 and bound_th != int(bound_th):
        raise ValueError(f"`bound_th` >= 1 is a radius in pixels and must be a whole number, got {bound_th}")


def davis_update(pred: InputMaps, gt: InputMaps, void: InputMaps | None, sequence: SequenceKeys,
                 frame: FrameKeys, measures: tuple[str, ...], threshold: float, bound_th: float,
                 validate_args: bool) -> dict[str, Tensor]:
    """Per-frame statistics of a batch by state name: ``davis_j`` / ``davis_f`` :math:`(B,)` float64 values,
    ``davis_sequence`` and ``davis_frame`` :math:`(B,)` int64 keys, in input order."""
    runs = prepare_davis(pred, gt, void, validate_args)
    per_run = [_frame_values(batch, run_void, threshold, bound_th, measures) for batch, run_void in runs]
    stats = {STATE_NAMES[m]: torch.cat([values[m] for values in per_run]) for m in measures}
    size, device = sum(batch.shape[0] for batch, _ in runs), runs[0][0].gt_raw.device
    stats["davis_sequence"] = sequence_keys(sequence, size, device)
    stats["davis_frame"] = frame_keys(frame, size, device)
    return stats


def davis_region_similarity(pred: InputMaps, gt: InputMaps, void: InputMaps | None = None, *,
                            threshold: float = 0.5, validate_args: bool = True) -> Tensor:
    r"""Per-frame region similarity J (``db_eval_iou``): the IoU outside the void, 1 for an empty union.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1], uint8 or bool.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        void: optional, same layout and rule as ``gt``: pixels that count for neither.
        threshold: prediction threshold (strict ``>``).
        validate_args: run the checks that force a device sync.

    Returns:
        :math:`(N,)` float64, one value per image in input order.

    Examples:
        >>> gt = torch.zeros(2, 4, 4, dtype=torch.bool)
        >>> gt[0, :2] = True
        >>> davis_region_similarity(gt[:, :3].flip(1), gt[:, :3])   # half overlap, and empty vs empty
        tensor([0.3333, 1.0000], dtype=torch.float64)
    """
    check_davis_args(threshold, DAVIS_BOUND_TH)
    return davis_update(pred, gt, void, None, None, ("J",), threshold, DAVIS_BOUND_TH, validate_args)["davis_j"]


def davis_contour_accuracy(pred: InputMaps, gt: InputMaps, void: InputMaps | None = None, *,
                           threshold: float = 0.5, bound_th: float = DAVIS_BOUND_TH,
                           validate_args: bool = True) -> Tensor:
    r"""Per-frame contour accuracy F (``db_eval_boundary`` / ``f_measure``), module doc.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1], uint8 or bool.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        void: optional, same layout and rule as ``gt``: zeroed in both masks before their contours are taken.
        threshold: prediction threshold (strict ``>``).
        bound_th: match distance, a fraction of the diagonal (``ceil``), or whole pixels when ``>= 1``.
        validate_args: run the checks that force a device sync.

    Returns:
        :math:`(N,)` float64, one value per image in input order.

    Examples:
        >>> gt = torch.zeros(1, 40, 40, dtype=torch.bool)
        >>> gt[0, 10:30, 10:30] = True
        >>> # bound_pix = ceil(0.008 * 56.6) = 1; shifted by 3, half of each 80-pixel boundary map lies within 1
        >>> davis_contour_accuracy(gt.roll(1, dims=2), gt), davis_contour_accuracy(gt.roll(3, dims=2), gt)
        (tensor([1.], dtype=torch.float64), tensor([0.5000], dtype=torch.float64))
    """
    check_davis_args(threshold, bound_th)
    return davis_update(pred, gt, void, None, None, ("F",), threshold, bound_th, validate_args)["davis_f"]
