"""Row pass of the exact distance transform: the lower envelope of parabolas ``c(i) + (j - x_i)^2``.

For every row ``r`` and query column ``j`` we need the leftmost site ``i*`` minimising
``cost[r, i] + (j - x_i)^2`` over sites at sorted columns ``x_0 < x_1 < ...`` (Felzenszwalb & Huttenlocher
2012, "Distance transforms of sampled functions"). That matrix is Monge, so ``i*(j)`` is nondecreasing in
``j`` — the fact both passes below use. Only columns that hold a feature somewhere can be sites (the others
have no finite cost), so the caller passes just those: the sites pass costs ``O(S log W)`` per row for
``S`` such columns, not ``O(W log W)``.

The bisection runs on strips of rows of about :data:`STRIP_ELEMENTS` row-site pairs: its dozen buffers then
stay in the core's cache (a 1024² gt: 8 strips of 128 rows, ~1.6x faster than one pass over the whole map).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.arith import any_along

COARSE_QUERIES = 16
"""Queries per row of the row pass's first, brute-force level (a power of two)."""

STRIP_ELEMENTS = 1 << 17
"""Row-site pairs per strip of the bisection (~128 rows of a 1024-wide gt: 512 KiB int32 buffers)."""


def lower_envelope_bisection(cost: Tensor, positions: Tensor, width: int, far: int) -> Tensor:
    """Leftmost ``argmin_i cost[g, r, i] + (j - positions[g, i])^2`` for every query ``j < width`` (exact).

    Args:
        cost: :math:`(G, R, S)` int32 or int64 site costs (``g^2``; ``far^2`` where a site has no feature).
        positions: :math:`(G, 1, S)` int64 columns of the sites, nondecreasing wherever the cost is finite
            (a repeated column must repeat its cost; sites of cost ``far^2`` may sit anywhere: they never win).
        width: number of query columns ``W``.
        far: bound of every gap (``H + W + 1``). Keys are int32 where the largest real cost is known (CPU)
            and ``(cost + (W - 1)^2) << bits`` fits (~2x faster kernels), else int64.

    Returns:
        :math:`(G, R, W)` int64 site index ``i*`` of every query.
    """
    plan = _Plan.make(positions, width, _largest_cost(cost, far))
    out = torch.empty((*cost.shape[:2], width), device=cost.device, dtype=torch.int64)
    for rows in _strips(cost):
        keys = envelope_keys(plan.base_keys(cost[:, rows].to(plan.key_dtype, copy=True)), plan)
        torch.bitwise_and(keys, plan.mask, out=out[:, rows])
    return out


def lower_envelope_minimum(gaps: Tensor, positions: Tensor, width: int, cap: int,
                           with_sites: bool = False) -> tuple[Tensor, Tensor | None]:
    """``min(cap, min_i gaps[g, r, i]^2 + (j - positions[g, i])^2)`` for every query ``j < width`` (exact), and
    optionally the leftmost site ``i*`` reaching it.

    Both are read off the bisection's packed keys (nothing is gathered); the costs are squared strip by strip,
    in cache.

    Args:
        gaps: :math:`(G, R, S)` int32 site gaps, each ``gap^2 <= cap``.
        positions: :math:`(G, 1, S)` int64 columns, nondecreasing (as :func:`lower_envelope_bisection` takes them).
        width: number of query columns ``W``.
        cap: the saturation value, below ``2^31``.
        with_sites: also return the sites.

    Returns:
        ``(minimum, sites)``: :math:`(G, R, W)` int32 each (``sites`` ``None`` unless asked for; where the minimum
        is below ``cap`` it is the leftmost site of that minimum).
    """
    plan = _Plan.make(positions, width, cap)  # a known bound of the costs: no host read
    out = torch.empty((*gaps.shape[:2], width), device=gaps.device, dtype=torch.int32)
    sites = torch.empty_like(out) if with_sites else None
    for rows in _strips(gaps):
        cost = gaps[:, rows].to(plan.key_dtype, copy=True)
        keys = envelope_keys(plan.base_keys(cost.mul_(cost)), plan)  # mul_: square_ (pow) is ~15x slower on ints
        if sites is not None:
            sites[:, rows] = keys.bitwise_and(plan.mask)
        out[:, rows] = keys.bitwise_right_shift_(plan.bits).clamp_(max=cap)  # int64 -> int32
    return out, sites


def _strips(cost: Tensor) -> list[slice]:
    """Row slices of about :data:`STRIP_ELEMENTS` row-site pairs (a bounded number of vectorised rounds)."""
    groups, rows, sites = cost.shape
    step = max(1, STRIP_ELEMENTS // max(1, groups * sites))
    return [slice(start, min(start + step, rows)) for start in range(0, rows, step)]


class _Plan(NamedTuple):
    """What the bisection's strips share: the key layout, the coarse queries' offsets, the site columns."""

    width: int
    bits: int
    key_dtype: torch.dtype
    stride: int
    coarse_offsets: list[Tensor]
    site_columns: Tensor
    level_queries: list[Tensor]
    level_offsets: list[Tensor]

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @staticmethod
    def make(positions: Tensor, width: int, largest_cost: int) -> _Plan:
        """Keys ``(cost + (j - x)^2) << bits | i`` in int32 when the largest one fits, else int64."""
        bits = max(1, (positions.shape[2] - 1).bit_length())
        narrow = ((largest_cost + (width - 1) ** 2 + 1) << bits) <= 2**31
        key_dtype = torch.int32 if narrow else torch.int64
        # <= COARSE_QUERIES brute-force queries per row: one costs ~1/8 of a bisection level, and each halving
        # of their number adds a level
        stride = 1 << max(0, math.ceil(math.log2(max(width, 1))) - int(math.log2(COARSE_QUERIES)))
        device = positions.device
        columns = positions.to(key_dtype)
        coarse = torch.arange(0, width, stride, device=device, dtype=key_dtype).view(-1, 1, 1, 1)
        offsets = list((coarse - columns).unbind(0))  # (G, 1, S) per coarse query, one op for all
        steps = [stride >> level for level in range(1, stride.bit_length())]  # s = stride / 2, ..., 1
        queries = [torch.arange(step, width, 2 * step, device=device, dtype=key_dtype) for step in steps]
        exponents = torch.arange(len(steps) - 1, -1, -1, device=device, dtype=key_dtype)  # s = 2^e (no host data)
        level_offsets = list((torch.bitwise_left_shift(1, exponents).view(-1, 1, 1, 1) - columns).unbind(0))
        return _Plan(width, bits, key_dtype, stride, offsets, columns, queries, level_offsets)

    def base_keys(self, cost: Tensor) -> Tensor:
        """``cost << bits | i`` in place: the keys without the ``(j - x)^2`` term (``cost`` a contiguous copy)."""
        index = torch.arange(cost.shape[2], device=cost.device, dtype=cost.dtype)
        return cost.bitwise_left_shift_(self.bits).bitwise_or_(index)


def envelope_keys(base: Tensor, plan: _Plan) -> Tensor:
    """The smallest key ``(cost_i + (j - x_i)^2) << bits | i`` of every query ``j < width``: the minimum and its
    leftmost site ``i*`` together.

    First ``i*`` at ``j = 0, Q, 2Q, ...`` (``Q`` a power of two, at most :data:`COARSE_QUERIES` queries) by a
    brute-force scan (``amin`` of the keys). Then, for ``s = Q/2, ..., 1``, the odd multiples ``j`` of ``s``
    scan sites ``[i*(j - s), i*(j + s)]`` (monotone argmin). Those ranges tile the sites: site ``i`` belongs
    to the query ``q`` with ``low_q <= i < low_{q+1}`` (a scatter + cumsum), and each query's right end
    ``high_q = low_{q+1}`` is scored on its own. A site given to a query whose range does not hold it only adds
    a candidate, which cannot change the leftmost argmin. One ``scatter_reduce(amin)`` of the keys over the
    owners gives each query's minimum and leftmost argmin together. ``ceil(log2 W) - 4`` vectorised levels,
    each ``O(S)`` per row: never an ``O(W·S)`` tensor. Each level keeps the keys at every multiple of ``s`` in
    a contiguous array (the previous level's and its own, interleaved), so those at ``j -+ s`` are plain slices.

    Args:
        base: :math:`(G, R, S)` ``cost << bits | i`` in the plan's key dtype (contiguous), every key below the
            dtype's max.
        plan: the layout shared by the strips of one call.

    Returns:
        :math:`(G, R, W)` int64 keys (a view of a buffer).
    """
    groups, rows, sites = base.shape
    device, key_dtype, width, bits, mask = base.device, base.dtype, plan.width, plan.bits, plan.mask
    # ``best``: keys at j = 0, s, 2s, ... (every multiple of the level's s below W), then one more entry whose
    # site is the last one: a query past the last column (j + s >= W) reads it as its right end. int64 (whatever
    # the keys' width), so the sites read off it index directly; two buffers the levels alternate between (a
    # fresh tensor per level page-faults on CPU)
    buffers = [torch.empty((groups, rows, width + 1), device=device, dtype=torch.int64) for _ in range(2)]
    best = buffers[0][:, :, : len(plan.coarse_offsets) + 1]
    best[:, :, -1].fill_(sites - 1)
    scratch = torch.empty_like(base)
    coarse = torch.empty((groups, rows, len(plan.coarse_offsets)), device=device, dtype=key_dtype)
    for slot, offset in enumerate(plan.coarse_offsets):  # the coarse queries: one contiguous buffer per query
        torch.addcmul(base, offset, offset, value=1 << bits, out=scratch)
        torch.amin(scratch, dim=2, out=coarse[:, :, slot])  # a vectorised reduction, ~8x ``argmin``
    best[:, :, :-1] = coarse
    expanded_columns = plan.site_columns.expand(groups, rows, sites)
    starts = torch.empty((groups, rows, sites), device=device, dtype=key_dtype)
    owner = torch.empty((groups, rows, sites), device=device, dtype=key_dtype)
    offset = torch.empty((groups, rows, sites), device=device, dtype=key_dtype)
    key = scratch
    narrow = key_dtype != torch.int64  # scatter_reduce takes int64 indices: a kept buffer for the copy
    owner_index = torch.empty((groups, rows, sites), device=device, dtype=torch.int64) if narrow else owner
    ones = torch.ones((1, 1, 1), device=device, dtype=key_dtype)
    for level, queries in enumerate(plan.level_queries):
        step = plan.stride >> (level + 1)
        count = queries.numel()  # odd multiples of s below W: the level's queries
        multiples = best.shape[2] - 1  # multiples of 2s below W
        high = best[:, :, 1 : count + 1].bitwise_and(mask)  # i*(j + s)
        low = high[:, :, : count - 1]  # i*(j - s) of all but the first query
        starts.zero_().scatter_add_(2, low, ones.expand(groups, rows, count - 1))
        torch.cumsum(starts, dim=2, out=owner)  # owner(i) = #{q >= 1 : low_q <= i}
        torch.add(plan.level_offsets[level], owner, alpha=2 * step, out=offset)  # j_owner - x_i
        torch.addcmul(base, offset, offset, value=1 << bits, out=key)
        gap = queries - expanded_columns.gather(2, high)
        segment = torch.addcmul(base.gather(2, high), gap, gap, value=1 << bits)  # each query's right end
        if narrow:
            owner_index.copy_(owner)
        segment.scatter_reduce_(2, owner_index, key, reduce="amin")  # and the sites it owns
        finer = buffers[1][:, :, : multiples + count + 1]
        buffers.reverse()
        finer[:, :, 0 : 2 * multiples : 2] = best[:, :, :multiples]
        finer[:, :, 1 : 2 * count : 2] = segment
        finer[:, :, -1].fill_(sites - 1)
        best = finer
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
