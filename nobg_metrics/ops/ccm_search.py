"""The exact 1-NN search of CCm's camouflage degree (PySODMetrics 1.6.2 ``CamouflageContextMeasure``: sklearn
``NearestNeighbors(1)`` brute force of each foreground patch among the background patches): one function,
:func:`nearest_background`, two forms (``engine``, :data:`~nobg_metrics.ops.host_reads.Engine`):

- ``"data_sized"``: image by image on the listed queries and candidates (host reads: the lists, the ambiguous
  queries and their near candidates are ``nonzero`` lists). The CPU path, and ``engine="data_sized"`` elsewhere.
- ``"fixed"``: the whole batch over every position, with the masks: shapes depend only on the input's; invalid
  candidates rank at ``+inf``; each query keeps its :data:`NEAR_CANDIDATES` lowest in float32 and recomputes the
  float64 distances of those within the rounding bound. A query with more candidates within the bound than that is
  flagged (never a silently different answer).

Both rank by the float32 matrix-product form ``|x|² - 2 q·x`` of features centred on the candidates' mean and
decide every candidate within a bound of that product's rounding by ``Σ (q - x)²`` in float64, the smallest, then
the lowest index (sklearn's heap keeps the first of equal distances): the same answer from either (the exact
distance and the lowest-index rule do not depend on the centring).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads

__all__ = ["NEAR_CANDIDATES", "nearest_background"]

_QUERY_BLOCK_ELEMENTS = 1 << 22
"""Distance-matrix entries per block of queries (16 MB of float32: blocks of 100s of queries keep the matrix product
efficient; smaller ones, cache-sized, made it 2x slower)."""

NEAR_CANDIDATES = 32
"""Candidates per query whose float64 distance the sync-free search recomputes (those within the rounding bound of
the lowest float32 value). More within the bound sets the query's overflow flag (measured worst on the test scenes
and the realistic shapes: docs/context_measure.md, "Without host syncs")."""

_EPS32 = float(torch.finfo(torch.float32).eps)
_COORDINATES = 2
"""The last two features of a patch: its scaled corner coordinates (the rest are Lab integers)."""


def _rounding_bound(centred_queries: Tensor, largest_square: Tensor, features: int) -> Tensor:
    """A bound of the float32 product's rounding per query (generous: near sets stay small), float32."""
    return (4 * _EPS32 * (features + 2) * (largest_square + centred_queries.pow(2).sum(dim=-1)) + 0.01).float()


def nearest_background(features: Tensor, is_query: Tensor, is_candidate: Tensor, *,
                       engine: host_reads.Engine = "auto", near_candidates: int | None = None) -> tuple[Tensor, Tensor]:
    """Each query's nearest candidate among the same positions (Euclidean; exact ties to the lower index).

    Args:
        features: :math:`(B, G, D)` float64 (float32 values; the last two columns the coordinates).
        is_query, is_candidate: :math:`(B, G)` bool, disjoint.
        engine: ``"data_sized"`` (image by image on the listed positions, host reads), ``"fixed"`` (every position,
            no host read) or ``"auto"`` (``"data_sized"`` where host reads are free, else ``"fixed"``).
        near_candidates: the ``"fixed"`` form's float64 recomputations per query (default :data:`NEAR_CANDIDATES`).

    Returns:
        ``(index, overflow)``: :math:`(B, G)` int64, at each query with candidates its nearest candidate's position
        (elsewhere unspecified; the forms may differ there), and :math:`(B,)` bool, an image with a query whose near
        set exceeded ``near_candidates`` (``"fixed"`` only: then its answer may not be the nearest; all False from
        ``"data_sized"``).

    Examples:
        >>> x = torch.tensor([[[0.0, 0, 0], [2, 0, 0], [1, 0, 0], [4, 0, 0], [3, 0, 0.1]]], dtype=torch.float64)
        >>> query = torch.tensor([[False, False, True, False, True]]); candidate = ~query
        >>> index, overflow = nearest_background(x, query, candidate)
        >>> index[0, 2].item(), index[0, 4].item(), overflow.tolist()  # query 2 ties between 0 and 1: the lower
        (0, 1, [False])
        >>> index, overflow = nearest_background(x, query, candidate, engine="fixed")
        >>> index[0, 2].item(), index[0, 4].item(), overflow.tolist()
        (0, 1, [False])
    """
    if host_reads.resolve_engine(engine, features) == "fixed":
        return _search_fixed(features, is_query, is_candidate,
                             NEAR_CANDIDATES if near_candidates is None else near_candidates)
    index = torch.zeros(is_query.shape, dtype=torch.int64, device=features.device)
    for image in range(features.shape[0]):  # the images of a batch, each on its data-sized lists
        queries, candidates = is_query[image].nonzero()[:, 0], is_candidate[image].nonzero()[:, 0]
        if queries.numel() and candidates.numel():
            nearest = _search_listed(features[image].index_select(0, queries),
                                     features[image].index_select(0, candidates))
            index[image].index_copy_(0, queries, candidates.index_select(0, nearest))
    return index, torch.zeros(features.shape[0], dtype=torch.bool, device=features.device)


def _search_listed(queries: Tensor, candidates: Tensor) -> Tensor:
    """The ``"data_sized"`` form on listed queries :math:`(Q, D)` and candidates :math:`(N, D)` (float64): the index
    of each query's nearest candidate, :math:`(Q,)` int64.

    Every candidate is ranked by ``|x|² - 2 q·x`` (one float32 matrix product of the features centred on the
    candidates' mean, augmented by a column of ones / of ``|x|²``: the Lab products stay exact integers), in blocks
    of queries; a query whose two lowest values lie further apart than a bound of that product's rounding has its
    answer (the lowest); for the others every candidate within the bound of the lowest is recomputed directly in
    float64, ``Σ (q - x)²``, and the smallest, then the lowest index, wins. The ambiguous queries and their near
    candidates are data-sized lists (host reads off CPU). The features' last two columns are the coordinates.

    """
    count = candidates.shape[0]
    if count == 1:
        return torch.zeros(queries.shape[0], dtype=torch.int64, device=queries.device)
    # the ranking in float32 on features centred by the candidates' mean (rounded on the integer Lab part, so those
    # products stay exact): [q', 1] · [-2 x', |x'|²]
    shift = candidates.mean(dim=0)
    shift[: -_COORDINATES] = shift[: -_COORDINATES].round()  # a local tensor
    centred_queries, centred = queries - shift, candidates - shift
    squares = centred.pow(2).sum(dim=1)
    ones = torch.ones(queries.shape[0], 1, dtype=torch.float32, device=queries.device)
    ranked_queries = torch.cat([centred_queries.float(), ones], dim=1)  # (Q, D + 1)
    ranked = torch.cat([-2 * centred.float(), squares.float()[:, None]], dim=1).T.contiguous()  # (D + 1, N)
    bound = _rounding_bound(centred_queries, squares.max(), candidates.shape[1])
    block = max(1, _QUERY_BLOCK_ELEMENTS // count)
    best = torch.empty(queries.shape[0], dtype=torch.int64, device=queries.device)
    for start in range(0, queries.shape[0], block):  # blocks of the data-sized distance matrix
        stop = min(start + block, queries.shape[0])
        approximate = ranked_queries[start:stop] @ ranked
        two, index = approximate.topk(2, dim=1, largest=False)  # sorted: the lowest first
        best[start:stop] = index[:, 0]
        ambiguous = (two[:, 1] <= two[:, 0] + bound[start:stop]).nonzero()[:, 0]  # data-sized
        if ambiguous.numel() == 0:
            continue
        near = approximate[ambiguous] <= (two[ambiguous, 0] + bound[start:stop][ambiguous])[:, None]
        rows, cols = near.nonzero().unbind(1)  # data-sized
        exact = ((queries[start + ambiguous[rows]] - candidates[cols]) ** 2).sum(dim=1)
        fill = torch.full((ambiguous.numel(),), torch.inf, dtype=exact.dtype, device=exact.device)
        smallest = fill.scatter_reduce(0, rows, exact, "amin")
        tied = torch.where(exact == smallest[rows], cols, torch.full_like(cols, count))
        first = torch.full((ambiguous.numel(),), count, dtype=cols.dtype, device=cols.device)
        best[start + ambiguous] = first.scatter_reduce(0, rows, tied, "amin")
    return best


def _search_fixed(features: Tensor, is_query: Tensor, is_candidate: Tensor,
                  near_candidates: int) -> tuple[Tensor, Tensor]:
    """The ``"fixed"`` form of :func:`nearest_background`: shapes fixed by the inputs' (no host read).

    The positions are sorted (stably) queries first, candidates last: then every query's candidates lie after it,
    so a block of query rows ``[s, e)`` is ranked against columns ``[s, G)`` only — half the full product, whatever
    the split. Non-candidates rank at ``+inf`` (an infinite ``|x|²`` column); the float32 ranking runs as batched
    products over fixed blocks; the ``near_candidates`` lowest of each query (``topk``) within the rounding bound of
    the lowest are recomputed in float64 (the stable sort keeps the candidates' order: the lowest sorted index is the
    lowest index). A query whose ``near_candidates``-th lowest is still within the bound may have more: flagged.
    """
    batch, positions, dimension = features.shape
    order = torch.where(is_query, 0, torch.where(is_candidate, 2, 1)).sort(dim=1, stable=True).indices  # (B, G)
    features = features.gather(1, order[..., None].expand(-1, -1, dimension))
    is_query, is_candidate = is_query.gather(1, order), is_candidate.gather(1, order)
    weights = is_candidate.to(features.dtype)[..., None]
    shift = (features * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)  # the candidates' mean, (B, D)
    shift = torch.cat([shift[:, :-_COORDINATES].round(), shift[:, -_COORDINATES:]], dim=1)[:, None]
    centred = features - shift
    squares = centred.pow(2).sum(dim=-1)  # (B, G)
    largest = torch.where(is_candidate, squares, torch.zeros_like(squares)).amax(dim=1, keepdim=True)
    bound = _rounding_bound(centred, largest, dimension)  # (B, G)
    infinite = torch.full_like(squares, torch.inf)
    ranked = torch.cat([-2 * centred.float(), torch.where(is_candidate, squares, infinite).float()[..., None]],
                       dim=2)  # (B, G, D + 1)
    ranked_queries = torch.cat([centred.float(), torch.ones_like(squares, dtype=torch.float32)[..., None]], dim=2)
    kept = min(near_candidates, positions)
    # rows of queries per block: ~2^22 float32 distances and ~2^22 float64 recomputed differences at most
    block = min(positions, max(8, -(-_QUERY_BLOCK_ELEMENTS // (batch * max(positions, kept * dimension)))))
    images = torch.arange(batch, device=features.device)[:, None, None]
    best, overflow = [], []
    for start in range(0, positions, block):  # a fixed number of fixed-size blocks: (B, block, G - start)
        stop, kept = min(start + block, positions), min(near_candidates, positions - start)
        approximate = torch.bmm(ranked_queries[:, start:stop], ranked[:, start:].transpose(1, 2))
        lowest, index = approximate.topk(kept, dim=2, largest=False)
        index = index + start
        near = (lowest <= lowest[..., :1] + bound[:, start:stop, None]) & lowest.isfinite()  # a prefix, sorted
        exact = ((features[:, start:stop, None] - features[images, index]) ** 2).sum(dim=-1)  # (B, block, kept)
        exact = torch.where(near, exact, torch.inf)
        tied = torch.where(exact == exact.amin(dim=2, keepdim=True), index, positions)
        best.append(tied.amin(dim=2) % positions)  # no candidate at all: 0
        overflow.append(near[..., -1] & is_query[:, start:stop] & (kept < positions - start))
    nearest = order.gather(1, torch.cat(best, dim=1))  # sorted -> original positions, per sorted query
    return torch.empty_like(nearest).scatter(1, order, nearest), torch.cat(overflow, dim=1).any(dim=1)
