"""pycocotools ``COCOeval.accumulate`` (and LVIS ``LVISEval.accumulate``) on the per-detection statistics.

Per category ``k``, area range ``a`` and max-detections ``m`` the reference concatenates, in image order, each
image's first ``m`` detections (by score; LVIS: every detection, the per-image cap having been applied before),
sorts them with ``np.argsort(-scores, kind="mergesort")`` and, per IoU threshold::

    tps = dtm & ~dtIg;  fps = ~dtm & ~dtIg                    # ignored detections count neither way
    tp, fp = cumsum(tps), cumsum(fps)                         # float64
    rc = tp / npig;  pr = tp / (fp + tp + np.spacing(1))      # npig: non-ignored gts; npig = 0 -> cell stays -1
    pr[i - 1] = max(pr[i - 1], pr[i]) from the right           # interpolated precision
    inds = np.searchsorted(rc, recThrs, side="left")          # first rank reaching each recall threshold
    q[r] = pr[inds[r]] until the first inds[r] past the end    # the rest stay 0
    recall = rc[-1] (0 without detections)

Here all categories at once: one stable sort by (category, -score, image key, rank in image) — the order the
reference's concatenation and stable sort give ties — then, per (area range, max dets), cumulative sums over
that order restarted at each category (exact integer counts, divided in float64 as numpy divides). The
interpolated precision at recall threshold ``r`` is ``max{pr[i] : rc[i] >= r}`` (``rc`` is non-decreasing, so
``i >= inds[r]`` iff ``rc[i] >= recThrs[r]``): a scatter-max of each detection's ``pr`` into the bin of the
thresholds it reaches, then a suffix max over the bins — no per-category loop. Only a true positive can hold a
bin's maximum (a later entry of the same recall has a lower precision), so without the extended summary only the
true positives are scattered, and precision is made at the last max-detections cap only (the one the summary
values read; the other caps give their recall).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.functional.instance.matching import (
    ABSENT,
    FP,
    IGNORED,
    TP,
    descending_key,
    segment_ranks,
    stable_order,
)

_EPS = 2.0**-52  # np.spacing(1)
assert {TP, FP} == {1, 2} and {IGNORED, ABSENT} == {0, 3}  # _sparse_cells reads the counted codes by value


class Accumulated(NamedTuple):
    """``precision`` :math:`(T, R, K, A, M)`, ``recall`` :math:`(T, K, A, M)`, ``scores`` :math:`(T, R, K, A, M)`
    (or ``None``) float64, -1 where a category has no non-ignored gt; ``gt_counts`` :math:`(K, A)` int64 ``npig``."""

    precision: Tensor
    recall: Tensor
    scores: Tensor | None
    gt_counts: Tensor


def accumulate(scores: Tensor, category: Tensor, order_keys: Tensor, cap_rank: Tensor, outcomes: Tensor,
               gt_category: Tensor, gt_counted: Tensor, num_categories: int, rec_thresholds: Tensor,
               max_detections: tuple[int, ...], with_scores: bool = False,
               every_precision: bool | None = None) -> Accumulated:
    """Precision and recall of every (IoU threshold, category, area range, max dets) cell.

    Args:
        scores: :math:`(N,)` float64 detection scores. category: :math:`(N,)` int64 in ``[0, K)``.
        order_keys: :math:`(N, 3)` int64 (image key, DDP rank, rank in the image): the tie order after the score.
        cap_rank: :math:`(N,)` int64 the rank the ``max_detections`` caps apply to (COCO: in the image and
            category; LVIS: in the image).
        outcomes: :math:`(N, A, T)` int8 codes of :mod:`~nobg_metrics.functional.instance.matching`.
        gt_category: :math:`(M,)` int64 in ``[0, K)``; gt_counted: :math:`(M, A)` bool.
        num_categories: ``K``. rec_thresholds: :math:`(R,)` float64 (any order). max_detections: ``M`` caps.
        with_scores: also fill ``scores`` (``accumulate``'s score at each recall threshold).
        every_precision: fill ``precision`` (and ``scores``) at every max-detections cap; ``False``: at the last
            cap only — the only one the summary values read — the other caps' cells being NaN (their recall is
            filled either way). Default: ``with_scores`` (the extended summary returns the whole array).

    Returns:
        :class:`Accumulated`.
    """
    device = scores.device
    count, areas, levels = outcomes.shape
    bins = rec_thresholds.shape[0]
    order = stable_order(*_primary_keys(category, scores), *_tie_keys(order_keys))
    category, cap_rank, outcomes, sorted_scores = category[order], cap_rank[order], outcomes[order], scores[order]
    gt_counts = torch.zeros((num_categories, areas), dtype=torch.int64, device=device)
    gt_counts.index_add_(0, gt_category, gt_counted.long())
    per_category = torch.zeros(num_categories, dtype=torch.int64, device=device)
    per_category.index_add_(0, category, torch.ones_like(category))
    ends = per_category.cumsum(0)  # one past the last sorted position of each category
    starts = ends - per_category  # first sorted position of each category
    rec_sorted, rec_order = torch.sort(rec_thresholds)
    ascending = bool((rec_order == torch.arange(bins, device=device)).all())  # a host read: compute runs once
    every = with_scores if every_precision is None else every_precision
    precision = torch.full((levels, bins, num_categories, areas, len(max_detections)), torch.nan if not every else 0.0,
                           dtype=torch.float64, device=device)  # NaN: the caps without precision (class notes)
    recall = torch.empty((levels, num_categories, areas, len(max_detections)), dtype=torch.float64, device=device)
    found_scores = torch.empty_like(precision) if with_scores else None
    positions = torch.arange(count, device=device)
    present = outcomes[:, 0, 0] != ABSENT
    columns = outcomes.reshape(count, areas * levels).T.contiguous()  # row a * T + t: every area range and threshold
    npig = gt_counts.repeat_interleave(levels, dim=1)  # (K, A * T)
    unsort = rec_order.argsort()
    entries: tuple[Tensor, Tensor] | None = None
    if not with_scores:  # (row, detection) of every true positive: a data-sized selection (compute runs once)
        entries = _true_positives(outcomes, columns, present)
    for m, cap in enumerate(max_detections):  # a bounded number of rounds: one per max-detections cap
        included = present & (cap_rank < cap)
        if not every and entries is not None and m < len(max_detections) - 1:  # the recall only: tp[-1] / npig
            recall[..., m] = _recall_only((entries[0] * num_categories + category[entries[1]], entries[1]),
                                          included, gt_counts, levels)
            if found_scores is not None:
                found_scores[..., m] = torch.nan
            continue
        detections = torch.zeros(num_categories, dtype=torch.int64, device=device)
        detections.index_add_(0, category, included.long())  # nd: the cell's ranked detections
        q, rc, first = _cells(columns, included, category, (starts, ends), npig, num_categories, rec_sorted,
                              positions, entries)
        exists = (detections > 0)[None, None, :] & (rc[:, None, :] >= rec_thresholds[None, :, None])
        # the reference stops filling at the first miss (with ascending thresholds, `exists` stops there already)
        reached = exists if ascending else exists.long().cumprod(dim=1).bool()
        # masks by products (q, rc finite and >= 0; torch.where is several times slower on CPU)
        q = (q if ascending else q[:, unsort]) * reached
        valid = (npig > 0).T  # (A * T, K)
        q = q * valid[:, None] - (~valid)[:, None].to(q.dtype)  # -1 where no gt
        rc = rc * valid - (~valid).to(rc.dtype)
        precision[..., m] = q.view(areas, levels, bins, num_categories).permute(1, 2, 3, 0)
        recall[..., m] = rc.view(areas, levels, num_categories).permute(1, 2, 0)
        if found_scores is not None and first is not None:
            first = first[:, unsort]
            at = sorted_scores[first.clamp(max=max(count - 1, 0))] if count else torch.zeros_like(q)
            at = torch.where(reached & (first < count), at, torch.zeros_like(at))
            at = torch.where(valid[:, None], at, torch.full_like(at, -1.0))
            found_scores[..., m] = at.view(areas, levels, bins, num_categories).permute(1, 2, 3, 0)
    return Accumulated(precision, recall, found_scores, gt_counts)


def _primary_keys(category: Tensor, scores: Tensor) -> tuple[Tensor, ...]:
    """The sort keys (category, score descending): one int64 key of the category and the score's float32 bits
    where every score is a float32 value (what detectors give; a host read), else the two keys."""
    single = (scores + 0.0).to(torch.float32)  # + 0.0: -0.0 becomes 0.0
    if scores.numel() == 0 or not bool((single.to(torch.float64) == scores).all()):  # NaN too: never equal
        return category, descending_key(scores)
    bits = single.view(torch.int32)
    ascending = torch.where(bits < 0, bits ^ 0x7FFF_FFFF, bits)  # the float order
    return (category * 2**32 + ((~ascending).to(torch.int64) + 2**31),)


def _tie_keys(order_keys: Tensor) -> tuple[Tensor, ...]:
    """The tie order's keys (image key, DDP rank, rank in the image) as one int64 key where their ranges allow
    (a host read: compute runs once), else the three columns."""
    if order_keys.shape[0] == 0:
        return (order_keys[:, 0],)
    low, high = (bound.tolist() for bound in torch.aminmax(order_keys, dim=0))
    spans = [hi - lo + 1 for lo, hi in zip(low, high)]
    if spans[0] * spans[1] * spans[2] >= 2**62:
        return tuple(order_keys.unbind(1))
    shifted = order_keys - order_keys.new_tensor(low)
    return ((shifted[:, 0] * spans[1] + shifted[:, 1]) * spans[2] + shifted[:, 2],)


def _true_positives(outcomes: Tensor, columns: Tensor, present: Tensor) -> tuple[Tensor, Tensor]:
    """``(row, detection)`` of every true positive of ``columns`` :math:`(C, N)` (detections present), in row-major
    order: the detections with a true positive in any column are selected first (a few of them), then the
    columns of those."""
    count = outcomes.shape[0]
    anywhere = ((outcomes.view(count, columns.shape[0]) == TP).any(dim=1) & present).nonzero().view(-1)
    rows, picked = (columns.index_select(1, anywhere) == TP).nonzero(as_tuple=True)
    return rows, anywhere[picked]


def _running(outcome: Tensor, code: int, included: Tensor) -> Tensor:
    """:math:`(C, N + 1)` int32: per row, how many of the first ``n`` included detections have ``code``."""
    hits = ((outcome == code) & included[None, :]).to(torch.int32)
    return torch.cat([torch.zeros((hits.shape[0], 1), dtype=torch.int32, device=hits.device),
                      hits.cumsum(1, dtype=torch.int32)], dim=1)


def _recall_only(true_positives: tuple[Tensor, Tensor], included: Tensor, gt_counts: Tensor, levels: int) -> Tensor:
    """``recall`` :math:`(T, K, A)` of one max-detections cap (``rc[-1]``; -1 where ``npig = 0``) from the true
    positives' cells (row ``a * T + t`` times ``K`` plus category) and detections."""
    cells, detections = true_positives
    npig = gt_counts.repeat_interleave(levels, dim=1).T  # (A * T, K)
    total = torch.zeros(npig.numel(), dtype=torch.float64, device=npig.device)
    total.index_add_(0, cells, included[detections].double())
    total = total.view(npig.shape)
    recall = torch.where(npig > 0, total / torch.where(npig > 0, npig, torch.ones_like(npig)).double(),
                         torch.full_like(total, -1.0))
    return recall.view(npig.shape[0] // levels, levels, -1).permute(1, 2, 0)


def _cells(outcome: Tensor, included: Tensor, category: Tensor, bounds: tuple[Tensor, Tensor], npig: Tensor,
           num_categories: int, rec_sorted: Tensor, positions: Tensor, entries: tuple[Tensor, Tensor] | None
           ) -> tuple[Tensor, Tensor, Tensor | None]:
    """One max-detections cap, all (area range, threshold) columns ``C`` (``outcome`` :math:`(C, N)`, sorted by
    category; ``bounds``: each category's first and one-past-last positions): ``q`` :math:`(C, R, K)` by sorted
    recall threshold, ``recall`` :math:`(C, K)`, and the first position reaching each sorted threshold
    :math:`(C, R, K)` (without ``entries``). ``npig`` :math:`(K, C)`. ``entries``: the (row, detection) indices
    of the true positives, or ``None`` for every entry and the first positions (the extended summary's scores)."""
    width, count = outcome.shape
    bins = rec_sorted.shape[0]
    device = outcome.device
    starts, ends = bounds
    if entries is not None:
        return _sparse_cells(outcome, included, category, starts, npig, num_categories, rec_sorted, entries)
    tp_run = _running(outcome, TP, included)  # rows: one (area range, threshold) column each
    counted_run = tp_run + _running(outcome, FP, included)  # tp + fp: exact integers, as numpy's float sums
    tp_start, counted_start = tp_run.index_select(1, starts), counted_run.index_select(1, starts)  # (C, K)
    safe = torch.where(npig > 0, npig, torch.ones_like(npig)).double().T  # (C, K)
    best = torch.zeros((width, num_categories * (bins + 1)), dtype=torch.float64, device=device)
    if entries is not None:
        # only true positives can hold a bin's maximum (a later entry of the same recall has a lower precision,
        # an earlier one a lower recall): the entries are read at the true positives of this cap
        keep = included[entries[1]]
        rows, cols = entries[0][keep], entries[1][keep]
        groups = category[cols]
        tp = (tp_run[rows, cols + 1] - tp_start[rows, groups]).double()
        rc = tp / safe[rows, groups]  # rc = tp / npig
        pr = tp / ((counted_run[rows, cols + 1] - counted_start[rows, groups]).double() + _EPS)
        reach = torch.searchsorted(rec_sorted, rc, right=True)  # thresholds <= rc
        index = (rows * num_categories + groups) * (bins + 1) + reach
        best.view(-1).scatter_reduce_(0, index, pr, "amax")
    else:
        tp = (tp_run[:, 1:] - tp_start.index_select(1, category)).double()  # restarted at each category: (C, N)
        counted = (counted_run[:, 1:] - counted_start.index_select(1, category)).double()
        rc = tp / safe.index_select(1, category)  # rc = tp / npig: (C, N)
        pr = tp / (counted + _EPS)  # pr = tp / (fp + tp + np.spacing(1))
        reach = torch.searchsorted(rec_sorted, rc, right=True)  # (C, N): thresholds <= rc
        index = category[None, :] * (bins + 1) + reach
        best.scatter_reduce_(1, index, torch.where(included[None, :], pr, torch.zeros_like(pr)), "amax")
    best = best.view(width, num_categories, bins + 1)[:, :, 1:]
    q = best.flip(-1).cummax(dim=-1).values.flip(-1).transpose(1, 2)  # max over the bins reaching r or more
    recall = (tp_run.index_select(1, ends) - tp_run.index_select(1, starts)).double() / safe  # rc[-1]
    first = None
    if entries is None:
        lowest = torch.full((width, num_categories * (bins + 1)), count, dtype=torch.int64, device=device)
        candidate = torch.where(included[None, :], positions[None, :], torch.full_like(positions[None, :], count))
        lowest.scatter_reduce_(1, index, candidate.expand(width, -1), "amin")
        lowest = lowest.view(width, num_categories, bins + 1)[:, :, 1:]
        first = lowest.flip(-1).cummin(dim=-1).values.flip(-1).transpose(1, 2)
    return q, recall, first


def _sparse_cells(outcome: Tensor, included: Tensor, category: Tensor, starts: Tensor, npig: Tensor,
                  num_categories: int, rec_sorted: Tensor, entries: tuple[Tensor, Tensor]
                  ) -> tuple[Tensor, Tensor, None]:
    """:func:`_cells` read at the true positives only (``entries``, row-major): the ``j``-th true positive of a
    (row, category) cell has ``tp = j``; ``tp + fp`` is a running count of the counted detections (one
    cumulative sum over :math:`(C, N)`)."""
    width, count = outcome.shape
    bins = rec_sorted.shape[0]
    all_included = bool(included.all())
    keep = included[entries[1]]
    rows, cols = (entries[0], entries[1]) if all_included else (entries[0][keep], entries[1][keep])
    groups = category[cols]
    cells = rows * num_categories + groups  # non-decreasing: entries are row-major, positions sorted by category
    tp = (segment_ranks(cells)[0] + 1).double()
    # tp + fp (exact integers, as numpy's float sums): the codes 1 and 2 are those below 2 once 1 is taken off
    counted = (outcome - 1).view(torch.uint8) < 2
    if not all_included:
        counted &= included[None, :]
    counted_run = counted.cumsum(1, dtype=torch.int32)
    if count:  # (C, K): counted before each category
        before = counted_run.index_select(1, (starts - 1).clamp(min=0)) * (starts > 0)
    else:
        before = torch.zeros((width, num_categories), dtype=torch.int32, device=outcome.device)
    safe = torch.where(npig > 0, npig, torch.ones_like(npig)).double().T  # (C, K)
    rc = tp / safe[rows, groups]  # rc = tp / npig
    pr = tp / ((counted_run[rows, cols] - before[rows, groups]).double() + _EPS)  # tp / (fp + tp + np.spacing(1))
    reach = torch.searchsorted(rec_sorted, rc, right=True)  # thresholds <= rc
    best = torch.zeros((width, num_categories * (bins + 1)), dtype=torch.float64, device=outcome.device)
    best.view(-1).scatter_reduce_(0, cells * (bins + 1) + reach, pr, "amax")
    best = best.view(width, num_categories, bins + 1)[:, :, 1:]
    q = best.flip(-1).cummax(dim=-1).values.flip(-1).transpose(1, 2)  # max over the bins reaching r or more
    found = torch.zeros(width * num_categories, dtype=torch.float64, device=outcome.device)
    found.index_add_(0, cells, torch.ones_like(tp))
    recall = found.view(width, num_categories) / safe  # rc[-1]
    return q, recall, None
