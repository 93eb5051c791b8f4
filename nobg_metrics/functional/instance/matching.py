"""COCO's greedy matching (pycocotools ``COCOeval.evaluateImg``) for every IoU threshold and area range at once.

The reference, per (image, category, area range) and threshold ``t``: gts outside the area range, crowd or
flagged ``ignore`` are *ignored* and sorted last (stably); detections are taken in score order; each starts at
``iou = min(t, 1 - 1e-10)`` and walks the gts::

    if gtm[g] > 0 and not iscrowd[g]: continue      # a matched gt is gone, unless crowd
    if m > -1 and gtIg[m] == 0 and gtIg[g] == 1: break
    if ious[d, g] < iou: continue
    iou = ious[d, g]; m = g                         # equal IoU: the later gt wins

so a detection takes, among the gts still available with IoU >= ``iou``, the non-ignored one of highest IoU
(ties: the last in gt order) or, when there is none, the ignored one of highest IoU (ties: the last). It
inherits that gt's ignore flag; an unmatched detection is ignored when its own area is out of range (LVIS:
also when its category is not exhaustively annotated in the image), else it is a false positive.

Vectorised here: detections are grouped by (image, category) — groups never share a gt — and laid out as
``(group, rank)`` slots, the group's gts as ``(group, j)`` slots. Round ``k`` matches the ``k``-th detection of
every group, for all thresholds and area ranges together: ``rounds`` (the longest group, at most the
detection cap) vectorised rounds. Where reading sizes back is free (CPU) the layout is as small as the data:
the detections of groups without gts are written unmatched at once, the other groups are ordered largest first
so that round ``k`` runs on those with a ``k``-th detection only, and each slot's gts are ranked once by
preference (non-ignored, IoU, the later gt), a round being one masked maximum of ranks. On a device the layout
takes the bounds the shapes give, so no round reads the device.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

TP, FP, IGNORED, ABSENT = 1, 2, 0, 3
"""Per-(detection, area range, threshold) outcome codes: a true positive, a false positive, ignored (present in
the ranking, counted neither way) and absent (not evaluated at all: LVIS' dropped detections)."""


class PairIous(Protocol):
    """A padded :math:`(B, D, G)` IoU computed on demand: ``pairs(image, rows, cols)`` gives the :math:`(S, K, J)`
    IoU of the detections ``rows`` :math:`(S, K)` and gts ``cols`` :math:`(S, J)` of the images ``image``
    :math:`(S,)` (:class:`~nobg_metrics.functional.instance.boxes.BoxPairs`: box IoU of the matched slots only)."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device

    def pairs(self, image: Tensor, rows: Tensor, cols: Tensor) -> Tensor: ...


def pair_ious(iou: Tensor | PairIous, image: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
    """:math:`(S, K, J)` ``iou[image[s], rows[s, k], cols[s, j]]`` of a padded IoU tensor or a :class:`PairIous`."""
    if isinstance(iou, Tensor):
        return iou[image[:, None, None], rows[:, :, None], cols[:, None, :]]
    return iou.pairs(image, rows, cols)


def segment_ranks(sorted_keys: Tensor) -> tuple[Tensor, Tensor]:
    """Rank of each element within its run of equal keys, and the run's index.

    Args:
        sorted_keys: :math:`(N,)` int64, equal keys adjacent.

    Returns:
        ``(ranks, runs)``: :math:`(N,)` int64 each.

    Examples:
        >>> segment_ranks(torch.tensor([4, 4, 7, 9, 9, 9]))
        (tensor([0, 1, 0, 0, 1, 2]), tensor([0, 0, 1, 2, 2, 2]))
    """
    count = sorted_keys.shape[0]
    positions = torch.arange(count, device=sorted_keys.device)
    starts = torch.ones(count, dtype=torch.bool, device=sorted_keys.device)
    starts[1:] = sorted_keys[1:] != sorted_keys[:-1]
    first = torch.where(starts, positions, torch.zeros_like(positions)).cummax(dim=0).values
    return positions - first, starts.long().cumsum(dim=0) - 1


def stable_order(*keys: Tensor) -> Tensor:
    """The permutation sorting by ``keys[0]``, then ``keys[1]``, ... (stable: ties keep input order)."""
    order = torch.sort(keys[-1], stable=True).indices
    for key in reversed(keys[:-1]):  # least significant first; each stable sort keeps the earlier order of ties
        order = order[torch.sort(key[order], stable=True).indices]
    return order


def descending_key(scores: Tensor) -> Tensor:
    """:math:`(N,)` int64 whose ascending order is ``scores`` descending (``np.argsort(-scores)``'s order).

    Equal scores get equal keys (``-0.0`` and ``0.0`` too) and NaN comes last, as numpy sorts it; an integer key
    sorts about three times faster than a float64 one on CPU. The float64 bits, read as an integer, order the
    non-negative floats; the negative ones have their magnitude bits flipped; ``~`` reverses the order.

    Examples:
        >>> scores = torch.tensor([0.5, -0.0, float("nan"), 2.0, 0.0, -1.0], dtype=torch.float64)
        >>> torch.sort(descending_key(scores), stable=True).indices.tolist()
        [3, 0, 1, 4, 5, 2]
    """
    bits = (scores.to(torch.float64) + 0.0).contiguous().view(torch.int64)  # + 0.0: -0.0 becomes 0.0
    ascending = torch.where(bits < 0, bits ^ 0x7FFF_FFFF_FFFF_FFFF, bits)
    return torch.where(torch.isnan(scores), torch.full_like(ascending, 2**63 - 1), ~ascending)


def match_detections(
    iou: Tensor | PairIous, det_image: Tensor, det_local: Tensor, det_key: Tensor, det_rank: Tensor, det_active: Tensor,
    det_unmatched_ignored: Tensor, gt_local: Tensor, gt_key: Tensor, gt_crowd: Tensor, gt_ignored: Tensor,
    thresholds: Tensor, max_rounds: int, exact_sizes: bool, order: Tensor | None = None,
) -> Tensor:
    """Outcome of every detection under every area range and IoU threshold (module notes).

    Args:
        iou: :math:`(B, D, G)` float64 IoU of each image's detections (rows) and gts (columns), padded (or a
            :class:`PairIous` computing the pairs read).
        det_image, det_local: :math:`(N,)` int64 the image of each detection and its row in ``iou``.
        det_key: :math:`(N,)` int64 its group (image and category, one int); det_rank: :math:`(N,)` its rank in
            the group (score order). det_active: :math:`(N,)` bool (inactive ones never match).
        det_unmatched_ignored: :math:`(A, N)` bool: ignored when unmatched (area out of range, ...).
        gt_local: :math:`(M,)` int64 the column of each gt; gt_key: :math:`(M,)` its group key (-2: no group).
        gt_crowd: :math:`(M,)` bool; gt_ignored: :math:`(A, M)` bool.
        thresholds: :math:`(T,)` float64, already ``min(t, 1 - 1e-10)``.
        max_rounds: detections of rank >= ``max_rounds`` are not matched (the per-group cap).
        exact_sizes: size the layout by the data (a host read; free on CPU) instead of the shape bounds.
        order: :math:`(N,)` the permutation sorting by (``det_key``, ``det_rank``) where the caller has it.

    Returns:
        :math:`(N, A, T)` int8 codes :data:`TP`, :data:`FP`, :data:`IGNORED` (ranks >= ``max_rounds`` get
        :data:`IGNORED`; they are never counted).
    """
    count, areas, levels = det_key.shape[0], gt_ignored.shape[0], thresholds.shape[0]
    device = iou.device
    outcomes = torch.zeros((count + 1, areas, levels), dtype=torch.int8, device=device)  # + a row for empty slots
    if count == 0:
        return outcomes[:0]
    order = stable_order(det_key, det_rank) if order is None else order
    ranks, groups = segment_ranks(det_key[order])
    num_groups = int(groups[-1]) + 1 if exact_sizes else count
    rounds = min(max_rounds, int(ranks.max()) + 1 if exact_sizes else iou.shape[1])
    # slots: slot[s, k] = the detection of rank k in group s, or `count` (an empty slot); column `rounds` collects
    # the detections past the last round, so no boolean selection (a device sync) is needed
    slots = torch.full((num_groups, rounds + 1), count, dtype=torch.int64, device=device)
    slots[groups, ranks.clamp(max=rounds)] = order
    slots = slots[:, :rounds]
    group_key = torch.full((num_groups,), -1, dtype=torch.int64, device=device)
    group_key[groups] = det_key[order]
    group_image = torch.zeros(num_groups, dtype=torch.int64, device=device)
    group_image[groups] = det_image[order]
    # the gts of each group: a run of the gts sorted by key (input order kept within a run)
    gt_order = torch.sort(gt_key, stable=True).indices
    sorted_gt_key = gt_key[gt_order]
    low = torch.searchsorted(sorted_gt_key, group_key, side="left")
    high = torch.searchsorted(sorted_gt_key, group_key, side="right")
    active = None
    if exact_sizes:
        # every detection of a group without gts is unmatched: written here for all at once; the rounds run on the
        # groups with gts, the largest first, round k on those with a detection of rank k only
        counted = ~det_unmatched_ignored.T & (det_rank < max_rounds)[:, None]  # (N, A): FP, else IGNORED (0)
        outcomes[:count] = (counted.to(torch.int8) * FP)[:, :, None].expand(count, areas, levels)
        sizes = torch.zeros(num_groups, dtype=torch.int64, device=device)
        sizes.index_add_(0, groups, torch.ones_like(groups))
        sizes = sizes.clamp(max=rounds) * (high > low)
        by_size = torch.sort(sizes, descending=True, stable=True).indices
        ended = torch.bincount(sizes, minlength=rounds + 1).cumsum(0)
        active = [n for n in (num_groups - ended[:rounds]).tolist() if n > 0]  # active[k]: groups with rank k
        rounds, num_groups = len(active), (active[0] if active else 0)
        if num_groups == 0:
            return outcomes[:count]
        keep = by_size[:num_groups]
        slots, group_key, group_image = slots[keep, :rounds], group_key[keep], group_image[keep]
        low, high = low[keep], high[keep]
    width = int((high - low).max()) if exact_sizes else iou.shape[2]
    width = max(width, 1)
    gt_slot = low[:, None] + torch.arange(width, device=device)
    gt_valid = gt_slot < high[:, None]
    gt_index = gt_order[gt_slot.clamp(max=max(gt_key.shape[0] - 1, 0))] if gt_key.shape[0] else gt_slot * 0
    slot_valid = slots < count
    slot_det = slots.clamp(max=count - 1)
    # iou_s[s, k, j] = IoU(detection in slot (s, k), gt j of group s); -inf where a slot is empty
    if gt_key.shape[0]:
        gathered = pair_ious(iou, group_image, det_local[slot_det], gt_local[gt_index])
        crowd = gt_crowd[gt_index] & gt_valid
        non_ignored = ~gt_ignored[:, gt_index] & gt_valid  # (A, S, J)
    else:
        gathered = torch.zeros((num_groups, rounds, width), dtype=iou.dtype, device=device)
        crowd = torch.zeros((num_groups, width), dtype=torch.bool, device=device)
        non_ignored = torch.zeros((areas, num_groups, width), dtype=torch.bool, device=device)
    usable = slot_valid[:, :, None] & gt_valid[:, None, :] & det_active[slot_det][:, :, None]
    iou_s = torch.where(usable, gathered, torch.full_like(gathered, -torch.inf))
    unmatched_ignored = det_unmatched_ignored[:, slot_det]  # (A, S, K)
    if active is None:
        _rounds(iou_s, non_ignored, crowd, unmatched_ignored, thresholds, slots, outcomes)
    else:
        _ranked_rounds(iou_s, non_ignored, crowd, unmatched_ignored, thresholds, slots, outcomes, active)
    return outcomes[:count]


def _preference(iou_s: Tensor, non_ignored: Tensor) -> Tensor:
    """:math:`(A, S, K, J)` rank of each gt for each detection slot: non-ignored gts above ignored ones, then by
    IoU, equal IoUs by column (the later gt above) — the order in which ``evaluateImg`` prefers them."""
    areas = non_ignored.shape[0]
    by_iou = torch.sort(iou_s, dim=-1, stable=True).indices.expand(areas, *iou_s.shape)  # ties: column order
    flags = non_ignored[:, :, None, :].expand(areas, *iou_s.shape).gather(-1, by_iou).to(torch.int8)
    order = by_iou.gather(-1, torch.sort(flags, dim=-1, stable=True).indices)  # columns, least preferred first
    ranks = torch.arange(iou_s.shape[-1], dtype=torch.int16, device=iou_s.device).expand_as(order)
    return torch.empty_like(ranks).scatter_(-1, order, ranks)


def _ranked_rounds(iou_s: Tensor, non_ignored: Tensor, crowd: Tensor, unmatched_ignored: Tensor,
                   thresholds: Tensor, slots: Tensor, outcomes: Tensor, active: list[int]) -> None:
    """:func:`_rounds` with each slot's gt preference ranked beforehand (:func:`_preference`, data-sized layouts:
    the ranks take 2 bytes per (area range, slot, gt)): a detection takes the available gt of highest rank whose IoU
    reaches the threshold; round ``k`` runs on the first ``active[k]`` groups."""
    num_groups, rounds, width = iou_s.shape
    areas, levels = non_ignored.shape[0], thresholds.shape[0]
    device = iou_s.device
    threshold = thresholds.view(1, levels, 1, 1)
    by_round = iou_s.transpose(0, 1).contiguous()  # (K, S, J): each round's block contiguous
    # ranks from 1 (0: no gt), masks applied by products: torch.where is several times slower on CPU
    rank = _preference(iou_s, non_ignored).permute(2, 0, 1, 3).contiguous()[:, :, None] + 1  # (K, A, 1, S, J)
    kept_rank = rank * ~crowd - crowd.to(rank.dtype)  # -1 for crowd: a matched crowd gt stays available
    available = torch.ones((areas, levels, num_groups, width), dtype=torch.bool, device=device)
    top = torch.zeros((rounds, areas, levels, num_groups), dtype=rank.dtype, device=device)
    for k, n in zip(range(rounds), active):
        still = available[:, :, :n]
        chosen = (rank[k, :, :, :n] * (still & (by_round[k, :n] >= threshold))).amax(dim=-1)
        top[k, :, :, :n] = chosen  # the rank of the gt taken, 0: none
        still &= kept_rank[k, :, :, :n] != chosen[..., None]
    ignored_count = (~non_ignored).sum(dim=-1, dtype=rank.dtype)[:, None]  # (A, 1, S): ranks up to it are ignored
    matched = top > 0
    unmatched_fp = ~(matched | unmatched_ignored.permute(2, 0, 1)[:, :, None])
    code = (matched & (top > ignored_count)).to(torch.int8) * TP + unmatched_fp.to(torch.int8) * FP  # else IGNORED
    outcomes[slots.T.reshape(-1)] = code.permute(0, 3, 1, 2).reshape(rounds * num_groups, areas, levels)


def _rounds(iou_s: Tensor, non_ignored: Tensor, crowd: Tensor, unmatched_ignored: Tensor, thresholds: Tensor,
            slots: Tensor, outcomes: Tensor) -> None:
    """Run the matching rounds over the slot layout and write each slot's outcome into ``outcomes``."""
    num_groups, rounds, width = iou_s.shape
    levels = thresholds.shape[0]
    columns = torch.arange(width, device=iou_s.device)
    threshold = thresholds.view(1, levels, 1, 1)
    non_ignored = non_ignored[:, None]  # (A, 1, S, J)
    ignored = ~non_ignored
    keeps = ~crowd[None, None]  # a matched crowd gt stays available
    available = torch.ones((non_ignored.shape[0], levels, num_groups, width), dtype=torch.bool, device=iou_s.device)
    minus_inf = torch.full((), -torch.inf, dtype=iou_s.dtype, device=iou_s.device)
    for k in range(rounds):  # a bounded number of vectorised rounds: one per detection rank
        n = num_groups
        iou_k = iou_s[None, None, :n, k]  # (1, 1, S, J)
        still = available[:, :, :n]
        candidates = still & (iou_k >= threshold)
        preferred = candidates & non_ignored[:, :, :n]
        pool = torch.where(preferred.any(dim=-1, keepdim=True), preferred, candidates)
        values = torch.where(pool, iou_k, minus_inf)
        best = values.amax(dim=-1, keepdim=True)
        chosen = torch.where(pool & (values == best), columns, -1).amax(dim=-1)  # the last gt of highest IoU
        hit = columns == chosen[..., None]  # one-hot (all False: unmatched)
        matched = chosen >= 0
        on_ignored = (hit & ignored[:, :, :n]).any(dim=-1)
        still &= ~(hit & keeps[:, :, :n])
        code = torch.where(matched, torch.where(on_ignored, IGNORED, TP),
                           torch.where(unmatched_ignored[:, None, :n, k], IGNORED, FP)).to(torch.int8)
        outcomes[slots[:n, k]] = code.permute(2, 0, 1)  # empty slots all write the spare last row
