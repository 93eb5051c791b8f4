"""The size-invariant confusion family's statistics: requests, per-target counts to per-image values, compute.

A *request* ``(measure, reduction)`` names one state (as in :mod:`nobg_metrics.functional.sod.confusion`):

- ``sample_max`` / ``sample_mean`` / ``sample_curve`` / ``sample_adaptive`` / ``sample_binary`` /
  ``sample_auc``: the sum over images of the mean over each image's targets (``sample_based=True``; of each
  target curve's max, mean, the curve itself, or its AUC for ``"pr_auc"`` / ``"roc_auc"``);
- ``overall_curve``: the sum of all targets' curves (``sample_based=False``);
- ``pooled``: the summed binary ``[TP, FP, TN, FN]`` of all targets.

Every statistic also has the image count, the target count and the count of images with more targets than
``max_targets`` (fixed-size path). Reference: PySODMetrics 1.6.2 ``SizeInvarianceFmeasureV2.step`` /
``get_results`` and the reductions of its test (``reduce_dynamic_results_for_max_avg``,
``reduce_dynamic_results_for_auc``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import sum_per_image
from nobg_metrics.functional.sod.confusion import (
    POOLED,
    ConfusionOptions,
    Reduction,
    check_requests,
    pooled_value,
    trapezoid_auc,
)
from nobg_metrics.functional.sod.confusion_measures import MEASURES, Counts, measure_values
from nobg_metrics.functional.sod.family import AUC_CURVES, Mode
from nobg_metrics.functional.sod.si_box_counts import target_stats
from nobg_metrics.functional.sod.si_statistics import TIE, TargetStats, reference_means
from nobg_metrics.functional.sod.si_targets import Targets, find_targets
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.histogram import NUM_LEVELS, regroup_levels

SI_MEASURES = tuple(name for name in MEASURES if name != "e_measure")
"""The measures with a size-invariant reference (every ``FmeasureV2`` handler)."""

SIReduction = Literal["sample_curve", "sample_max", "sample_mean", "sample_adaptive", "sample_binary", "sample_auc",
                      "overall_curve", "pooled"]
"""What a request sums: per-image means over targets (``sample_*``), target curves, or pooled binary counts."""

SIRequest = tuple[str, str]
"""``(measure, reduction)``; ``sample_auc`` takes ``"pr_auc"`` / ``"roc_auc"``, ``pooled`` is ``(POOLED, POOLED)``."""

SAMPLES, TARGETS, OVERFLOW = "count", "targets", "overflow"
"""Keys of the image count, the target count and the count of images with more targets than ``max_targets``."""

_BINARISATION: dict[str, Reduction] = {
    "sample_curve": "curve", "sample_max": "curve", "sample_mean": "curve", "sample_auc": "curve",
    "overall_curve": "curve", "sample_adaptive": "adaptive", "sample_binary": "binary", POOLED: "binary"}


def check_max_targets(max_targets: int) -> None:
    """``max_targets`` is a positive int (the fixed-size path's slots per image)."""
    check_number("max_targets", max_targets, low=1, integer=True)


def si_requests(measure: str, mode: Mode = "max", sample_based: bool = True) -> frozenset[SIRequest]:
    """The statistics a size-invariant ``measure`` in ``mode`` reads, validated.

    Examples:
        >>> sorted(si_requests("pr_auc", sample_based=False))
        [('precision', 'overall_curve'), ('recall', 'overall_curve')]
    """
    if not isinstance(sample_based, bool):
        raise TypeError(f"`sample_based` must be a bool, got {type(sample_based).__name__}")
    if measure in AUC_CURVES:
        if sample_based:
            return frozenset({(measure, "sample_auc")})
        return frozenset((name, "overall_curve") for name in AUC_CURVES[measure])
    check_option("measure", measure, SI_MEASURES + tuple(AUC_CURVES))
    check_option("mode", mode, Mode)
    if mode == "adaptive" and not sample_based:
        raise ValueError("the adaptive mode is per sample only (PySODMetrics averages it over each sample's targets "
                         "whatever `sample_based` says); use sample_based=True")
    if mode == "binary":
        return frozenset({(measure, "sample_binary")} if sample_based else {(POOLED, POOLED)})
    return frozenset({(measure, f"sample_{mode}") if sample_based else (measure, "overall_curve")})


def check_si_requests(requests: Iterable[SIRequest]) -> frozenset[SIRequest]:
    """Validate ``(measure, reduction)`` pairs (for ``share_statistics``)."""
    return check_requests(requests, SIReduction,
                          lambda reduction: tuple(AUC_CURVES) if reduction == "sample_auc" else SI_MEASURES)


def si_key(measure: str, reduction: str) -> str:
    """The statistic key (and state name suffix) of a request."""
    return POOLED if reduction == POOLED else f"{measure}_{reduction}"


def si_fingerprint(requests: Iterable[SIRequest], options: ConfusionOptions, max_targets: int) -> dict[str, object]:
    """The options the statistics of ``requests`` read (the family's rule, plus ``max_targets``)."""
    plain = {(POOLED if r == POOLED else ("precision" if m in AUC_CURVES else m), _BINARISATION[r])
             for m, r in requests}
    return {**options.fingerprint(plain), "max_targets": max_targets, "size_invariant": True}


def _curve_counts(hist: Tensor, fg: Tensor, outside: Tensor, n: int) -> Counts:
    """Counts at every threshold ``>= t`` (t descending) from :math:`(T, 2, L)` box histograms; the pixels
    outside the box (level 0, background) are positive only at the last threshold, ``>= 0``."""
    tp = hist[:, 1].flip(-1).cumsum(-1)
    positives = tp + hist[:, 0].flip(-1).cumsum(-1)
    last = torch.arange(hist.shape[-1], device=hist.device) == hist.shape[-1] - 1
    fp = positives - tp + outside[:, None] * last
    return Counts(tp, fp, (n - fg)[:, None] - fp, fg[:, None] - tp)


def _counts(tp: Tensor, positives: Tensor, fg: Tensor, n: int) -> Counts:
    fp = positives - tp
    return Counts(tp, fp, (n - fg) - fp, fg - tp)


def target_counts(batch: SegBatch, targets: Targets, stats: TargetStats, binarisations: Collection[str],
                  options: ConfusionOptions, engine: host_reads.Engine = "auto") -> dict[str, Counts]:
    """Per-target :class:`Counts` of each binarisation (``"curve"`` :math:`(T, L)`, others :math:`(T,)`; ``engine``:
    :func:`~nobg_metrics.functional.sod.si_statistics.reference_means`')."""
    n, fg = batch.num_pixels, stats.fg
    outside = n - targets.area
    out = {}
    if batch.is_uint8 and stats.hist is not None:  # every count from the raw-level histograms (exact)
        raw = stats.hist
        values = batch.level_values.index_select(0, targets.image)  # bit-identical to the reference's pixels
        per_level = raw.sum(dim=1)
        if "curve" in binarisations:
            hist = raw
            if options.num_thresholds != NUM_LEVELS or batch.normalize:  # absent levels may leave [0, 1]: clamp
                new_levels = (values * (options.num_thresholds - 1)).long().clamp(0, options.num_thresholds - 1)
                hist = regroup_levels(raw, new_levels, options.num_thresholds)
            out["curve"] = _curve_counts(hist, fg, outside, n)
        if "adaptive" in binarisations:
            fast = (per_level.double() * values).sum(dim=1) / n
            cut = torch.clamp(2 * fast, max=1.0)
            near = ((values - cut[:, None]).abs() <= TIE) & (per_level > 0)
            near = near.any(dim=1) | ((cut <= TIE) & (outside > 0))  # outside: the zeros
            # get_adaptive_threshold
            cut = torch.clamp(2 * reference_means(batch, targets, fast, near, engine), max=1.0)
            positive = (values >= cut[:, None]).long()
            out["adaptive"] = _counts((raw[:, 1] * positive).sum(dim=1),
                                      (per_level * positive).sum(dim=1) + torch.where(cut <= 0, outside, 0), fg, n)
        if "binary" in binarisations and stats.binary is None:
            positive = (values > options.threshold).long()  # outside: 0 > threshold never holds
            out["binary"] = _counts((raw[:, 1] * positive).sum(dim=1), (per_level * positive).sum(dim=1), fg, n)
    elif "curve" in binarisations:
        assert stats.hist is not None, "target_stats counts the curve histogram when a curve is asked for"
        out["curve"] = _curve_counts(stats.hist, fg, outside, n)
    if "adaptive" in binarisations and "adaptive" not in out:
        assert stats.adaptive is not None, "target_stats counts what the histograms did not give"
        out["adaptive"] = _counts(*stats.adaptive, fg, n)
    if "binary" in binarisations and "binary" not in out:
        assert stats.binary is not None, "target_stats counts what the histograms did not give"
        out["binary"] = _counts(*stats.binary, fg, n)
    return out


def target_auc(y: Tensor, x: Tensor) -> Tensor:
    """:func:`~nobg_metrics.functional.sod.confusion.trapezoid_auc` of every row: :math:`(T, L)` -> :math:`(T,)`."""
    y, x = y.flip(-1), x.flip(-1)
    order = torch.sort(x, dim=-1, stable=True).indices
    x, y = x.gather(-1, order), y.gather(-1, order)
    return ((x[..., 1:] - x[..., :-1]) * (y[..., 1:] + y[..., :-1]) / 2.0).sum(dim=-1)


def per_image_sum(values: Tensor, targets: Targets, images: int) -> Tensor:
    """Sum over each image's targets of :math:`(T, ...)` values: :math:`(B, ...)` (unused slots count 0)."""
    valid = targets.valid.view(-1, *([1] * (values.ndim - 1)))
    values = torch.where(valid, values, torch.zeros((), dtype=values.dtype, device=values.device))
    if targets.slots is not None:  # fixed layout: a plain sum over the slots (deterministic on every device)
        return values.view(images, targets.slots, *values.shape[1:]).sum(dim=1)
    out = torch.zeros((images, *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, targets.image, values)


def _si_per_image(batch: SegBatch, requests: frozenset[SIRequest], options: ConfusionOptions,
                  max_targets: int, engine: host_reads.Engine = "auto") -> dict[str, Tensor]:
    """``{statistic key: (B, ...)}``: per-image means over targets, per-image sums of target curves / counts (the
    ``engine``, resolved once for the group, picks each step's data-sized or sync-free form)."""
    images = batch.shape[0]
    engine = host_reads.resolve_engine(engine, batch.gt)
    targets = find_targets(batch.gt, max_targets, engine)
    binarisations = {_BINARISATION[reduction] for _, reduction in requests}
    stats = target_stats(batch, targets, curve_levels=options.num_thresholds if "curve" in binarisations else None,
                         threshold=options.threshold if "binary" in binarisations else None,
                         adaptive="adaptive" in binarisations, mae=False, engine=engine)
    counts = target_counts(batch, targets, stats, binarisations, options, engine)
    agreement = options.empty_gt == "agreement"
    cache: dict[tuple[str, str], Tensor] = {}

    def values(measure: str, binarisation: str) -> Tensor:
        if (measure, binarisation) not in cache:
            cache[measure, binarisation] = measure_values(measure, counts[binarisation], options.measure_options,
                                                          agreement)
        return cache[measure, binarisation]

    per_target = targets.count.double()
    out: dict[str, Tensor] = {}
    for measure, reduction in sorted(requests):
        if reduction == POOLED:
            out[POOLED] = per_image_sum(torch.stack(list(counts["binary"]), dim=1), targets, images)
            continue
        if reduction == "overall_curve":
            out[si_key(measure, reduction)] = per_image_sum(values(measure, "curve"), targets, images)
            continue
        if reduction == "sample_auc":
            y, x = AUC_CURVES[measure]
            target = target_auc(values(y, "curve"), values(x, "curve"))
        elif reduction in ("sample_max", "sample_mean", "sample_curve"):
            curve = values(measure, "curve")
            if reduction == "sample_max":
                target = curve.amax(dim=-1)
            elif reduction == "sample_mean":
                target = curve.mean(dim=-1)
            else:
                target = curve
        else:
            target = values(measure, _BINARISATION[reduction])
        total = per_image_sum(target, targets, images)
        out[si_key(measure, reduction)] = total / per_target.view(-1, *([1] * (total.ndim - 1)))
    out[TARGETS] = targets.count
    out[OVERFLOW] = targets.overflow
    return out


def si_update(pred: InputMaps, gt: InputMaps, requests: frozenset[SIRequest], options: ConfusionOptions,
              max_targets: int, validate_args: bool, engine: host_reads.Engine = "auto") -> dict[str, Tensor]:
    """Sufficient statistics of a batch: ``{statistic key: sum over images}``, image, target and overflow counts.

    Curve sums are :math:`(T,)` float64, value sums scalar float64, pooled counts :math:`(4,)` int64
    ``[TP, FP, TN, FN]`` over all targets, the counts scalar int64.
    """
    batches = prepare_segmentation(pred, gt, normalize=options.normalize, validate_args=validate_args)
    sums, count = sum_per_image(lambda batch: _si_per_image(batch, requests, options, max_targets, engine), batches)
    return {**sums, SAMPLES: count}


def check_overflow(overflow: Tensor, max_targets: int) -> None:
    """Refuse a value computed with too few target slots (a host read: compute time only)."""
    images = int(overflow)
    if images:
        raise ValueError(f"{images} image(s) had more targets than `max_targets`={max_targets} (the fixed-size path "
                         f"used off CPU); pass a larger `max_targets` to score them exactly")


def si_compute(measure: str, mode: Mode, sample_based: bool, stats: dict[str, Tensor], options: ConfusionOptions,
               max_targets: int) -> Tensor:
    """The dataset value from accumulated statistics: scalar float64, or :math:`(T,)` for ``mode="curve"``."""
    check_overflow(stats[OVERFLOW], max_targets)
    samples, targets = stats[SAMPLES], stats[TARGETS]
    if measure in AUC_CURVES:
        if sample_based:
            return stats[si_key(measure, "sample_auc")] / samples
        y, x = AUC_CURVES[measure]
        return trapezoid_auc(stats[si_key(y, "overall_curve")] / targets, stats[si_key(x, "overall_curve")] / targets)
    if sample_based:
        return stats[si_key(measure, f"sample_{mode}")] / samples
    if mode == "binary":
        return pooled_value(measure, stats[POOLED], options)
    curve = stats[si_key(measure, "overall_curve")] / targets
    if mode == "curve":
        return curve
    return curve.amax() if mode == "max" else curve.mean()


