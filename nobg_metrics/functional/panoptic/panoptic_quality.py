r"""Panoptic quality (Kirillov et al., CVPR 2019), Boundary PQ (Cheng et al., CVPR 2021) and modified PQ (Porzi
et al., *Seamless Scene Segmentation*, CVPR 2019), as torchmetrics or as panopticapi / boundary-iou-api compute them.

.. math::
    PQ_c = \frac{\sum_{(g, p) \in TP_c} IoU(g, p)}{|TP_c| + \frac12 |FP_c| + \frac12 |FN_c|}, \quad
    SQ_c = \frac{\sum_{TP_c} IoU}{|TP_c|}, \quad RQ_c = \frac{|TP_c|}{|TP_c| + \frac12 |FP_c| + \frac12 |FN_c|}

A (gt, prediction) pair of one image and category is a true positive when its IoU exceeds 0.5 (strictly; the
unions leave out the prediction's pixels on gt void); ``iou_type="boundary"`` uses ``min(mask IoU, boundary
IoU)`` with the boundary bands of ``mask_to_boundary`` at ``dilation_ratio`` of the image diagonal. Crowd gt
segments (``iscrowd``) are never matched; an unmatched prediction is no false positive when more than half of it
lies on gt void and on its category's crowd region. ``rules="torchmetrics"`` (the default) adds torchmetrics'
two rules on *prediction* void: the union also leaves out the gt's pixels on prediction void, and an unmatched
gt lying mostly on prediction void is no false negative; ``rules="panopticapi"`` is ``pq_compute``. Modified PQ
scores the stuff classes without matching: :math:`PQ^\dagger_c = \sum IoU / |gt segments_c|` over every
same-category pair. The per-image rules are those of :mod:`nobg_metrics.functional.panoptic.segments`; the input
convention that of :mod:`nobg_metrics.functional.panoptic.inputs`. Dataset values (panopticapi
``PQStat.pq_average``, torchmetrics' means): the mean of the per-class values over the classes with
TP + FP + FN > 0 — all, things, stuff.

Defined values: a class with TP + FP + FN = 0 scores 0 and is left out of the means; a mean over no class (no
data, or no thing / stuff class with any segment) is NaN with ``rules="torchmetrics"`` (torchmetrics), **0.0 with
n = 0** with ``rules="panopticapi"`` (panopticapi raises ``ZeroDivisionError`` there); SQ of a class with no TP
is 0.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import check_flag, check_number, check_option
from nobg_metrics.functional.panoptic.inputs import (
    Categories,
    PanopticMaps,
    prepare_panoptic,
)
from nobg_metrics.functional.panoptic.outputs import PanopticOutput, shaped
from nobg_metrics.functional.panoptic.segments import (
    IOU_LOW_BITS,
    IOU_SCALE_BITS,
    STAT_NAMES,
    SegmentBatch,
    segment_statistics,
)
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.band_width import dilation_radius

__all__ = ["modified_panoptic_quality", "panoptic_quality"]

PanopticIouType = Literal["segm", "boundary"]
PanopticRules = Literal["torchmetrics", "panopticapi"]
"""Whose rules score the pairs (module notes): torchmetrics' ``PanopticQuality`` or panopticapi's ``pq_compute``."""
GROUPS = (("", None), ("_things", True), ("_stuff", False))
"""The dataset values' key suffixes: all classes (``pq``), things (``pq_things``), stuff (``pq_stuff``)."""


def _check_panoptic_args(iou_type: str, dilation_ratio: float, output: str, return_sq_and_rq: bool,
                         return_per_class: bool, allow_unknown_preds_category: bool, engine: str = "auto",
                         rules: str = "torchmetrics") -> None:
    check_option("iou_type", iou_type, PanopticIouType)
    check_option("engine", engine, host_reads.Engine)
    check_option("rules", rules, PanopticRules)
    check_number("dilation_ratio", dilation_ratio, low=0.0)
    check_option("output", output, PanopticOutput)
    for name, value in (("return_sq_and_rq", return_sq_and_rq), ("return_per_class", return_per_class),
                        ("allow_unknown_preds_category", allow_unknown_preds_category)):
        check_flag(name, value)
    if output != "tensor" and (return_sq_and_rq or return_per_class):
        raise ValueError(f"`return_sq_and_rq` and `return_per_class` choose torchmetrics' tensor layout: pass "
                         f"output='tensor' with them (output={output!r} returns every value)")


def batch_statistics(batch: SegmentBatch, num_categories: int, iou_type: PanopticIouType,
                     dilation_ratio: float, *, with_areas: bool = False, engine: host_reads.Engine = "auto",
                     rules: PanopticRules = "panopticapi", modified: Tensor | None = None) -> dict[str, Tensor]:
    """:data:`~nobg_metrics.functional.panoptic.segments.STAT_NAMES` -> :math:`(C,)` int64 of one equal-size batch
    (and the slot areas, see :func:`~nobg_metrics.functional.panoptic.segments.segment_statistics`, which also
    explains ``rules`` and ``modified``)."""
    height, width = batch.gt.shape[-2:]
    radius = dilation_radius(height, width, dilation_ratio) if iou_type == "boundary" else None
    return segment_statistics(batch, num_categories, radius, with_areas=with_areas, engine=engine, rules=rules,
                              modified=modified)


def _panoptic_update(preds: PanopticMaps, target: PanopticMaps, iscrowd: PanopticMaps | None,
                     categories: Categories, iou_type: PanopticIouType, dilation_ratio: float,
                     allow_unknown_preds_category: bool, validate_args: bool,
                     engine: host_reads.Engine = "auto", rules: PanopticRules = "panopticapi",
                     modified: bool = False) -> dict[str, Tensor]:
    """Sufficient statistics of a batch: :data:`STAT_NAMES` -> :math:`(C,)` int64 per-category sums
    (``modified``: the stuff categories as modified PQ scores them)."""
    batches = prepare_panoptic(preds, target, iscrowd, categories, allow_unknown_preds_category, validate_args,
                               engine, planar=iou_type == "boundary")
    totals: dict[str, Tensor] = {}
    for batch in batches:  # one round per image size
        stuff = ~categories.thing_mask(batch.gt.device) if modified else None
        stats = batch_statistics(batch, len(categories.ids), iou_type, dilation_ratio, engine=engine, rules=rules,
                                 modified=stuff)
        totals = stats if not totals else {name: totals[name] + stats[name] for name in STAT_NAMES}
    return totals


def iou_sums(iou_sum_high: Tensor, iou_sum_low: Tensor) -> Tensor:
    """The float64 IoU sums of the exact limbs: ``(high * 2^26 + low) * 2^-53`` (one rounding)."""
    return (iou_sum_high.double() * 2.0**IOU_LOW_BITS + iou_sum_low.double()) * 2.0**-IOU_SCALE_BITS


def _panoptic_compute(iou_sum_high: Tensor, iou_sum_low: Tensor, true_positives: Tensor, false_positives: Tensor,
                      false_negatives: Tensor, isthing: Tensor, classes: Tensor, empty: float = 0.0
                      ) -> dict[str, Tensor]:
    """panopticapi's result as a flat dict of float64 tensors (``n``: int64); a mean over no class is ``empty``
    (panopticapi raises there, torchmetrics returns NaN).

    Returns:
        ``pq``, ``sq``, ``rq``, ``n`` (all classes), the same with ``_things`` and ``_stuff``, and
        ``pq_per_class``, ``sq_per_class``, ``rq_per_class`` :math:`(C,)` with ``classes`` :math:`(C,)` (the
        category ids in that order).
    """
    iou = iou_sums(iou_sum_high, iou_sum_low)
    tp, fp, fn = true_positives.double(), false_positives.double(), false_negatives.double()
    present = (true_positives + false_positives + false_negatives) > 0
    denominator = torch.where(present, tp + 0.5 * fp + 0.5 * fn, 1.0)
    # panopticapi: pq = iou / (tp + 0.5 fp + 0.5 fn); sq = iou / tp if tp else 0; rq = tp / (tp + 0.5 fp + 0.5 fn)
    per_class = {
        "pq": torch.where(present, iou / denominator, 0.0),
        "sq": torch.where(true_positives > 0, iou / tp.clamp(min=1), 0.0),
        "rq": torch.where(present, tp / denominator, 0.0),
    }
    out: dict[str, Tensor] = {}
    for suffix, things in GROUPS:
        member = present if things is None else present & (isthing if things else ~isthing)
        n = member.sum()
        for name, values in per_class.items():
            total = torch.where(member, values, 0.0).sum()
            out[name + suffix] = torch.where(n > 0, total / n.clamp(min=1), empty)
        out["n" + suffix] = n
    for name, values in per_class.items():
        out[f"{name}_per_class"] = values
    out["classes"] = classes
    return out


def _score(preds: PanopticMaps, target: PanopticMaps, things: Collection[int], stuffs: Collection[int],
           allow_unknown_preds_category: bool, iscrowd: PanopticMaps | None, iou_type: PanopticIouType,
           dilation_ratio: float, rules: PanopticRules, category_order: Sequence[int] | None, validate_args: bool,
           engine: host_reads.Engine, modified: bool) -> dict[str, Tensor]:
    """The flat dict of values of one call (:func:`_panoptic_compute`)."""
    categories = Categories.from_sets(things, stuffs, category_order)
    stats = _panoptic_update(preds, target, iscrowd, categories, iou_type, dilation_ratio,
                             allow_unknown_preds_category, validate_args, engine, rules, modified)
    device = stats["true_positives"].device
    return _panoptic_compute(stats["iou_sum_high"], stats["iou_sum_low"], stats["true_positives"],
                             stats["false_positives"], stats["false_negatives"], categories.thing_mask(device),
                             torch.tensor(categories.ids, dtype=torch.int64, device=device),
                             empty=float("nan") if rules == "torchmetrics" else 0.0)


def panoptic_quality(
    preds: PanopticMaps, target: PanopticMaps, things: Collection[int], stuffs: Collection[int],
    allow_unknown_preds_category: bool = False, return_sq_and_rq: bool = False, return_per_class: bool = False, *,
    iscrowd: PanopticMaps | None = None, iou_type: PanopticIouType = "segm", dilation_ratio: float = 0.02,
    output: PanopticOutput = "tensor", rules: PanopticRules = "torchmetrics",
    category_order: Sequence[int] | None = None, validate_args: bool = True, engine: host_reads.Engine = "auto",
) -> Tensor | dict[str, Any]:
    """PQ (or Boundary PQ) of a batch; torchmetrics' ``panoptic_quality`` with the same positional arguments
    (module notes).

    Args:
        preds: :math:`(B, *spatial, 2)` integer ``(category_id, instance_id)`` per point (images :math:`(B, H, W, 2)`,
            point clouds :math:`(B, N, 2)`, volumes), or a list of :math:`(*spatial, 2)` tensors.
        target: the same layout; categories that are neither things nor stuffs are void.
        things: category ids of the things.
        stuffs: category ids of the stuffs (their instance ids are ignored).
        allow_unknown_preds_category: read prediction points of unknown categories as void instead of raising.
        return_sq_and_rq: with ``output="tensor"``: ``[pq, sq, rq]``.
        return_per_class: with ``output="tensor"``: per-class values (in ``category_order``).
        iscrowd: :math:`(B, *spatial)` bool marks of the crowd gt segments' points (or a list).
        iou_type: ``"segm"`` (mask IoU) or ``"boundary"`` (``min(mask IoU, boundary IoU)``; 2-D images only).
        dilation_ratio: band width as a fraction of the image diagonal (0.02 COCO, 0.005 Cityscapes).
        output: ``"tensor"`` (torchmetrics' layout), ``"dict"`` (every value as a flat dict of tensors) or
            ``"panopticapi"`` (``pq_compute``'s nested dict), see :mod:`~nobg_metrics.functional.panoptic.outputs`.
        rules: ``"torchmetrics"`` or ``"panopticapi"`` (module notes).
        category_order: every category id of ``things`` and ``stuffs`` once, the order of the per-class values;
            default: the things sorted, then the stuffs sorted (torchmetrics' order).
        validate_args: run the checks that read the data back (unknown categories, instance ids, crowd marks).
        engine: ``"auto"`` (data-sized tables on CPU, sync-free elsewhere), ``"data_sized"`` (host reads size the
            tables) or ``"fixed"`` (no host read: what a GPU runs by default); the values are the same.

    Returns:
        float64: scalar PQ; :math:`(3,)` ``[pq, sq, rq]``; :math:`(1, C)` per-class PQ; :math:`(C, 3)` with both
        flags; or the dict of ``output``.

    Examples:
        >>> import torch
        >>> target = torch.zeros(1, 4, 6, 2, dtype=torch.long)
        >>> target[0, :, :3, 0] = 1                      # a thing of category 1 on the left, stuff 7 elsewhere
        >>> target[0, :, 3:, 0] = 7
        >>> preds = target.clone()
        >>> preds[0, 0, 3, 0] = 1                        # one stuff pixel predicted as the thing
        >>> panoptic_quality(preds, target, {1}, {7})
        tensor(0.9199, dtype=torch.float64)
        >>> panoptic_quality(preds, target, {1}, {7}, return_sq_and_rq=True)
        tensor([0.9199, 0.9199, 1.0000], dtype=torch.float64)
        >>> panoptic_quality(preds, target, {1}, {7}, output="panopticapi", rules="panopticapi")["Things"]
        {'pq': 0.9230769230769231, 'sq': 0.9230769230769231, 'rq': 1.0, 'n': 1}
    """
    _check_panoptic_args(iou_type, dilation_ratio, output, return_sq_and_rq, return_per_class,
                         allow_unknown_preds_category, engine, rules)
    values = _score(preds, target, things, stuffs, allow_unknown_preds_category, iscrowd, iou_type, dilation_ratio,
                    rules, category_order, validate_args, engine, modified=False)
    return shaped(values, output, return_sq_and_rq, return_per_class)


def modified_panoptic_quality(
    preds: PanopticMaps, target: PanopticMaps, things: Collection[int], stuffs: Collection[int],
    allow_unknown_preds_category: bool = False, *, iscrowd: PanopticMaps | None = None,
    iou_type: PanopticIouType = "segm", dilation_ratio: float = 0.02, output: PanopticOutput = "tensor",
    rules: PanopticRules = "torchmetrics", category_order: Sequence[int] | None = None, validate_args: bool = True,
    engine: host_reads.Engine = "auto",
) -> Tensor | dict[str, Any]:
    r"""Modified PQ (Porzi et al.): the things as :func:`panoptic_quality` scores them, each stuff class as
    :math:`\sum IoU / |gt segments|` over all its same-category pairs (no IoU > 0.5 matching, no FP / FN);
    torchmetrics' ``modified_panoptic_quality`` with the same positional arguments.

    Args:
        preds: as :func:`panoptic_quality`; so are ``target``, ``things``, ``stuffs``,
            ``allow_unknown_preds_category`` and the keyword options.
        target: :math:`(B, *spatial, 2)`, or a list.
        things: category ids of the things.
        stuffs: category ids of the stuffs (scored the modified way).
        allow_unknown_preds_category: read prediction points of unknown categories as void instead of raising.
        iscrowd: :math:`(B, *spatial)` bool crowd marks, or ``None``.
        iou_type: ``"segm"`` or ``"boundary"`` (2-D images only).
        dilation_ratio: band width as a fraction of the image diagonal.
        output: ``"tensor"`` (torchmetrics: the scalar mean), ``"dict"`` or ``"panopticapi"``.
        rules: ``"torchmetrics"`` or ``"panopticapi"`` (the void rules, module notes).
        category_order: the order of the per-class values.
        validate_args: run the checks that read the data back.
        engine: ``"auto"``, ``"data_sized"`` or ``"fixed"``; the values are the same.

    Returns:
        a float64 scalar (``output="tensor"``) or the dict of ``output``.

    Examples:
        >>> import torch
        >>> preds = torch.tensor([[[0, 0], [0, 1], [6, 0], [7, 0], [0, 2], [1, 0]]])
        >>> target = torch.tensor([[[0, 1], [0, 0], [6, 0], [7, 0], [6, 0], [255, 0]]])
        >>> modified_panoptic_quality(preds, target, {0, 1}, {6, 7})
        tensor(0.7667, dtype=torch.float64)
    """
    _check_panoptic_args(iou_type, dilation_ratio, output, False, False, allow_unknown_preds_category, engine, rules)
    values = _score(preds, target, things, stuffs, allow_unknown_preds_category, iscrowd, iou_type, dilation_ratio,
                    rules, category_order, validate_args, engine, modified=True)
    return shaped(values, output)
