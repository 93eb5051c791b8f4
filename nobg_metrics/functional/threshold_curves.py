"""Threshold-swept statistics shared by the F-measure and the E-measure: one histogram, all thresholds.

Reference: PySODMetrics 1.6.2 ``Fmeasure.cal_pr`` / ``Emeasure.cal_em_with_cumsumhistogram``. Per image the
prediction is quantised ``floor(255 * pred)`` (numpy ``(pred * 255).astype(np.uint8)``) into 256 bins; the
binarisation at threshold ``t`` (``t = 255 ... 0``, descending) is ``level >= t``. Foreground and background
histograms, flipped and cumulated, give TP and FP for every threshold at once; TP, FP, |gt| and N fix
precision, recall, F and E (the enhanced-alignment values are constant on each of the four confusion
regions, so E needs only the counts). The dataset curve is the MEAN of the per-image curves.

``num_thresholds = T`` other than 256 quantises ``floor((T - 1) * pred)`` into T bins (thresholds
``k / (T - 1)``, ``k = T-1 ... 0``) from the same single histogram pass; T = 256 is the reference.

Adaptive threshold: ``min(2 * mean(pred), 1)`` on the un-quantised prediction, ``pred >= thr``. For uint8
input it is decided per level from the level values (no float pass over the pixels).

Degenerate gt (all background or all foreground): ``empty_gt="reference"`` keeps PySODMetrics' values
(F = 0, E = #agreeing pixels / (N - 1)); ``"agreement"`` scores the pixel agreement ``(TP + TN) / N`` per
threshold for both F and E (so a perfect prediction scores 1 and a 1-pixel image does not score 1/eps).
Precision and recall curves are the reference's under both policies.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch
from torch import Tensor

from nobg_metrics._inputs import (
    EmptyGt,
    InputMaps,
    SegBatch,
    check_number,
    check_option,
    prepare_segmentation,
)
from nobg_metrics.ops.histogram import (
    NUM_LEVELS,
    joint_histogram,
    level_values,
    regroup_levels,
)

EPS = torch.finfo(torch.float64).eps
"""``np.spacing(1)``, the reference's epsilon."""

CURVE_NAMES = ("precision", "recall", "f_measure", "e_measure")
"""Row order of the (4, T) curve sums."""


class ThresholdCurves(NamedTuple):
    """Mean per-image curves, each :math:`(T,)` float64, index ``i`` <-> threshold ``thresholds[i]`` (descending)."""

    precision: Tensor
    recall: Tensor
    f_measure: Tensor
    e_measure: Tensor
    thresholds: Tensor


def _f_from_counts(tp: Tensor, positives: Tensor, fg: Tensor, beta2: float) -> tuple[Tensor, Tensor, Tensor]:
    """Precision, recall and F (reference ``cal_pr``): ``P = TP / max(TP+FP, 1)``, ``R = TP / max(|gt|, 1)``.

    Args:
        tp, positives: :math:`(B, ...)` int64 TP and TP + FP; fg: :math:`(B,)` int64 |gt|.

    Returns:
        float64 ``(precision, recall, f)`` of ``tp``'s shape; ``F = (1+β²)PR / (β²P + R)``, 0 where PR = 0.
    """
    fg = fg.reshape(fg.shape + (1,) * (tp.ndim - 1))
    precision = tp.double() / positives.clamp(min=1).double()
    recall = tp.double() / fg.clamp(min=1).double()
    numerator = (1 + beta2) * precision * recall
    denominator = torch.where(numerator == 0, torch.ones_like(numerator), beta2 * precision + recall)
    return precision, recall, numerator / denominator


def _e_from_counts(tp: Tensor, positives: Tensor, fg: Tensor, num_pixels: int) -> Tensor:
    """Enhanced-alignment measure from counts (reference ``cal_em_with_cumsumhistogram``).

    Args:
        tp, positives: :math:`(B, ...)` int64 TP and TP + FP of the binarised prediction.
        fg: :math:`(B,)` int64 |gt|; num_pixels: N.

    Returns:
        float64 E of ``tp``'s shape; the degenerate-gt branches are the reference's
        (all background: #pred-bg / (N-1+eps); all foreground: #pred-fg / (N-1+eps)).
    """
    fg = fg.reshape(fg.shape + (1,) * (tp.ndim - 1))
    fp = positives - tp
    negatives = num_pixels - positives
    fn = fg - tp
    tn = negatives - fn
    mean_pred = positives.double() / num_pixels
    mean_gt = fg.double() / num_pixels
    pred_values = (1 - mean_pred, 0 - mean_pred)
    gt_values = (1 - mean_gt, 0 - mean_gt)
    # parts [fg_fg, fg_bg, bg_fg, bg_bg] with (pred value, gt value) combinations, in the reference's order
    parts = ((tp, 0, 0), (fp, 0, 1), (fn, 1, 0), (tn, 1, 1))
    total = torch.zeros_like(mean_pred)
    for count, pred_index, gt_index in parts:  # four regions: a bounded number of vectorised rounds
        a, b = pred_values[pred_index], gt_values[gt_index]
        align = 2 * (a * b) / (a**2 + b**2 + EPS)
        total = total + (align + 1) ** 2 / 4 * count.double()
    total = torch.where(fg == 0, negatives.double(), total)
    total = torch.where(fg == num_pixels, positives.double(), total)
    return total / (num_pixels - 1 + EPS)


def _agreement(tp: Tensor, positives: Tensor, fg: Tensor, num_pixels: int) -> Tensor:
    """Pixel agreement ``(TP + TN) / N`` of the binarised prediction, float64 of ``tp``'s shape."""
    fg = fg.reshape(fg.shape + (1,) * (tp.ndim - 1))
    tn = (num_pixels - fg) - (positives - tp)
    return (tp + tn).double() / num_pixels


def _histograms(batch: SegBatch, num_thresholds: int) -> tuple[Tensor, Tensor, Tensor]:
    """Quantised per-image histogram and the adaptive binarisation's counts.

    Returns:
        ``(hist, adaptive_tp, adaptive_positives)``: :math:`(B, 2, T)` int64 counts (``[:, 0]`` gt
        background, ``[:, 1]`` gt foreground), :math:`(B,)` int64 TP and TP + FP of ``pred >= min(2 mean, 1)``.
    """
    if batch.is_uint8:
        raw = joint_histogram(batch.pred_raw, batch.histogram_gt)
        values = level_values(raw, batch.normalize)  # bit-identical to the reference's pixel values
        if num_thresholds == NUM_LEVELS and not batch.normalize:
            hist = raw  # floor(255 * (v / 255)) == v in float64
        else:
            # levels absent from an image may stretch outside [0, 1]; they hold no pixels, so clamp them
            new_levels = (values * (num_thresholds - 1)).long().clamp(0, num_thresholds - 1)
            hist = regroup_levels(raw, new_levels, num_thresholds)
        per_level = raw.sum(dim=1)
        mean = (per_level.double() * values).sum(dim=1) / batch.num_pixels
        threshold = torch.clamp(2 * mean, max=1.0)  # get_adaptive_threshold(pred, max_value=1)
        positive = (values >= threshold[:, None]).long()
        return hist, (raw[:, 1] * positive).sum(dim=1), (per_level * positive).sum(dim=1)
    pred = batch.pred
    levels = (pred * (num_thresholds - 1)).long()  # truncation in pred's dtype, as numpy's astype
    hist = joint_histogram(levels, batch.histogram_gt, num_thresholds)
    mean = pred.sum(dim=(-2, -1), dtype=torch.float64) / batch.num_pixels
    threshold = torch.clamp(2 * mean, max=1.0).to(pred.dtype)
    binary = pred >= threshold[:, None, None]
    return hist, (binary & batch.gt).sum(dim=(-2, -1)), binary.sum(dim=(-2, -1))


def _per_image_curves(batch: SegBatch, num_thresholds: int, beta2: float, empty_gt: EmptyGt) -> tuple[Tensor, Tensor]:
    """Per-image curves and adaptive values of one equal-size batch.

    Returns:
        ``(curves, adaptive)``: :math:`(B, 4, T)` float64 ``[precision, recall, F, E]`` (thresholds
        descending), :math:`(B, 2)` float64 ``[adaptive F, adaptive E]``.
    """
    hist, adaptive_tp, adaptive_positives = _histograms(batch, num_thresholds)
    tp = hist[:, 1].flip(-1).cumsum(-1)  # TP at t = T-1 ... 0 (">= t")
    positives = tp + hist[:, 0].flip(-1).cumsum(-1)
    fg = hist[:, 1].sum(dim=-1)
    n = batch.num_pixels
    precision, recall, f_curve = _f_from_counts(tp, positives, fg, beta2)
    e_curve = _e_from_counts(tp, positives, fg, n)
    # cal_adaptive_fm: 0 when the intersection is empty, else (1+β²)PR/(β²P+R)
    f_adaptive = _f_from_counts(adaptive_tp, adaptive_positives, fg, beta2)[2]
    e_adaptive = _e_from_counts(adaptive_tp, adaptive_positives, fg, n)
    if empty_gt == "agreement":
        degenerate = (fg == 0) | (fg == n)
        agree_curve = _agreement(tp, positives, fg, n)
        agree_adaptive = _agreement(adaptive_tp, adaptive_positives, fg, n)
        f_curve = torch.where(degenerate[:, None], agree_curve, f_curve)
        e_curve = torch.where(degenerate[:, None], agree_curve, e_curve)
        f_adaptive = torch.where(degenerate, agree_adaptive, f_adaptive)
        e_adaptive = torch.where(degenerate, agree_adaptive, e_adaptive)
    curves = torch.stack([precision, recall, f_curve, e_curve], dim=1)
    return curves, torch.stack([f_adaptive, e_adaptive], dim=1)


def _check_curve_args(num_thresholds: int, beta2: float, empty_gt: str) -> None:
    check_number("num_thresholds", num_thresholds, low=2, integer=True)
    check_number("beta2", beta2, low=0.0, low_open=True)
    check_option("empty_gt", empty_gt, EmptyGt)


def _curves_update(
    pred: InputMaps, gt: InputMaps, num_thresholds: int, beta2: float, normalize: bool, empty_gt: EmptyGt,
    validate_args: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """Sufficient statistics of a batch for every F/E mode.

    Returns:
        ``(curve_sums, adaptive_sums, count)``: :math:`(4, T)` float64 sums of per-image
        ``[precision, recall, F, E]`` curves, :math:`(2,)` float64 sums of ``[adaptive F, adaptive E]``,
        int64 number of images.
    """
    curve_sums, adaptive_sums, count = [], [], 0
    for batch in prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args):
        curves, adaptive = _per_image_curves(batch, num_thresholds, beta2, empty_gt)
        curve_sums.append(curves.sum(dim=0))
        adaptive_sums.append(adaptive.sum(dim=0))
        count += curves.shape[0]
    device = curve_sums[0].device
    return (torch.stack(curve_sums).sum(dim=0), torch.stack(adaptive_sums).sum(dim=0),
            torch.full((), count, dtype=torch.int64, device=device))


def thresholds_of(num_thresholds: int, device: torch.device | str | None = None) -> Tensor:
    """:math:`(T,)` float64 thresholds ``k / (T - 1)`` for ``k = T-1 ... 0``, the curves' order."""
    return torch.arange(num_thresholds - 1, -1, -1, dtype=torch.float64, device=device) / (num_thresholds - 1)


def _curves_compute(curve_sums: Tensor, count: Tensor) -> ThresholdCurves:
    """Mean curves from accumulated sums (``curve_sums`` :math:`(4, T)`)."""
    mean = curve_sums / count
    return ThresholdCurves(*mean.unbind(0), thresholds_of(curve_sums.shape[-1], curve_sums.device))


def threshold_curves(
    pred: InputMaps, gt: InputMaps, num_thresholds: int = NUM_LEVELS, *, beta2: float = 0.3,
    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True,
) -> ThresholdCurves:
    r"""Mean per-image precision, recall, F-measure and E-measure curves over thresholds (for PR/F/E plots).

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        num_thresholds: T; 256 reproduces PySODMetrics (``floor(255 pred) >= t``, t = 255..0).
        beta2: β² of the F-measure (PySODMetrics' ``beta``), 0.3 by convention.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        validate_args: run the checks that force a device sync.

    Returns:
        :class:`ThresholdCurves` of five :math:`(T,)` float64 tensors; thresholds descending.

    Example:
        >>> pred = torch.tensor([[0.9, 0.8], [0.2, 0.6]])
        >>> gt = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> curves = threshold_curves(pred, gt, num_thresholds=5)
        >>> curves.thresholds
        tensor([1.0000, 0.7500, 0.5000, 0.2500, 0.0000], dtype=torch.float64)
        >>> curves.precision
        tensor([0.0000, 1.0000, 0.6667, 0.6667, 0.5000], dtype=torch.float64)
    """
    _check_curve_args(num_thresholds, beta2, empty_gt)
    curve_sums, _, count = _curves_update(pred, gt, num_thresholds, beta2, normalize, empty_gt, validate_args)
    return _curves_compute(curve_sums, count)


CurveMode = Literal["max", "mean", "adaptive"]
"""How a threshold-swept measure becomes one number: max or mean of the mean curve, or the adaptive value."""


def _measure_compute(measure: str, mode: CurveMode, curve_sums: Tensor, adaptive_sums: Tensor,
                     count: Tensor) -> Tensor:
    """The dataset value of ``measure`` (``"f_measure"`` or ``"e_measure"``) in ``mode``: scalar float64.

    The protocol: the mean of per-image curves, THEN the max/mean over thresholds (not F of the mean P/R,
    not the mean of per-image maxima).
    """
    if mode == "adaptive":
        return adaptive_sums[0 if measure == "f_measure" else 1] / count
    curve = curve_sums[CURVE_NAMES.index(measure)] / count
    return curve.max() if mode == "max" else curve.mean()


def _measure(measure: str, mode: CurveMode, pred: InputMaps, gt: InputMaps, num_thresholds: int, beta2: float,
             normalize: bool, empty_gt: EmptyGt, validate_args: bool) -> Tensor:
    """Check the options, update once, compute: the body of every public F/E function."""
    _check_curve_args(num_thresholds, beta2, empty_gt)
    stats = _curves_update(pred, gt, num_thresholds, beta2, normalize, empty_gt, validate_args)
    return _measure_compute(measure, mode, *stats)
