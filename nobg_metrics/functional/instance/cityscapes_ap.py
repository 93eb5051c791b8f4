"""The Cityscapes AP integration (boundary-iou-api ``evaluateMatches`` / cityscapesScripts), for every class and
overlap threshold at once, from per-prediction entry counts.

For one class and threshold the reference collects entries ``(y_true, y_score)`` (one per true or false entry of
:mod:`nobg_metrics.functional.instance.cityscapes_matching`) and, with
``D`` the class's gts (each is a true entry or a miss,
so ``tp + fn = D``):

- at each distinct entry score ``u_k`` (ascending): ``tp_k`` / ``fp_k`` = true / false entries scoring ``>= u_k``,
  ``p_k = tp_k / (tp_k + fp_k)``, ``r_k = tp_k / D`` (``np.unique`` of the sorted scores, then the cumsum below each);
- an artificial last point ``(p, r) = (1, 0)``;
- ``AP = Σ_k p_k · w_k`` with ``w_k = 0.5 r_{k-1} - 0.5 r_{k+1}`` (``np.convolve(recall, [-0.5, 0, 0.5], 'valid')``
  on the recalls with the first repeated and a 0 appended: ``r_{-1} = r_0``, and the artificial point's
  ``w = 0.5 r_last``).

Here every prediction of every class is sorted once by (class, score); equal scores form one group, whose summed true
and false entries make the point. ``tp_k`` is a suffix sum within the class; the next point's recall is
``(tp_k - true_k) / D`` (groups without entries between two points change nothing) and the previous point is found by a
running maximum over point positions. Each term ``p_k · w_k`` is the reference's value bit for bit and, on the CPU,
they are added in the reference's order (left to right: ``np.dot``'s order when its BLAS adds them one by one — its
vector kernels and fused multiply-adds can change the last bit). Integer sums are exact, so any batching and any
number of DDP ranks give bit-identical values.

Policies (named, as the reference's): no gt of the class -> NaN (left out of every average); gts but no
prediction of the class -> 0; predictions but no entry at a threshold (every one ignored) -> 0, where the reference
fails (``IndexError`` on an empty cumsum) — 0 is what its integration gives for the artificial point alone.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _class_sums(terms: Tensor, extra: Tensor, group_class: Tensor, position: Tensor, widest: int,
                num_classes: int) -> Tensor:
    """Per class, ``terms[g]`` then ``extra[g]`` of its groups in order, summed left to right: :math:`(T, G)` x 2 ->
    :math:`(T, C)` (``position``: each group's index within its class, ``widest``: the most groups of one class).

    The reference's ``np.dot(precision, stepWidths)`` adds its terms in curve order (the artificial point's last);
    so does a running sum over a padded :math:`(T, C, 2 G_{max})` layout (``cumsum``, sequential on the CPU; the
    padding adds exact zeros). Deterministic on every device, unlike a scatter-add of floats.
    """
    layout = terms.new_zeros((terms.shape[0], num_classes + 1, 2 * max(widest, 1)))
    layout[:, group_class, 2 * position] = terms
    layout[:, group_class, 2 * position + 1] = extra
    return layout[:, :num_classes].cumsum(-1)[..., -1]


def class_average_precision(scores: Tensor, classes: Tensor, true_entries: Tensor, false_entries: Tensor,
                            gt_counts: Tensor, pred_counts: Tensor) -> Tensor:
    """AP per class and threshold.

    Args:
        scores: :math:`(P,)` float64 detection scores.
        classes: :math:`(P,)` int64 evaluated class ``0 .. C-1``, ``-1`` for a dropped detection.
        true_entries, false_entries: :math:`(P, T)` int64 entries each detection contributes per threshold.
        gt_counts: :math:`(C,)` int64 gts per class (``D``).
        pred_counts: :math:`(C,)` int64 kept predictions per class.

    Returns:
        :math:`(C, T)` float64 (the reference's ``resultApMatrix[0]``), NaN for classes without gts.
    """
    num_classes, num_thresholds = gt_counts.numel(), true_entries.shape[1]
    if scores.numel() == 0:  # no detection at all: 0 for the classes with gts
        zeros = torch.zeros((num_classes, num_thresholds), dtype=torch.float64, device=scores.device)
        return torch.where(gt_counts.view(-1, 1) > 0, zeros, torch.nan)
    classes = torch.where(classes >= 0, classes, num_classes)  # dropped detections: a class past the last
    order = torch.argsort(scores, stable=True)
    order = order[torch.argsort(classes[order], stable=True)]  # (class, score) ascending
    score, klass = scores[order], classes[order]
    starts = torch.ones_like(klass, dtype=torch.bool)
    starts[1:] = (score[1:] != score[:-1]) | (klass[1:] != klass[:-1])
    group = torch.cumsum(starts, 0) - 1  # groups of equal (class, score); at most P of them
    size = klass.numel()
    true_g = true_entries.new_zeros((num_thresholds, size)).index_add_(1, group, true_entries[order].T)
    false_g = false_entries.new_zeros((num_thresholds, size)).index_add_(1, group, false_entries[order].T)
    group_class = torch.full((size,), num_classes, dtype=torch.int64, device=scores.device).scatter(0, group, klass)
    # groups are sorted by class: each class is one run of groups (the unused ones last, in the extra class)
    per_class = torch.zeros(num_classes + 1, dtype=torch.int64, device=scores.device).index_add_(
        0, group_class, torch.ones_like(group_class))
    class_end = torch.cumsum(per_class, 0)
    class_start = (class_end - per_class)[group_class]  # (G,) the first group of each group's class
    class_end = class_end[group_class]  # (G,) the first group of the next class

    def suffix(counts: Tensor) -> Tensor:  # entries scoring >= each group's score, within its class
        total = torch.cat([counts.flip(1).cumsum(1).flip(1), counts.new_zeros((num_thresholds, 1))], 1)
        return total[:, :size] - total[:, class_end]

    tp, fp = suffix(true_g), suffix(false_g)
    point = (true_g + false_g) > 0
    gts = torch.cat([gt_counts, gt_counts.new_zeros(1)])[group_class]
    denominator = torch.where(gts > 0, gts, 1).double()
    precision = tp.double() / torch.where(tp + fp > 0, tp + fp, 1).double()  # p = float(tp) / (tp + fp)
    recall = tp.double() / denominator  # r = float(tp) / (tp + fn), tp + fn = D
    recall_next = (tp - true_g).double() / denominator  # the next point's: nothing scores between two points
    positions = torch.arange(size, device=scores.device)
    last_point = torch.cummax(torch.where(point, positions.expand(num_thresholds, size), -1), dim=1).values
    previous = torch.cat([last_point.new_full((num_thresholds, 1), -1), last_point[:, :-1]], 1)
    has_previous = previous >= class_start  # else the first point: recallForConv repeats r_0
    recall_previous = torch.where(has_previous, tp.gather(1, previous.clamp(min=0)).double() / denominator, recall)
    term = precision * (0.5 * (recall_previous - recall_next))  # p_k * (0.5 r_{k-1} - 0.5 r_{k+1})
    top = point & (tp == true_g) & (fp == false_g)  # no entry above: the artificial (1, 0) point follows
    artificial = torch.where(top, 0.5 * recall, 0.0)  # precision 1 * (0.5 r_last - 0.5 * 0)
    widest = int(per_class.max())  # host read in compute: the layout's size
    ap = _class_sums(torch.where(point, term, 0.0), artificial, group_class, positions - class_start, widest,
                     num_classes).T  # (C, T)
    ap = torch.where(pred_counts.view(-1, 1) > 0, ap, 0.0)
    return torch.where(gt_counts.view(-1, 1) > 0, ap, torch.nan)
