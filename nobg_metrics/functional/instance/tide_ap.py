r"""TIDE's own AP and its error fixes, from :class:`~nobg_metrics.functional.instance.tide_match.TideStatistics`.

tidecv 1.0.1, ``ap.py`` ``APDataObject.get_ap`` per class: the points sorted by descending score (a stable sort
of the insertion order), ``precision = tp / (tp + fp)`` and ``recall = tp / npos`` after each point, the precision
made non-increasing from the right, then 101 recall thresholds ``r = i / 100``: ``p(r)`` is the precision of the
first point with ``recall >= r`` (``np.searchsorted(..., side='left')``), 0 past the last one, and
``AP = sum(p) / 101 * 100``; a class with ``npos = 0`` scores 0. ``ClassedAPDataObject.get_mAP`` averages the
classes that have a point or ``npos != 0`` (a class with detections but no gt counts, as 0).

``TIDERun.fix_errors`` rebuilds the points with the errors of one type fixed: the error points first (in the
order of the detections), then the true positives — an order that only matters between equal scores, and is
kept here by a group key. Fixing ``Cls`` / ``Loc`` turns, for each gt, the highest-scoring error aimed at it
(``BestGTMatch``: the first on a tie, in detection order) into a true positive (of the gt's class for Cls) and
drops the other errors of that type; fixing ``Both`` / ``Dupe`` / ``Bkg`` drops them; fixing ``Miss`` removes
the missed gts from ``npos``. ``fix_main_errors`` reports ``max(AP_fixed - AP, 0)`` per type, each fixed alone;
``fix_special_errors`` reports FalsePos (true positives scored 1, false positives 0) and FalseNeg (``npos``
reduced by every unmatched gt) without that clamp.

Everything is a handful of sorts and segmented scans over all classes at once: no loop over classes or images.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.functional.instance.tide_match import CLS, ERROR_NAMES, LOC, TideStatistics
from nobg_metrics.ops.threads import one_thread_if_small

_RECALLS = 101


def _stable_order(*keys: Tensor) -> Tensor:
    """The permutation sorting by ``keys[0]``, then ``keys[1]``, ... (lexicographic, stable)."""
    order = torch.arange(keys[0].shape[0], device=keys[0].device)
    for key in reversed(keys):
        order = order[torch.sort(key[order], stable=True).indices]
    return order


def class_mean_ap(labels: Tensor, scores: Tensor, positive: Tensor, group: Tensor, gt_labels: Tensor,
                  gt_weight: Tensor) -> Tensor:
    """``ClassedAPDataObject.get_mAP`` of a set of points.

    Args:
        labels: :math:`(N,)` int64 class of each point. scores: :math:`(N,)` float64. positive: :math:`(N,)` bool.
        group: :math:`(N,)` int64 ties of score are broken by ``group``, then by the points' order.
        gt_labels: :math:`(G,)` int64 gt classes. gt_weight: :math:`(G,)` int64 how much each gt adds to ``npos``.

    Returns:
        0-d float64 in AP points (0 when no class has a point or a gt).

    Examples:
        >>> labels, gts = torch.tensor([1, 1, 2]), torch.tensor([1, 1])
        >>> s, p = torch.tensor([0.9, 0.8, 0.7], dtype=torch.float64), torch.tensor([True, False, False])
        >>> class_mean_ap(labels, s, p, torch.zeros(3, dtype=torch.int64), gts, torch.ones(2, dtype=torch.int64))
        tensor(25.2475, dtype=torch.float64)
    """
    device = scores.device
    classes = torch.unique(torch.cat([labels, gt_labels]))
    if classes.numel() == 0:
        return torch.zeros((), dtype=torch.float64, device=device)
    npos = torch.zeros(classes.shape[0], dtype=torch.int64, device=device)
    npos.index_add_(0, torch.searchsorted(classes, gt_labels), gt_weight)
    points = torch.searchsorted(classes, labels)
    order = _stable_order(points, -scores, group)
    points, hits = points[order], positive[order].long()
    sizes = torch.bincount(points, minlength=classes.shape[0])
    starts = sizes.cumsum(0) - sizes
    seen = torch.arange(points.shape[0], device=device) - starts[points] + 1
    true = hits.cumsum(0)
    true = true - torch.cat([true.new_zeros(1), true])[starts[points]]
    precision = true.double() / seen.double()
    recall = true.double() / npos[points].clamp(min=1).double()
    # max(precisions[i:]) within each class, on exact integer ranks of the precisions (offset per class)
    values, rank = torch.unique(precision, return_inverse=True)
    shift = (classes.shape[0] - 1 - points) * values.shape[0]
    envelope = values[(torch.cummax((rank + shift).flip(0), dim=0).values.flip(0) - shift)]
    # np.searchsorted(recalls, i / 100, side='left') within each class, on exact ranks of recalls and thresholds
    grid = torch.arange(_RECALLS, dtype=torch.float64, device=device) / (_RECALLS - 1)
    levels, level_rank = torch.unique(torch.cat([recall, grid]), return_inverse=True)
    width = levels.shape[0]
    keyed = points * width + level_rank[: points.shape[0]]
    query = torch.arange(classes.shape[0], device=device)[:, None] * width + level_rank[points.shape[0]:][None, :]
    found = torch.searchsorted(keyed, query)  # (K, 101) global positions
    inside = found < (starts + sizes)[:, None]
    curve = torch.where(inside, envelope[found.clamp(max=max(points.shape[0] - 1, 0))] if points.numel() else
                        torch.zeros_like(query, dtype=torch.float64), 0.0)
    ap = torch.where(npos > 0, curve.sum(dim=1) / _RECALLS * 100, 0.0)
    counted = (sizes > 0) | (npos != 0)
    if not bool(counted.any()):
        return torch.zeros((), dtype=torch.float64, device=device)
    return ap[counted].sum() / counted.sum()


def best_of_targets(stats: TideStatistics) -> Tensor:
    """Whether each detection is the one ``BestGTMatch`` fixes for its target gt: the highest score, the first
    detection on a tie. :math:`(D,)` bool."""
    aimed = stats.target >= 0
    order = _stable_order(-stats.scores)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.shape[0], device=order.device)
    first = torch.full_like(stats.gt_labels, order.shape[0])
    first.scatter_reduce_(0, stats.target[aimed], rank[aimed], reduce="amin")
    return aimed & (rank == first[stats.target.clamp(min=0)])


def fixed_mean_ap(stats: TideStatistics, fix: str | None) -> Tensor:
    """The mean AP at the positive threshold with the errors ``fix`` (a name of :data:`ERROR_NAMES`, or
    ``"FalsePos"`` / ``"FalseNeg"``) fixed; ``None``: TIDE's AP itself (insertion order, no group)."""
    status = stats.status[stats.positive]
    hit, miss = status == 1, status == 0
    weight = torch.ones_like(stats.gt_labels)
    group = hit.long() if fix is not None else torch.zeros_like(stats.labels)
    labels, scores, positive = stats.labels, stats.scores, hit
    keep = hit | miss
    if fix == "FalsePos":
        scores = hit.double()
    elif fix == "FalseNeg":
        weight = stats.gt_matched.long()
    elif fix == "Miss":
        weight = (~stats.gt_missed).long()
    elif fix is not None:
        code = ERROR_NAMES.index(fix)
        keep = hit | (miss & (stats.error != code))
        if code in (CLS, LOC):
            fixed = (stats.error == code) & best_of_targets(stats)
            keep = keep | fixed
            positive = hit | fixed
            if code == CLS:
                labels = torch.where(fixed, stats.gt_labels[stats.target.clamp(min=0)], labels)
    return class_mean_ap(labels[keep], scores[keep], positive[keep], group[keep], stats.gt_labels, weight)


def tide_values(stats: TideStatistics) -> dict[str, Tensor | dict[str, Tensor]]:
    """AP, main and special errors (dAP points), error counts, and the AP at every threshold."""
    with one_thread_if_small(stats.labels.numel() + stats.gt_labels.numel(), stats.scores.device):
        return _values(stats)


def _values(stats: TideStatistics) -> dict[str, Tensor | dict[str, Tensor]]:
    base = fixed_mean_ap(stats, None)
    main = {name: (fixed_mean_ap(stats, name) - base).clamp(min=0) for name in ERROR_NAMES}
    special = {name: fixed_mean_ap(stats, name) - base for name in ("FalsePos", "FalseNeg")}
    counts = torch.bincount(stats.error[stats.error >= 0].long(), minlength=len(ERROR_NAMES))
    counts[ERROR_NAMES.index("Miss")] = stats.gt_missed.sum()
    per_threshold = torch.stack([fixed_mean_ap(stats._replace(positive=index), None)
                                 for index in range(stats.thresholds.shape[0])])
    return {"ap": base, "main": main, "special": special,
            "counts": {name: counts[index] for index, name in enumerate(ERROR_NAMES)},
            "thresholds": stats.thresholds, "ap_per_threshold": per_threshold, "ap_range": per_threshold.mean()}

