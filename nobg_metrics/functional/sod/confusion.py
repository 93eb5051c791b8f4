"""The confusion family's statistics: per-image TP/FP/TN/FN of three binarisations from one pass, summed by name.

Reference: PySODMetrics 1.6.2 ``FmeasureV2.step`` (``py_sod_metrics/fmeasurev2.py``). Per image, with
``FG = |gt|``, ``BG = N - FG``, ``FN = FG - TP``, ``TN = BG - FP``:

- ``curve`` (the reference's ``dynamic``): ``u8 = floor(255 · pred)`` (numpy ``astype(uint8)``), thresholds
  ``u8 >= t`` for ``t = 255 … 0`` (index 0 is ">= 255"), from the flipped cumulative histograms of ``u8`` on
  gt foreground and background (``dynamically_binarizing``). ``num_thresholds = T`` other than 256 bins
  ``floor((T - 1) · pred)`` instead.
- ``adaptive``: ``pred >= min(2 · mean(pred), 1)`` on the un-quantised prediction (``adaptively_binarizing``).
- ``binary``: ``pred > threshold`` (0.5: "Simulating the effect of the argmax function").

Aggregation (``get_results``): a curve is the mean over images of the per-image curves (then max / mean over
thresholds); adaptive and binary values the mean over images (``sample_based=True``); ``pooled`` is the
measure of the dataset's summed binary counts (``sample_based=False``). uint8 predictions take every count
from the 256-level joint histogram, whose level values are the reference's pixel values bit for bit.

A *request* ``(measure, reduction)`` names one state: the sum over images of a per-image curve
(``"curve"``), value (``"adaptive"``, ``"binary"``) or, for ``"pooled"``, the summed binary counts all pooled
measures share. Measures are added by name; adding one never changes another's state.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import sum_per_image
from nobg_metrics.functional.sod.confusion_measures import (
    MEASURES,
    Counts,
    KappaChance,
    MeasureOptions,
    measure_table,
    measure_values,
)
from nobg_metrics.ops import host_reads, uint8_stats
from nobg_metrics.ops.histogram import NUM_LEVELS, joint_histogram, level_values, lookup_levels, regroup_levels
from nobg_metrics.ops.numpy_sum import numpy_mean

Reduction = Literal["curve", "adaptive", "binary", "pooled"]
"""What a request sums: per-image curves, adaptive or binary values, or pooled binary counts."""

Request = tuple[str, Reduction]
"""``(measure name, reduction)``; the measure of a ``"pooled"`` request is read at compute time."""

POOLED = "pooled"
COUNT = "count"


@dataclass(frozen=True)
class ConfusionOptions:
    """Everything that changes the family's statistics.

    Attributes:
        num_thresholds: T, points of a curve (256: the reference).
        threshold: the binary mode's strict threshold ``pred > threshold``.
        beta2: β² of the F-measure (PySODMetrics' ``beta``), 0.3 by convention, 1 for F1.
        normalize: the per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` or ``"reference"`` for all-background/all-foreground gts.
        chance: kappa's chance agreement, ``"cohen"`` or ``"reference"`` (PySODMetrics' formula).
    """

    num_thresholds: int = NUM_LEVELS
    threshold: float = 0.5
    beta2: float = 0.3
    normalize: bool = False
    empty_gt: EmptyGt = "agreement"
    chance: KappaChance = "cohen"

    def __post_init__(self) -> None:
        check_number("num_thresholds", self.num_thresholds, low=2, integer=True)
        check_number("threshold", self.threshold, low=0.0, high=1.0)
        check_number("beta2", self.beta2, low=0.0, low_open=True)
        if not isinstance(self.normalize, bool):
            raise TypeError(f"`normalize` must be a bool, got {type(self.normalize).__name__}")
        check_option("empty_gt", self.empty_gt, EmptyGt)
        check_option("chance", self.chance, KappaChance)

    @property
    def measure_options(self) -> MeasureOptions:
        return MeasureOptions(beta2=self.beta2, chance=self.chance)

    def fingerprint(self, requests: Iterable[Request]) -> dict[str, object]:
        """The options the statistics of ``requests`` read (the metric's ``options_<digest>`` state name).

        The curves' T, the binary threshold, β² for an F-measure, the chance formula for kappa; the stretch and
        the degenerate-gt policy always. Two metrics hold states of the same names exactly when their
        statistics are equal: torchmetrics' automatic compute groups then never merge metrics that compute
        different numbers.

        Examples:
            >>> ConfusionOptions(beta2=1.0).fingerprint([("iou", "binary")])
            {'normalize': False, 'empty_gt': 'agreement', 'threshold': 0.5}
        """
        requests = set(requests)
        measures = {measure for measure, _ in requests}
        reductions = {reduction for _, reduction in requests}
        read: dict[str, object] = {"normalize": self.normalize, "empty_gt": self.empty_gt}
        if "curve" in reductions:
            read["num_thresholds"] = self.num_thresholds
        if reductions & {"binary", POOLED}:
            read["threshold"] = float(self.threshold)
        # pooled counts serve every measure at compute time, so they read every option
        reads = {field for name in measures if name in MEASURES for field in MEASURES[name].reads}
        if POOLED in reductions or "beta2" in reads:
            read["beta2"] = float(self.beta2)
        if POOLED in reductions or "chance" in reads:
            read["chance"] = self.chance
        return read


def check_requests(requests: Iterable[tuple[str, str]], reductions: object = Reduction,
                   measures: Callable[[str], tuple[str, ...]] = lambda reduction: tuple(MEASURES)) -> frozenset:
    """Validate ``(measure, reduction)`` pairs; ``"pooled"`` requests are kept as ``(POOLED, POOLED)``.

    Args:
        requests: the pairs.
        reductions: the allowed reductions (a ``Literal`` or a tuple); the family's by default.
        measures: the allowed measure names for a reduction; the family's by default.
    """
    checked = set()
    for measure, reduction in requests:
        check_option("reduction", reduction, reductions)
        if reduction == POOLED:
            checked.add((POOLED, POOLED))
            continue
        check_option("measure", measure, measures(reduction))
        checked.add((measure, reduction))
    return frozenset(checked)


def state_shapes(requests: frozenset[Request], num_thresholds: int, prefix: str) -> dict[str, tuple[str, tuple]]:
    """``{sums key: (state name, shape)}`` of the states that hold the requests' sums.

    ``"table"``: one float64 :math:`(K, M)` table for every requested measure and binarisation
    (:func:`table_layout`), named ``<prefix>_table_<digest of the layout>`` so that two metrics hold a state of
    the same name exactly when their tables have the same meaning; ``"pooled"``: :math:`(4,)` int64;
    ``"count"``: the int64 image count.

    Examples:
        >>> shapes = state_shapes(frozenset({("iou", "binary"), ("precision", "curve")}), 256, "confusion")
        >>> sorted((key, shape) for key, (_, shape) in shapes.items())
        [('count', ()), ('table', (257, 2))]
    """
    measures, reductions = table_layout(requests)
    out: dict[str, tuple[str, tuple]] = {}
    if measures:
        rows = sum(num_thresholds if r == "curve" else 1 for r in reductions)
        digest = hashlib.sha1(repr((measures, reductions)).encode()).hexdigest()[:8]
        out[TABLE] = (f"{prefix}_{TABLE}_{digest}", (rows, len(measures)))
    if (POOLED, POOLED) in requests:
        out[POOLED] = (f"{prefix}_{POOLED}", (4,))
    out[COUNT] = (f"{prefix}_{COUNT}", ())
    return out


def _key(measure: str, reduction: str) -> str:
    return POOLED if reduction == POOLED else f"{measure}_{reduction}"


def _counts(tp: Tensor, positives: Tensor, foreground: Tensor, num_pixels: int) -> Counts:
    """:class:`Counts` from TP, TP + FP (any shape :math:`(B, ...)`) and the :math:`(B,)` |gt| of images of N pixels."""
    foreground = foreground.reshape(foreground.shape + (1,) * (tp.ndim - 1))
    fp = positives - tp
    return Counts(tp, fp, (num_pixels - foreground) - fp, foreground - tp)


TIE = 1e-12
"""A value this close to ``2 · mean`` may sit on the adaptive threshold in exact arithmetic (then numpy's rounding
of the mean decides); genuine gaps are >= 1 / (255 N), far larger for any image below 1e9 pixels."""


def reference_mean(fast: Tensor, near: Tensor, pixels: Callable[[Tensor | None], Tensor],
                   engine: host_reads.Engine = "auto") -> Tensor:
    """Per-image means as ``np.mean`` rounds them where a pixel value is near the adaptive threshold.

    Args:
        fast: :math:`(B,)` float64 means in any summation order (exact up to a few ulps).
        near: :math:`(B,)` bool, images with a value within :data:`TIE` of ``2 · fast``.
        pixels: the float64 pixel values of the images ``rows`` (all with ``None``), :math:`(b, H, W)`.
        engine: ``"data_sized"`` (``"auto"`` on CPU): only the near images are summed again (numpy's pairwise order,
            :mod:`nobg_metrics.ops.numpy_sum`; a host read picks them); ``"fixed"`` (``"auto"`` off CPU): every
            image is (no host read decides). Same values.
    """
    if host_reads.resolve_engine(engine, fast) == "fixed":
        return numpy_mean(pixels(None))
    if not bool(near.any()):
        return fast
    rows = near.nonzero()[:, 0]
    return fast.index_put((rows,), numpy_mean(pixels(rows)))


def _uint8_counts(batch: SegBatch, reductions: set[str], options: ConfusionOptions) -> dict[str, Counts]:
    """Every requested binarisation of uint8 levels from one joint histogram (exact integer counts)."""
    raw = joint_histogram(batch.pred_raw, batch.histogram_gt)
    values = level_values(raw, batch.normalize)  # bit-identical to the reference's pixel values
    per_level, foreground, n = raw.sum(dim=1), raw[:, 1].sum(dim=-1), batch.num_pixels
    out = {}
    if "curve" in reductions:
        hist = raw
        if options.num_thresholds != NUM_LEVELS or batch.normalize:
            # levels absent from an image may stretch outside [0, 1]; they hold no pixels, so clamp them
            new_levels = (values * (options.num_thresholds - 1)).long().clamp(0, options.num_thresholds - 1)
            hist = regroup_levels(raw, new_levels, options.num_thresholds)
        tp = hist[:, 1].flip(-1).cumsum(-1)  # ">= t" for t = T-1 ... 0
        out["curve"] = _counts(tp, tp + hist[:, 0].flip(-1).cumsum(-1), foreground, n)
    if "adaptive" in reductions:
        fast = (per_level.double() * values).sum(dim=1) / n
        present = per_level > 0
        near = ((values - torch.clamp(2 * fast, max=1.0)[:, None]).abs() <= TIE) & present

        def pixels(rows: Tensor | None) -> Tensor:
            return lookup_levels(values if rows is None else values[rows],
                                 batch.pred_raw if rows is None else batch.pred_raw[rows])

        mean = reference_mean(fast, near.any(dim=1), pixels)
        positive = (values >= torch.clamp(2 * mean, max=1.0)[:, None]).long()  # get_adaptive_threshold
        out["adaptive"] = _counts((raw[:, 1] * positive).sum(dim=1), (per_level * positive).sum(dim=1), foreground, n)
    if "binary" in reductions:
        positive = (values > options.threshold).long()
        out["binary"] = _counts((raw[:, 1] * positive).sum(dim=1), (per_level * positive).sum(dim=1), foreground, n)
    return out


def _binary_counts(batch: SegBatch, threshold: float) -> Counts:
    """``pred > threshold`` alone, without a histogram (the cheap path of IoU, Dice, accuracy, BER)."""
    if batch.is_uint8:
        mask = uint8_stats.foreground(batch.histogram_gt)
        low, high = uint8_stats.level_range(batch.pred_raw)
        values = uint8_stats.range_level_values(low, high, batch.normalize)
        tp, positives = uint8_stats.positive_counts(batch.pred_raw, mask, values, threshold)
        return _counts(tp, positives, uint8_stats.count(mask), batch.num_pixels)
    binary = batch.pred > threshold
    tp = torch.count_nonzero(binary & batch.gt, dim=(-2, -1))
    return _counts(tp, torch.count_nonzero(binary, dim=(-2, -1)), torch.count_nonzero(batch.gt, dim=(-2, -1)),
                   batch.num_pixels)


def _float_counts(batch: SegBatch, reductions: set[str], options: ConfusionOptions) -> dict[str, Counts]:
    pred, n = batch.pred, batch.num_pixels
    foreground = torch.count_nonzero(batch.gt, dim=(-2, -1))
    out = {}
    if "curve" in reductions:
        levels = (pred * (options.num_thresholds - 1)).long()  # truncation in pred's dtype, as numpy's astype
        hist = joint_histogram(levels, batch.histogram_gt, options.num_thresholds)
        tp = hist[:, 1].flip(-1).cumsum(-1)
        out["curve"] = _counts(tp, tp + hist[:, 0].flip(-1).cumsum(-1), foreground, n)
    if "adaptive" in reductions:
        mean = pred.sum(dim=(-2, -1), dtype=torch.float64) / n
        if pred.dtype == torch.float64:  # float32 keeps its documented tolerance (the reference sums in float32)
            near = ((pred - torch.clamp(2 * mean, max=1.0)[:, None, None]).abs() <= TIE).flatten(1).amax(dim=1)
            mean = reference_mean(mean, near, lambda rows: pred if rows is None else pred[rows])
        positive = pred >= torch.clamp(2 * mean, max=1.0).to(pred.dtype)[:, None, None]
        out["adaptive"] = _counts((positive & batch.gt).sum(dim=(-2, -1)), positive.sum(dim=(-2, -1)), foreground, n)
    if "binary" in reductions:
        out["binary"] = _binary_counts(batch, options.threshold)
    return out


def batch_counts(batch: SegBatch, reductions: set[str], options: ConfusionOptions) -> dict[str, Counts]:
    """Per-image counts of the binarisations in ``reductions`` (``"curve"``, ``"adaptive"``, ``"binary"``).

    Returns:
        ``{binarisation: Counts}``; curve counts :math:`(B, T)` (thresholds descending), others :math:`(B,)`.
    """
    if reductions == {"binary"}:
        return {"binary": _binary_counts(batch, options.threshold)}
    if batch.is_uint8:
        return _uint8_counts(batch, reductions, options)
    return _float_counts(batch, reductions, options)


TABLE = "table"
_ORDER = ("curve", "adaptive", "binary")


@functools.lru_cache(maxsize=256)
def table_layout(requests: frozenset[Request]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The measures (sorted) and binarisations (curve, adaptive, binary) of the requests' statistics table.

    The table holds every measure on every binarisation the requests name (columns: the measures; rows: a curve's
    T points, then the adaptive and the binary value), so its layout, and its state, depend only on these two sets.

    Examples:
        >>> table_layout(frozenset({("iou", "binary"), ("precision", "curve")}))
        (('iou', 'precision'), ('curve', 'binary'))
    """
    measures = tuple(sorted({measure for measure, reduction in requests if reduction != POOLED}))
    reductions = tuple(r for r in _ORDER if any(reduction == r for _, reduction in requests))
    return measures, reductions


def _per_image_values(batch: SegBatch, requests: frozenset[Request], options: ConfusionOptions) -> dict[str, Tensor]:
    """The per-image statistics of the requests: ``"table"`` :math:`(B, M, K)` float64 values of every requested
    measure (sorted) on every requested binarisation joined along the last axis (a curve's T points, then the
    adaptive and the binary count), and ``"pooled"`` :math:`(B, 4)` int64 binary counts when pooled is requested.

    All measures are evaluated on one joined :class:`Counts` (:func:`measure_table`: shared ratios, one policy
    ``where``): a few dozen small tensor ops per batch whatever the number of requests.
    """
    measures, reductions = table_layout(requests)
    binarisations = set(reductions) | ({"binary"} if (POOLED, POOLED) in requests else set())
    counts = batch_counts(batch, binarisations, options)
    out = {}
    if (POOLED, POOLED) in requests:
        out[POOLED] = torch.stack(list(counts["binary"]), dim=1)
    if measures:
        joined = Counts(*(torch.cat([getattr(counts[r], field) if r == "curve" else getattr(counts[r], field)[:, None]
                                     for r in reductions], dim=-1) for field in Counts._fields))
        out[TABLE] = measure_table(measures, joined, options.measure_options, options.empty_gt == "agreement")
    return out


def split_table(table: Tensor, requests: frozenset[Request]) -> dict[str, Tensor]:
    """``{statistic key: sum}`` of the requests from a summed :math:`(K, M)` table (views, no copies)."""
    measures, reductions = table_layout(requests)
    widths = [table.shape[0] - len(reductions) + 1 if r == "curve" else 1 for r in reductions]
    out = {}
    for measure, column in zip(measures, table.unbind(-1)):
        for reduction, part in zip(reductions, column.split(widths)):
            if (measure, reduction) in requests:
                out[_key(measure, reduction)] = part if reduction == "curve" else part[0]
    return out


def confusion_sums(pred: InputMaps, gt: InputMaps, requests: frozenset[Request], options: ConfusionOptions,
                   validate_args: bool) -> dict[str, Tensor]:
    """A batch's sums as the classes hold them: ``"table"`` :math:`(K, M)` float64 (when a measure is requested),
    ``"pooled"`` :math:`(4,)` int64 ``[TP, FP, TN, FN]`` (when pooled is), the image count (:data:`COUNT`)."""
    batches = prepare_segmentation(pred, gt, normalize=options.normalize, validate_args=validate_args)
    sums, count = sum_per_image(lambda batch: _per_image_values(batch, requests, options), batches)
    return {**sums, COUNT: count}


def confusion_update(pred: InputMaps, gt: InputMaps, requests: frozenset[Request], options: ConfusionOptions,
                     validate_args: bool) -> dict[str, Tensor]:
    """Sufficient statistics of a batch: ``{statistic key: sum over images}`` and the image count (:data:`COUNT`).

    Curve sums are :math:`(T,)` float64, value sums scalar float64, pooled counts :math:`(4,)` int64
    ``[TP, FP, TN, FN]``, the count a scalar int64.
    """
    sums = confusion_sums(pred, gt, requests, options, validate_args)
    table = sums.pop(TABLE, None)
    return {**sums, **({} if table is None else split_table(table, requests))}


def pooled_value(measure: str, pooled: Tensor, options: ConfusionOptions) -> Tensor:
    """The measure of summed ``[TP, FP, TN, FN]`` (``sample_based=False``): scalar float64; NaN when the counts
    are all zero (no image scored: every image has at least one pixel), as every metric's "no image" value."""
    counts = Counts(*pooled.unbind(-1))
    value = measure_values(measure, counts, options.measure_options, options.empty_gt == "agreement")
    return torch.where(pooled.sum(-1) > 0, value, torch.nan)


def trapezoid_auc(y: Tensor, x: Tensor) -> Tensor:
    """PySODMetrics' AUC recipe on mean curves stored with thresholds descending.

    Flip to ascending thresholds, sort by ``x`` with a stable sort, then ``np.trapz(y, x)``
    (``sum(diff(x) · (y[1:] + y[:-1]) / 2)``) with no end points added — not scikit-learn's AUC.

    Examples:
        >>> trapezoid_auc(torch.tensor([0.5, 1.0, 1.0], dtype=torch.float64), torch.tensor([1.0, 0.5, 0.0],
        ...               dtype=torch.float64))
        tensor(0.8750, dtype=torch.float64)
    """
    y, x = y.flip(-1), x.flip(-1)
    order = torch.sort(x, stable=True).indices
    x, y = x[order], y[order]
    return ((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0).sum()
