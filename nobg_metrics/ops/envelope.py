"""Row pass of the exact distance transform: the lower envelope of parabolas ``c(i) + (j - x_i)^2``.

For every row ``r`` and query column ``j`` we need the leftmost site ``i*`` minimising
``cost[r, i] + (j - x_i)^2`` over sites at sorted columns ``x_0 < x_1 < ...`` (Felzenszwalb & Huttenlocher
2012, "Distance transforms of sampled functions"). That matrix is Monge, so ``i*(j)`` is nondecreasing in
``j`` — the fact both passes below use. Only columns that hold a feature somewhere can be sites (the others
have no finite cost), so the caller passes just those: the sites pass costs ``O(S log W)`` per row for
``S`` such columns, not ``O(W log W)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.arith import any_along

COARSE_QUERIES = 16
"""Queries per row of the row pass's first, brute-force level (a power of two)."""


def lower_envelope_bisection(cost: Tensor, positions: Tensor, width: int, far: int) -> Tensor:
    """Leftmost ``argmin_i cost[g, r, i] + (j - positions[g, i])^2`` for every query ``j < width`` (exact).

    First ``i*`` at ``j = 0, Q, 2Q, ...`` (``Q`` a power of two, at most :data:`COARSE_QUERIES`) by a brute-force scan: the
    smallest ``key = (cost + (j - x)^2) << bits | i`` is the minimum and its leftmost site. Then, for
    ``s = Q/2, ..., 1``, the odd multiples ``j`` of ``s`` scan sites ``[i*(j - s), i*(j + s)]`` (monotone
    argmin). Those ranges tile the sites: site ``i`` belongs to the query ``q`` with ``low_q <= i <
    low_{q+1}`` (a scatter + cumsum), and each query's right end ``high_q = low_{q+1}`` is scored on its own.
    A site given to a query whose range does not hold it only adds a candidate, which cannot change the
    leftmost argmin. One ``scatter_reduce(amin)`` of the keys over the owners gives each query's minimum and
    leftmost argmin together. ``ceil(log2 W) - 4`` vectorised levels, each ``O(S)`` per row: never an
    ``O(W·S)`` tensor. Each level keeps ``i*`` at every multiple of ``s`` in a contiguous array (the previous
    level's and its own, interleaved), so ``i*(j -+ s)`` are plain slices.

    Args:
        cost: :math:`(G, R, S)` int32 site costs (``g^2``; ``far^2`` where a site has no feature).
        positions: :math:`(G, 1, S)` int64 columns of the sites, nondecreasing wherever the cost is finite
            (a repeated column must repeat its cost; sites of cost ``far^2`` may sit anywhere: they never win).
        width: number of query columns ``W``.
        far: bound of every gap (``H + W + 1``): keys stay below ``2^63``. Keys are int32 where the largest
            real cost is known (CPU) and ``(cost + (W - 1)^2) << bits`` fits: ~25 % faster.

    Returns:
        :math:`(G, R, W)` int64 site index ``i*`` of every query.
    """
    groups, rows, sites = cost.shape
    device = cost.device
    bits = max(1, (sites - 1).bit_length())
    mask = (1 << bits) - 1
    # <= COARSE_QUERIES brute-force queries per row: one costs ~1/8 of a bisection level, and each halving
    # of their number adds a level
    stride = 1 << max(0, math.ceil(math.log2(max(width, 1))) - int(math.log2(COARSE_QUERIES)))
    # keys in int32 when the largest one fits (on CPU the real costs are known: int32 kernels are ~2x faster)
    narrow = ((_largest_cost(cost, far) + (width - 1) ** 2 + 1) << bits) <= 2**31
    key_dtype = torch.int32 if narrow else torch.int64
    index = torch.arange(sites, device=device, dtype=key_dtype)
    base = torch.bitwise_left_shift(cost.to(key_dtype), bits).bitwise_or_(index)  # key without (j - x)^2
    # ``best``: i* at j = 0, s, 2s, ... (every multiple of the level's s below W), then one more entry, the
    # last site: a query past the last column (j + s >= W) reads it as its right end
    coarse = range(0, width, stride)
    # two buffers the levels alternate between (a fresh 8 MB tensor per level page-faults on CPU)
    buffers = [torch.empty((groups, rows, width + 1), device=device, dtype=torch.int64) for _ in range(2)]
    best = buffers[0][:, :, : len(coarse) + 1]
    best[:, :, -1].fill_(sites - 1)
    # the coarse queries: the smallest key is the minimum and its leftmost site (``amin`` is a vectorised
    # reduction, ~8x ``argmin``); one contiguous (G, R, S) buffer per query
    scratch = torch.empty_like(base)
    for slot, column in enumerate(coarse):
        offset = (column - positions).to(key_dtype)  # (G, 1, S)
        torch.addcmul(base, offset, offset, value=1 << bits, out=scratch)
        best[:, :, slot] = scratch.amin(dim=2).bitwise_and_(mask)
    site_columns = positions.to(key_dtype)
    starts = torch.empty((groups, rows, sites), device=device, dtype=key_dtype)
    owner = torch.empty((groups, rows, sites), device=device, dtype=key_dtype)
    offset = torch.empty((groups, rows, sites), device=device, dtype=key_dtype)
    key = scratch
    owner_index = owner if not narrow else torch.empty((groups, rows, sites), device=device, dtype=torch.int64)
    ones = torch.ones((1, 1, 1), device=device, dtype=key_dtype)
    expanded_columns = site_columns.expand(groups, rows, sites)
    step = stride // 2
    while step >= 1:
        count = len(range(step, width, 2 * step))  # odd multiples of s below W: the level's queries
        multiples = best.shape[2] - 1  # multiples of 2s below W
        low = best[:, :, :count]  # i*(j - s)
        high = best[:, :, 1 : count + 1]  # i*(j + s)
        starts.zero_().scatter_add_(2, low[:, :, 1:], ones.expand(groups, rows, count - 1))
        torch.cumsum(starts, dim=2, out=owner)  # owner(i) = #{q >= 1 : low_q <= i}
        torch.add(step - site_columns, owner, alpha=2 * step, out=offset)  # j_owner - x_i
        torch.addcmul(base, offset, offset, value=1 << bits, out=key)
        segment = torch.full((groups, rows, count), torch.iinfo(key_dtype).max, device=device, dtype=key_dtype)
        if narrow:  # scatter_reduce takes int64 indices; a kept buffer (a fresh 8 MB one page-faults)
            owner_index.copy_(owner)
        segment.scatter_reduce_(2, owner_index, key, reduce="amin")
        queries = torch.arange(step, width, 2 * step, device=device, dtype=key_dtype)
        gap = queries - expanded_columns.gather(2, high)
        right = torch.addcmul(base.gather(2, high), gap, gap, value=1 << bits)
        finer = buffers[1][:, :, : multiples + count + 1]
        buffers.reverse()
        finer[:, :, 0 : 2 * multiples : 2] = best[:, :, :multiples]
        finer[:, :, 1 : 2 * count : 2] = torch.minimum(segment, right).bitwise_and_(mask)
        finer[:, :, -1].fill_(sites - 1)
        best = finer
        step //= 2
    return best[:, :, :width]


def _largest_cost(cost: Tensor, far: int) -> int:
    """The largest site cost: read where host reads are free (CPU), else the bound ``far^2`` (no sync)."""
    return int(cost.max()) if host_reads.free_on(cost) else far * far


def lower_envelope_rounds(cost: Tensor, rounds: int) -> Tensor:
    """``argmin_k cost[r, k] + (j - k)^2`` over ``|j - k| <= rounds``, sites at every column ``k``.

    Exact where the distance is <= ``rounds``. Round t: ``f(j) <- min(f(j), f(j - 1) + 2t - 1)`` then
    ``f(j) <- min(f(j), f(j + 1) + 2t - 1)`` (docs/references.md); the site rides in the low bits of the key.

    Args:
        cost: :math:`(R, W)` int32 site costs.
        rounds: number of rounds T.

    Returns:
        :math:`(R, W)` int64 column per pixel (optimal wherever the optimum is within T columns).
    """
    width = cost.shape[1]
    bits = max(1, (width - 1).bit_length())
    sites = torch.arange(width, device=cost.device, dtype=torch.int64)
    key = torch.bitwise_left_shift(cost.to(torch.int64), bits).bitwise_or_(sites)
    for t in range(1, rounds + 1):  # a bounded number of vectorised rounds
        increment = (2 * t - 1) << bits
        key[:, 1:] = torch.minimum(key[:, 1:], key[:, :-1] + increment)
        key[:, :-1] = torch.minimum(key[:, :-1], key[:, 1:] + increment)
    return key.bitwise_and_((1 << bits) - 1)


def feature_columns(features: Tensor) -> tuple[Tensor, int]:
    """The columns of each image that hold a feature, in order: the only possible sites.

    On CPU the sites are cut to the widest image's count ``S`` (one host read, free there), and an image
    with fewer feature columns repeats its last one: a copy of a site, to the right of it in site order,
    ties with it everywhere and so never becomes the leftmost argmin (and keeps every cost real, so the
    row pass's keys stay narrow). On other devices all ``W`` columns stay (no sync), feature columns first,
    then the others (cost ``far^2``: they never win).

    Args:
        features: :math:`(B, H, W)` bool.

    Returns:
        ``(positions, S)``: :math:`(B, 1, S)` int64 columns, nondecreasing over each image's feature columns.
    """
    present = any_along(features, 1)  # (B, W)
    order = torch.sort((~present).to(torch.uint8), dim=1, stable=True).indices
    if not host_reads.free_on(features):
        return order[:, None, :], features.shape[-1]
    counts = present.sum(dim=1)
    sites = max(1, int(counts.max()))
    last = (counts - 1).clamp_(min=0)[:, None]  # an image without features keeps column 0 (no finite cost)
    repeat = torch.minimum(torch.arange(sites, device=features.device)[None, :], last)
    return order.gather(1, repeat)[:, None, :], sites
