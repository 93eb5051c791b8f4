r"""COCO AP and AR of a weighted multiset of images, from the kept matching statistics (no image matched again).

A bootstrap resample of images is a multiset: image ``i`` drawn ``w_i`` times. Its AP is the AP of the dataset
holding ``w_i`` copies of image ``i`` — the copies keep their matching (matching is per image), so only
``accumulate`` changes, and it only needs weighted counts:

- ``npig`` of a (category, area range) is :math:`\sum_i w_i \, npig_i` (a matrix product with the per-image
  counts);
- the detections are sorted **once** by (category, -score, image, source, rank in the image) — the reference's
  order — and per (area range, IoU threshold) the cumulative true positives and counted detections are cumulative
  sums of :math:`w_{image(d)}` over that order (restarted at each category), read at the true positives: a
  detection drawn ``w`` times stands for ``w`` adjacent copies, and of a run of copies of a true positive only the
  last can hold the interpolated precision of a recall bin (it has the highest recall and precision of the run);
  a detection of weight 0 adds a point dominated by an earlier one, so it changes nothing;
- the interpolated precision is the scatter-max / suffix-max of
  :mod:`~nobg_metrics.functional.instance.accumulate`; the summary values average the valid cells as
  :mod:`~nobg_metrics.functional.instance.summary` does.

**Tie rule.** The copies of a detection are adjacent: equal scores are ordered by (image, rank in the image,
copy). This is the order of the dataset that holds the copies of each drawn image under consecutive new image ids
in image order, except where one image holds two detections of one category with the same score (there that
dataset interleaves the copies: d, e, d, e; here d, d, e, e). pycocotools has no notion of resampling: this
rule is ours; with every :math:`w_i = 1` the values are the exact AP.

Several results on the same images can be pooled (``sources``): unit ``s * n + i`` is image ``i`` of source
``s``; with weights that give each image to one source only, the values are those of the mixed results file
(the paired swap test).

COCO protocol only (LVIS's per-image cap and frequency groups are not resampled here).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.functional.instance.matching import ABSENT, FP, TP, stable_order
from nobg_metrics.functional.instance.options import AREA_NAMES, InstanceOptions

__all__ = ["ResamplingRecords", "resampling_records", "weighted_summary"]

_EPS = 2.0**-52  # np.spacing(1), as accumulate
_BATCH_ELEMENTS = 1 << 23
"""Weights times detections held at once (a few arrays of this many float64)."""


class ResamplingRecords(NamedTuple):
    """The pooled statistics, sorted once. ``units``: ``S * n``; ``category`` / ``unit`` / ``cap_rank``
    :math:`(N,)` int64 in the sorted order; ``outcomes`` :math:`(N, A, T)` int8; ``gt_table`` :math:`(U, K A)`
    float64 the per-unit ``npig``; ``num_categories`` ``K``."""

    units: int
    category: Tensor
    unit: Tensor
    cap_rank: Tensor
    outcomes: Tensor
    gt_table: Tensor
    num_categories: int


def resampling_records(sources: Sequence[Mapping[str, Tensor]], images: int) -> ResamplingRecords:
    """Pool and sort the statistics of one or more results on the same ``images`` images.

    Args:
        sources: per result, the metric's states (``det_scores``, ``det_labels``, ``det_keys``, ``det_outcomes``,
            ``gt_labels``, ``gt_counted``) and ``det_image`` :math:`(N,)`, ``gt_image`` :math:`(M,)` int64 image
            indices in ``[0, images)``, numbered in image-key order (the reference's tie order).
        images: ``n``, the images (units) of one result.

    Returns:
        :class:`ResamplingRecords` with ``units = len(sources) * images``.
    """
    labels = torch.cat([s["det_labels"] for s in sources])
    classes = torch.unique(torch.cat([labels, *[s["gt_labels"] for s in sources]]), sorted=True)
    k = classes.shape[0]
    unit = torch.cat([s["det_image"] + index * images for index, s in enumerate(sources)])
    source = torch.cat([torch.full_like(s["det_image"], index) for index, s in enumerate(sources)])
    image = torch.cat([s["det_image"] for s in sources])
    scores = torch.cat([s["det_scores"] for s in sources])
    keys = torch.cat([s["det_keys"] for s in sources])
    category = torch.searchsorted(classes, labels)
    order = stable_order(category, -(scores + 0.0), image, source, keys[:, 2])
    outcomes = torch.cat([s["det_outcomes"] for s in sources])
    areas = outcomes.shape[1] if outcomes.ndim == 3 else len(AREA_NAMES)
    table = torch.zeros((len(sources) * images, k * areas), dtype=torch.float64, device=labels.device)
    for index, s in enumerate(sources):
        gt_category = torch.searchsorted(classes, s["gt_labels"])
        cells = gt_category[:, None] * areas + torch.arange(areas, device=labels.device)[None, :]
        rows = (s["gt_image"] + index * images)[:, None].expand_as(cells)
        table.index_put_((rows.reshape(-1), cells.reshape(-1)), s["gt_counted"].double().reshape(-1),
                         accumulate=True)
    return ResamplingRecords(len(sources) * images, category[order], unit[order], keys[order, 3],
                             outcomes[order], table, k)


def _column_ap(records: ResamplingRecords, weights: Tensor, column: Tensor, included: Tensor, npig: Tensor,
               rec: Tensor, precision: bool) -> tuple[Tensor | None, Tensor]:
    """One (area range, threshold) column at one cap: ``(sum over recall thresholds of the interpolated
    precision or None without ``precision``, the true positives)`` per resample and category, :math:`(R, K)`
    float64. Running counts are float32: exact integers below :math:`2^{24}` (a resample's detections)."""
    rows, k, bins = weights.shape[0], records.num_categories, rec.shape[0]
    device = weights.device
    hit_all = included & (column == TP)
    tp_unit, tp_cat = records.unit[hit_all], records.category[hit_all]
    table = torch.zeros((records.units, k), dtype=torch.float64, device=device)
    table.index_put_((tp_unit, tp_cat), torch.ones_like(tp_unit, dtype=torch.float64), accumulate=True)
    totals = weights @ table  # true positives per resample and category: a matrix product
    if not precision:
        return None, totals
    index = (included & ((column == TP) | (column == FP))).nonzero().squeeze(1)
    hit = column[index] == TP
    category, unit = records.category[index], records.unit[index]
    count = index.shape[0]
    tp_at = hit.nonzero().squeeze(1)
    tp_category = category[tp_at]
    tp_unit = unit[tp_at]
    counted_start = torch.searchsorted(category, torch.arange(k, device=device))  # first entry of each category
    tp_start = torch.searchsorted(tp_category, torch.arange(k, device=device))
    sums = torch.zeros((rows, k), dtype=torch.float64, device=device)
    step = max(1, _BATCH_ELEMENTS // max(count, 1))
    single = weights.to(torch.float32)
    for first in range(0, rows, step):
        w = single[first:first + step]
        r = w.shape[0]
        zero = torch.zeros((r, 1), dtype=torch.float32, device=device)
        n_run = torch.cat([zero, w[:, unit].cumsum(1)], dim=1)  # counted detections, in the sorted order
        t_run = torch.cat([zero, w[:, tp_unit].cumsum(1)], dim=1)  # over the true positives only
        at = torch.arange(tp_at.shape[0], device=device)
        tp = (t_run[:, at + 1] - t_run[:, tp_start[tp_category]]).double()
        n = (n_run[:, tp_at + 1] - n_run[:, counted_start[tp_category]]).double()
        gts = npig[first:first + r][:, tp_category]
        rc = tp / torch.where(gts > 0, gts, torch.ones_like(gts))
        pr = tp / (n + _EPS)
        reach = torch.searchsorted(rec, rc, right=True)  # thresholds <= rc
        best = torch.zeros((r, k * (bins + 1)), dtype=torch.float64, device=device)
        best.scatter_reduce_(1, tp_category[None, :] * (bins + 1) + reach, pr, "amax")
        q = best.view(r, k, bins + 1)[:, :, 1:].flip(-1).cummax(dim=-1).values
        sums[first:first + r] = q.sum(-1)
    return sums, totals


def _mean(cells: list[tuple[Tensor, Tensor]]) -> Tensor:
    """Mean of the valid cells: ``(value sums (R, K), cells per valid (R, K) count)`` pairs; -1 with none."""
    total = sum(value for value, _ in cells)
    count = sum(n for _, n in cells)
    assert isinstance(total, Tensor) and isinstance(count, Tensor)
    return torch.where(count.sum(1) > 0, total.sum(1) / count.sum(1).clamp(min=1), torch.full_like(total[:, 0], -1.0))


def weighted_summary(records: ResamplingRecords, weights: Tensor, options: InstanceOptions) -> dict[str, Tensor]:
    """The COCO summary values (``map``, ``map_50``, ``map_75``, ``map_<area>``, ``mar_<k>``, ``mar_<area>``)
    of each weight vector.

    Args:
        records: from :func:`resampling_records`.
        weights: :math:`(R, U)` non-negative integer multiplicities (float64) of the units.
        options: the metric's options (COCO protocol, ``average="macro"``).

    Returns:
        ``name -> (R,)`` float64 (-1 where no cell is valid, as the summary).

    Examples:
        >>> states = {"det_scores": torch.tensor([0.9, 0.8], dtype=torch.float64), "det_labels": torch.tensor([1, 1]),
        ...           "det_keys": torch.tensor([[0, 0, 0, 0], [1, 0, 0, 0]]),
        ...           "det_outcomes": torch.tensor([TP, FP], dtype=torch.int8)[:, None, None].expand(2, 4, 10),
        ...           "gt_labels": torch.tensor([1]), "gt_counted": torch.ones(1, 4, dtype=torch.bool),
        ...           "det_image": torch.tensor([0, 1]), "gt_image": torch.tensor([0])}
        >>> from nobg_metrics.functional.instance.options import make_options
        >>> options = make_options("segm", 0.02, "coco", None, None, None, False, "macro", False, None)
        >>> values = weighted_summary(resampling_records([states], 2), torch.tensor([[1.0, 1.0], [0.0, 2.0]]),
        ...                           options)
        >>> [round(v, 12) for v in values["map"].tolist()], values["mar_100"].tolist()  # image 1 alone: no gt
        ([1.0, -1.0], [1.0, -1.0])
    """
    if options.lvis or options.average != "macro":
        raise ValueError("resampled AP follows the COCO protocol with average='macro'")
    weights = weights.to(records.category.device, torch.float64)
    rows, k = weights.shape[0], records.num_categories
    areas = len(AREA_NAMES)
    npig = (weights @ records.gt_table).view(rows, k, areas)
    rec = torch.tensor(sorted(options.rec_thresholds), dtype=torch.float64, device=weights.device)
    bins = rec.shape[0]
    present = records.outcomes[:, 0, 0] != ABSENT
    caps = options.max_detection_thresholds
    thresholds = options.iou_thresholds
    ap: dict[tuple[int, int], Tensor] = {}
    recall: dict[tuple[int, int, int], Tensor] = {}
    for m, cap in enumerate(caps):
        included = present & (records.cap_rank < cap)
        final = m == len(caps) - 1
        for a in range(areas):
            if not final and a > 0:
                continue
            for t in range(len(thresholds)):
                sums, totals = _column_ap(records, weights, records.outcomes[:, a, t], included, npig[:, :, a], rec,
                                          final)
                valid = npig[:, :, a] > 0
                recall[m, a, t] = torch.where(valid, totals / npig[:, :, a].clamp(min=1), torch.zeros_like(totals))
                if sums is not None:
                    ap[a, t] = torch.where(valid, sums, torch.zeros_like(sums))
    last = len(caps) - 1
    out: dict[str, Tensor] = {}

    def precision_mean(area: int, levels: list[int]) -> Tensor:
        valid = (npig[:, :, area] > 0).double()
        return _mean([(ap[area, t], valid * bins) for t in levels])

    def recall_mean(area: int, m: int) -> Tensor:
        valid = (npig[:, :, area] > 0).double()
        return _mean([(recall[m, area, t], valid) for t in range(len(thresholds))])

    every = list(range(len(thresholds)))
    out["map"] = precision_mean(0, every)
    for key, value in (("map_50", 0.5), ("map_75", 0.75)):
        levels = [t for t, thr in enumerate(thresholds) if thr == value]
        out[key] = precision_mean(0, levels) if levels else torch.full((rows,), -1.0, dtype=torch.float64)
    for a, name in enumerate(AREA_NAMES[1:], start=1):
        out[f"map_{name}"] = precision_mean(a, every)
    for m, cap in enumerate(caps):
        out[f"mar_{cap}"] = recall_mean(0, m)
    for a, name in enumerate(AREA_NAMES[1:], start=1):
        out[f"mar_{name}"] = recall_mean(a, last)
    return out
