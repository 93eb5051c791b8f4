r"""COCO AP and AR of a weighted multiset of images, from the kept matching statistics (no image matched again).

A bootstrap resample of images is a multiset: image ``i`` drawn ``w_i`` times. Its AP is the AP of the dataset
holding ``w_i`` copies of image ``i`` — the copies keep their matching (matching is per image), so only
``accumulate`` changes, and it only needs weighted counts:

- ``npig`` of a (category, area range) is :math:`\sum_i w_i \, npig_i` (a matrix product with the per-image
  counts);
- the detections are sorted **once** by (category, -score, image, source, rank in the image) — the reference's
  order — and per (area range, IoU threshold) column of the largest cap the cumulative true positives and counted
  detections are cumulative sums of :math:`w_{image(d)}` over that order (restarted at each category), read at
  the true positives: a detection drawn ``w`` times stands for ``w`` adjacent copies, and of a run of copies of a
  true positive only the last can hold the interpolated precision of a recall bin (it has the highest recall and
  precision of the run); a detection of weight 0 adds a point dominated by an earlier one, so it changes nothing;
- computed for a batch of resamples at once (docs/statistics.md "Instance AP"): a column's counted detections
  are its area range's at the first threshold plus / minus the few that change with the threshold; the records
  of all columns, laid end to end and cut into segments where a running sum is read, give two weight-free sparse
  matrices, and ``reads @ cumsum(segments @ W)`` every running count (integer sums: exact);
- the interpolated precision of a cell is a scatter-max of each true positive's precision into the recall bin it
  reaches and a running maximum over the bins, as in :mod:`~nobg_metrics.functional.instance.accumulate`; the
  summary values average the valid cells as :mod:`~nobg_metrics.functional.instance.summary` does.

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

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch
from torch import Tensor

from nobg_metrics.functional.instance.matching import ABSENT, FP, TP, stable_order
from nobg_metrics.functional.instance.options import AREA_NAMES, InstanceOptions

__all__ = ["ResamplingRecords", "resampling_records", "weighted_summary"]

_EPS = 2.0**-52  # np.spacing(1), as accumulate
_BATCH_BYTES = 1 << 28
"""Working memory of one batch of resamples (they are evaluated a batch at a time)."""
_SINGLE_EXACT = 2.0**24
"""Running sums of integer weights are exact in float32 below this; float64 from it on."""


class ResamplingRecords(NamedTuple):
    """The pooled statistics, sorted once. ``units``: ``S * n``; ``category`` / ``unit`` / ``cap_rank``
    :math:`(N,)` int64 in the sorted order; ``outcomes`` :math:`(N, A, T)` int8; ``gt_table`` :math:`(U, K A)`
    float64 the per-unit ``npig``; ``num_categories`` ``K``; ``plans``: the weight-free indexing that
    :func:`weighted_summary` builds on its first call, kept per detection caps for the next batches."""

    units: int
    category: Tensor
    unit: Tensor
    cap_rank: Tensor
    outcomes: Tensor
    gt_table: Tensor
    num_categories: int
    plans: dict[tuple[int, ...], Any]


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
                             outcomes[order], table, k, {})


class _Plan(NamedTuple):
    """What :func:`weighted_summary` reads per resample, fixed by the records and the options (module notes).
    ``segments`` :math:`(Q, U)` sparse: the records of each segment of the running sums, per unit; ``reads``
    :math:`(2 J + G, Q)` sparse ±1: per true positive its true positives and counted detections so far, then
    per cell its true positives (of the running sums at the segment ends); ``tp_group`` :math:`(J,)` its
    (area, threshold, category) cell (of ``G``); ``tp_cell`` :math:`(J,)` its (category, area) ``npig`` cell;
    ``recall_table`` :math:`(U, C K)` true positives per unit of the smaller caps' columns."""

    segments: Tensor
    reads: Tensor
    tp_group: Tensor
    tp_cell: Tensor
    recall_table: Tensor


def _sparse(rows: Tensor, columns: Tensor, values: Tensor, shape: tuple[int, int]) -> Tensor:
    """A float32 CSR matrix of the summed ``(row, column, value)`` entries (small integers)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta" / invariant checks
        coo = torch.sparse_coo_tensor(torch.stack([rows, columns]), values.float(), shape,
                                      check_invariants=False).coalesce()
        return coo.to_sparse_csr()


def _plan(records: ResamplingRecords, options: InstanceOptions) -> _Plan:
    """Index the kept records once for every resample (no weight read)."""
    caps = options.max_detection_thresholds
    device, k, units = records.category.device, records.num_categories, records.units
    present = records.outcomes[:, 0, 0] != ABSENT
    keep = (present & (records.cap_rank < caps[-1])).nonzero().squeeze(1)
    category, unit, outcomes = records.category[keep], records.unit[keep], records.outcomes[keep]
    size, areas, levels = keep.shape[0], outcomes.shape[1], outcomes.shape[2]
    counted = (outcomes == TP) | (outcomes == FP)  # (N, A, T)
    base = counted[:, :, :1]
    blocks = [base.permute(1, 2, 0), (counted & ~base).permute(1, 2, 0), (base & ~counted).permute(1, 2, 0),
              (outcomes == TP).permute(1, 2, 0)]  # (A, 1 or T, N): area / column major, positions ascending
    keys = [block.reshape(-1).nonzero().squeeze(1) for block in blocks]  # (area * T' + t) * N + position
    offsets = [sum(key.shape[0] for key in keys[:b]) for b in range(len(keys))]
    stream = torch.cat([unit[key % size] for key in keys])  # run[i]: the weights of stream[:i] summed
    tp_key = keys[3]
    count = tp_key.shape[0]
    column, position = tp_key // size, tp_key % size
    first = torch.searchsorted(category, torch.arange(k, device=device))[category[position]]  # its category's start
    group = column * k + category[position]
    at = [offsets[3] + torch.arange(count, device=device) + 1, offsets[3] + torch.searchsorted(group, group)]
    area = column // levels
    for b, key in ((0, area), (1, column), (2, column)):
        at += [offsets[b] + torch.searchsorted(keys[b], key * size + position, right=True),
               offsets[b] + torch.searchsorted(keys[b], key * size + first)]
    groups = areas * levels * k
    cells = torch.arange(groups, device=device)
    at += [offsets[3] + torch.searchsorted(group, cells, right=True), offsets[3] + torch.searchsorted(group, cells)]
    ends, place = torch.unique(torch.cat(at), sorted=True, return_inverse=True)  # the run values read
    place = place.split([count] * 8 + [groups] * 2)
    inside = torch.arange(int(ends[-1]) if ends.numel() else 0, device=device)
    segments = _sparse(torch.searchsorted(ends, inside, right=True), stream[inside],
                       torch.ones_like(inside), (ends.shape[0], units))
    row = [torch.arange(count, device=device)] * 2 + [count + torch.arange(count, device=device)] * 6
    sign = torch.tensor([1, -1, 1, -1, 1, -1, -1, 1, 1, -1], device=device)  # tp, then base + added - removed
    reads = _sparse(torch.cat(row + [2 * count + cells] * 2), torch.cat(place), sign.repeat_interleave(
        torch.tensor([count] * 8 + [groups] * 2, device=device)), (2 * count + groups, ends.shape[0]))
    table = torch.zeros((units, (len(caps) - 1) * levels * k), dtype=torch.float64, device=device)
    hit = records.outcomes[:, 0, :] == TP  # (N, T) the smaller caps' recall columns (area "all")
    for m, cap in enumerate(caps[:-1]):
        index, t = (hit & (present & (records.cap_rank < cap))[:, None]).nonzero().unbind(1)
        table.index_put_((records.unit[index], (m * levels + t) * k + records.category[index]),
                         torch.ones_like(index, dtype=torch.float64), accumulate=True)
    return _Plan(segments, reads, group, category[position] * areas + area, table)


def _reached(rec: Tensor, rc: Tensor) -> Tensor:
    """How many recall thresholds are ``<= rc``: ``searchsorted(rec, rc, right=True)``; on an even grid of [0, 1]
    (COCO's) read from ``floor(rc (B - 1))`` and its two neighbours' comparisons (the same counts, faster)."""
    bins = rec.shape[0]
    grid = torch.linspace(0, 1, bins, dtype=torch.float64, device=rec.device)
    if bins < 2 or float((rec - grid).abs().max()) > 1e-9:
        return torch.searchsorted(rec, rc, right=True)
    padded = torch.cat([rec, rec.new_full((2,), torch.inf)])
    k = (rc * (bins - 1)).floor_().clamp_(0, bins - 1).long()  # thresholds 0..k-1 are <= rc, k+2.. are not
    return k + (padded.take(k) <= rc) + (padded.take(k + 1) <= rc)


def _precision_sums(plan: _Plan, weights: Tensor, npig: Tensor, rec: Tensor, groups: int
                    ) -> tuple[Tensor, Tensor]:
    """Per (area, threshold, category) cell of the largest cap: the sum over recall thresholds of the interpolated
    precision and the true positives, each :math:`(R, G)` float64. ``npig`` :math:`(R, K A)`. The counts are
    sums of integer weights: exact."""
    rows, bins, device = weights.shape[0], rec.shape[0], weights.device
    count, points = plan.tp_group.shape[0], plan.segments.shape[0]
    per_row = 8 * (2 * points + 2 * count + groups + 7 * count + 2 * groups * (bins + 1))
    step = min(max(1, _BATCH_BYTES // per_row), max(rows, 1))
    # the running sums are integers: exact in float32 below 2^24 (the largest is a resample's total)
    per_unit = torch.bincount(plan.segments.col_indices(), plan.segments.values(), minlength=weights.shape[1])
    totals = weights @ per_unit.double()
    single = rows == 0 or float(totals.max()) < _SINGLE_EXACT
    segments, reads = (plan.segments, plan.reads) if single else (plan.segments.double(), plan.reads.double())
    columns = weights.t().to(torch.float32 if single else torch.float64)
    sums = torch.empty((groups, rows), dtype=torch.float64, device=device)
    hits = torch.empty((groups, rows), dtype=torch.float64, device=device)
    npig_t = npig.t()
    # (cell, resample, bin): a true positive reaching r recall thresholds raises bin bins - r (the bins run
    # backwards, so the interpolated precision is a running maximum along the last axis; bin bins: none reached)
    cell = (plan.tp_group[:, None] * step + torch.arange(step, device=device)) * (bins + 1) + bins
    for first in range(0, rows, step):
        w = columns[:, first:first + step].contiguous()  # (U, r)
        r = w.shape[1]
        run = torch.cumsum(segments @ w, 0)  # (Q, r) the running sums where they are read
        read = (reads @ run).double()
        tp, n = read[:count], read[count:2 * count]
        rc = tp / npig_t[:, first:first + r].clamp(min=1).index_select(0, plan.tp_cell)  # integers: 0 as 1
        pr = tp / (n + _EPS)
        reach = _reached(rec, rc)
        target = cell[:, :r] - reach if r == step else \
            (plan.tp_group[:, None] * r + torch.arange(r, device=device)) * (bins + 1) + bins - reach
        best = torch.zeros(groups * (bins + 1) * r, dtype=torch.float64, device=device)
        best.scatter_reduce_(0, target.reshape(-1), pr.reshape(-1), "amax")
        sums[:, first:first + r] = best.view(groups, r, bins + 1)[:, :, :bins].cummax(-1).values.sum(-1)
        hits[:, first:first + r] = read[2 * count:]
    return sums.t(), hits.t()


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
    caps = options.max_detection_thresholds
    thresholds = options.iou_thresholds
    steps = len(options.iou_thresholds)
    if tuple(caps) not in records.plans:  # weight-free: built once per records
        records.plans[tuple(caps)] = _plan(records, options)
    plan = records.plans[tuple(caps)]
    sums, hits = _precision_sums(plan, weights, npig.view(rows, k * areas), rec, areas * steps * k)
    smaller = (weights @ plan.recall_table).view(rows, len(caps) - 1, steps, k)
    ap: dict[tuple[int, int], Tensor] = {}
    recall: dict[tuple[int, int, int], Tensor] = {}
    for m in range(len(caps)):
        for a in range(areas if m == len(caps) - 1 else 1):
            valid = npig[:, :, a] > 0
            for t in range(steps):
                cell = (a * steps + t) * k
                totals = hits[:, cell:cell + k] if m == len(caps) - 1 else smaller[:, m, t]
                recall[m, a, t] = torch.where(valid, totals / npig[:, :, a].clamp(min=1), torch.zeros_like(totals))
                if m == len(caps) - 1:
                    ap[a, t] = torch.where(valid, sums[:, cell:cell + k], torch.zeros_like(totals))
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
