r"""Size-invariant metrics (Li et al., ICML 2024): SI-MAE and the confusion family per target.

Reference: PySODMetrics 1.6.2 ``py_sod_metrics/size_invariance.py`` (``SizeInvarianceMAE``,
``SizeInvarianceFmeasureV2``) and the reductions of its own test (``tests/test_metrics.py``). Targets:
:mod:`nobg_metrics.functional.sod.si_targets`; counts over each box: :mod:`nobg_metrics.functional.sod.si_box_counts`.

- **SI-MAE** of an image with K targets, boxes :math:`b_k` and background :math:`o` (outside every box),
  :math:`r = |o| / (N - |o|)`:
  :math:`\frac{1}{K + r}\left(r\,\mathrm{MAE}(o) + \sum_k \mathrm{MAE}(b_k)\right)`; the dataset value is
  the mean over images. When the boxes cover the image (:math:`|o| = 0`, all-foreground gts included) the
  background term is dropped (the limit :math:`r \to 0`; the reference gives NaN or fails an assertion).
- **SI family**: per target the family of ``FmeasureV2`` on ``(pred · box, gt ∧ box)`` over the whole image.
  ``sample_based=True``: an image's value is the mean over its targets of each target's value (curve modes:
  of each target curve's max / mean / AUC), the dataset value the mean over images. ``sample_based=False``:
  the mean curve over all targets of all images (then max / mean / AUC), and the measure of the binary counts
  pooled over all targets. The adaptive mode is per sample only (the reference ignores ``sample_based`` there).
  ``mode="curve"`` with ``sample_based=True`` is the mean over images of each image's mean target curve.

Degenerate targets (the whole-image target of a gt without foreground, or of an all-foreground gt) follow
``empty_gt`` as the family does. The E-measure has no size-invariant reference and is not offered.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.sod.confusion_measures import KappaChance
from nobg_metrics.functional.sod.family import AUC_CURVES, Mode, confusion_options, thresholds_of
from nobg_metrics.functional.sod.si_box_counts import target_stats
from nobg_metrics.functional.sod.si_family import (
    OVERFLOW,
    SAMPLES,
    SI_MEASURES,
    check_max_targets,
    check_overflow,
    per_image_sum,
    si_compute,
    si_requests,
    si_update,
)
from nobg_metrics.functional.sod.si_targets import DEFAULT_MAX_TARGETS, find_targets
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.histogram import NUM_LEVELS

__all__ = ["si_mae", "size_invariant", "size_invariant_curves", "size_invariant_values"]

def size_invariant(measure: str, pred: InputMaps, gt: InputMaps, mode: Mode = "max", *, sample_based: bool = True,
                   threshold: float = 0.5, num_thresholds: int = NUM_LEVELS, beta2: float = 0.3,
                   chance: KappaChance | None = None, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                   max_targets: int = DEFAULT_MAX_TARGETS, validate_args: bool = True) -> Tensor:
    r"""A confusion-family ``measure`` made size-invariant (``SizeInvarianceFmeasureV2``), in ``mode``.

    Args:
        measure: one of :data:`SI_MEASURES` or ``"pr_auc"`` / ``"roc_auc"`` (then ``mode`` is not read).
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        mode: ``"max"``, ``"mean"``, ``"curve"``, ``"adaptive"`` or ``"binary"``.
        sample_based: mean over each image's targets, then over images (True); or over all targets (False:
            the mean target curve, pooled binary counts).
        threshold, num_thresholds, beta2, chance, normalize, empty_gt: as
            :func:`nobg_metrics.functional.kappa` and :func:`~nobg_metrics.functional.f_measure`.
        max_targets: target slots per image off CPU (more raises a ``ValueError``); no bound on CPU.
        validate_args: run the checks that force a device sync.

    Returns:
        float64: scalar, or :math:`(T,)` (thresholds descending) for ``mode="curve"``.

    Examples:
        >>> gt = torch.zeros(1, 16, 24, dtype=torch.bool); gt[0, 1:11, 1:11] = True  # a square of 100 px
        >>> for i in range(12): gt[0, 4 + i, 12:13 + i] = True  # a triangle of 78 px in a 12 x 12 box
        >>> pred = gt.double() * 0.9; pred[0, 4:16, 12:24] = 0.9  # the triangle's whole box predicted
        >>> size_invariant("iou", pred, gt, "binary")  # the mean of the targets' IoU: (1 + 78/144) / 2
        tensor(0.7708, dtype=torch.float64)
        >>> size_invariant("iou", pred, gt, "binary", sample_based=False)  # pooled: (100 + 78) / (100 + 144)
        tensor(0.7295, dtype=torch.float64)
    """
    check_max_targets(max_targets)
    options = confusion_options(num_thresholds, threshold, normalize, empty_gt, beta2=beta2, chance=chance)
    requests = si_requests(measure, mode, sample_based)
    stats = si_update(pred, gt, requests, options, max_targets, validate_args)
    return si_compute(measure, mode, sample_based, stats, options, max_targets)


def si_name(measure: str, mode: Mode = "max", sample_based: bool = True) -> str:
    """The collection name of a value: ``si_<measure>_<mode>``, ``..._<mode>_overall``, ``si_<measure>_pooled``.

    Examples:
        >>> si_name("f_measure", "max"), si_name("iou", "binary", False), si_name("pr_auc", sample_based=False)
        ('si_f_measure_max', 'si_iou_pooled', 'si_pr_auc_overall')
    """
    if measure in AUC_CURVES:
        return f"si_{measure}" if sample_based else f"si_{measure}_overall"
    if sample_based:
        return f"si_{measure}_{mode}"
    return f"si_{measure}_pooled" if mode == "binary" else f"si_{measure}_{mode}_overall"


_SI_MODES: tuple[tuple[Mode, bool], ...] = (("max", True), ("mean", True), ("adaptive", True), ("binary", True),
                                            ("max", False), ("mean", False), ("binary", False))
SI_ENTRIES: dict[str, tuple[str, Mode, bool]] = {
    si_name(measure, mode, sample_based): (measure, mode, sample_based)
    for measure in SI_MEASURES
    for mode, sample_based in _SI_MODES
} | {si_name(auc, "max", sample_based): (auc, "max", sample_based)
     for auc in AUC_CURVES for sample_based in (True, False)}
"""Every scalar size-invariant value of the family by name: ``{name: (measure, mode, sample_based)}`` (81)."""


def size_invariant_values(pred: InputMaps, gt: InputMaps, names: Iterable[str] | None = None, *, threshold: float = 0.5,
                          num_thresholds: int = NUM_LEVELS, beta2: float = 0.3, chance: KappaChance | None = None,
                          normalize: bool = False, empty_gt: EmptyGt = "agreement",
                          max_targets: int = DEFAULT_MAX_TARGETS, validate_args: bool = True) -> dict[str, Tensor]:
    r"""Several size-invariant values from one labelling and one pass: ``{name: value}``.

    Args:
        names: keys of :data:`SI_ENTRIES` (default: all 81, the whole of ``SizeInvarianceFmeasureV2`` with every
            handler, sample-based and overall, plus the four AUCs).
        others: as :func:`size_invariant`.

    Returns:
        ``{name: scalar float64}``.

    Examples:
        >>> gt = torch.zeros(1, 16, 24, dtype=torch.bool); gt[0, 2:10, 2:10] = True
        >>> values = size_invariant_values(gt.double() * 0.8, gt, ["si_precision_max", "si_recall_binary"])
        >>> [round(v.item(), 4) for v in values.values()]
        [1.0, 1.0]
    """
    check_max_targets(max_targets)
    names = list(SI_ENTRIES if names is None else names)
    for name in names:
        check_option("names", name, tuple(SI_ENTRIES))
    options = confusion_options(num_thresholds, threshold, normalize, empty_gt, beta2=beta2, chance=chance)
    requests = frozenset().union(*(si_requests(*SI_ENTRIES[name]) for name in names))
    stats = si_update(pred, gt, requests, options, max_targets, validate_args)
    return {name: si_compute(*SI_ENTRIES[name], stats, options, max_targets) for name in names}


def size_invariant_curves(pred: InputMaps, gt: InputMaps, measures: Iterable[str] = ("precision", "recall", "fpr"), *,
                          sample_based: bool = True, num_thresholds: int = NUM_LEVELS, beta2: float = 0.3,
                          chance: KappaChance | None = None, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                          max_targets: int = DEFAULT_MAX_TARGETS, validate_args: bool = True) -> dict[str, Tensor]:
    r"""Size-invariant curves of several measures from one pass (``mode="curve"`` of each), and their thresholds.

    Args:
        measures: names among :data:`SI_MEASURES`.
        sample_based: the mean over images of each image's mean target curve (True), or the mean curve over all
            targets (False: the reference's ``sample_based=False`` ``dynamic``).
        others: as :func:`size_invariant`.

    Returns:
        ``{name: (T,) float64}`` plus ``"thresholds"`` (``k / (T - 1)``, descending).

    Examples:
        >>> gt = torch.zeros(1, 16, 24, dtype=torch.bool); gt[0, 2:10, 2:10] = True
        >>> curves = size_invariant_curves(gt.double() * 0.8, gt, ["recall"], num_thresholds=3)
        >>> curves["thresholds"].tolist(), curves["recall"].tolist()
        ([1.0, 0.5, 0.0], [0.0, 1.0, 1.0])
    """
    check_max_targets(max_targets)
    measures = list(measures)
    options = confusion_options(num_thresholds, 0.5, normalize, empty_gt, beta2=beta2, chance=chance)
    requests = frozenset().union(*(si_requests(name, "curve", sample_based) for name in measures))
    stats = si_update(pred, gt, requests, options, max_targets, validate_args)
    out = {name: si_compute(name, "curve", sample_based, stats, options, max_targets) for name in measures}
    out["thresholds"] = thresholds_of(num_thresholds, stats[SAMPLES].device)
    return out


def _si_mae_per_image(batch: SegBatch, max_targets: int, engine: host_reads.Engine = "auto") -> dict[str, Tensor]:
    """:math:`(B,)` SI-MAE per image (``SizeInvarianceMAE.step``) and the overflow flags."""
    engine = host_reads.resolve_engine(engine, batch.gt)
    targets = find_targets(batch.gt, max_targets, engine)
    stats = target_stats(batch, targets, curve_levels=None, threshold=None, adaptive=False, mae=True, engine=engine)
    assert stats.background is not None and stats.error is not None, "counted for mae=True"
    outside, error = stats.background
    count = targets.count.double()
    ratio = outside.double() / (batch.num_pixels - outside).double()  # bg_fg_area_ratio
    factor = 1 / (count + ratio)
    # mae = bg_fg_area_ratio * |.|.sum() / bg_area * factor; empty background (boxes cover the image): no term
    background = torch.where(outside > 0, ratio * error / outside.clamp_min(1).double() * factor, 0.0)
    # mae += |.|.sum() / tgt_area * factor, for every target
    boxes = stats.error / targets.area.clamp_min(1).double() * factor.index_select(0, targets.image)
    return {"si_mae": background + per_image_sum(boxes, targets, batch.shape[0]), OVERFLOW: targets.overflow}


def _si_mae_update(pred: InputMaps, gt: InputMaps, normalize: bool, max_targets: int,
                   validate_args: bool, engine: host_reads.Engine = "auto") -> dict[str, Tensor]:
    """``{"si_mae": sum over images, SAMPLES: image count, OVERFLOW: images over max_targets}`` of a batch."""
    batches = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
    sums, count = sum_per_image(lambda batch: _si_mae_per_image(batch, max_targets, engine), batches)
    return {**sums, SAMPLES: count}


def si_mae(pred: InputMaps, gt: InputMaps, *, normalize: bool = False, max_targets: int = DEFAULT_MAX_TARGETS,
           validate_args: bool = True) -> Tensor:
    r"""Size-invariant MAE (``SizeInvarianceMAE``): each target's box and the background weighted alike.

    Per image :math:`\frac{1}{K + r}(r\,\mathrm{MAE}_{outside} + \sum_k \mathrm{MAE}_{box_k})`,
    :math:`r = |outside| / (N - |outside|)`; plain MAE without foreground; then the mean over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        max_targets: target slots per image off CPU (more raises a ``ValueError``); no bound on CPU.
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 (lower is better).

    Examples:
        >>> gt = torch.zeros(1, 16, 24, dtype=torch.bool); gt[0, 2:10, 2:10] = True
        >>> pred = gt.double(); pred[0, 2:10, 2:6] = 0.5  # half of the object at 0.5
        >>> si_mae(pred, gt)  # the box's MAE 0.25 and the background's 0, weighted 1 : 5 (r = 320 / 64)
        tensor(0.0417, dtype=torch.float64)
    """
    check_max_targets(max_targets)
    stats = _si_mae_update(pred, gt, normalize, max_targets, validate_args)
    return _si_mae_compute(stats["si_mae"], stats[SAMPLES], stats[OVERFLOW], max_targets)


def _si_mae_compute(total: Tensor, count: Tensor, overflow: Tensor, max_targets: int) -> Tensor:
    """Dataset SI-MAE: the mean of per-image values (a ``ValueError`` if an image overflowed ``max_targets``)."""
    check_overflow(overflow, max_targets)
    return mean_over_images(total, count)
