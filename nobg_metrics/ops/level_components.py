"""Largest components of nested threshold sets, all levels at once: the core of the connectivity error.

DIM's connectivity error labels ``{x >= t_m}`` for every threshold ``t_1 < ... < t_M`` and keeps, per
level, the largest 4-connected component (MATLAB's tie rule). The sets are nested, so one integer
**level map** ``n = #{m : x >= t_m}`` describes all of them: pixel p lies in level set m iff ``n(p) >= m``.

Every quantity the labelling needs is read off ``n`` sparsely instead of from M full masks:

- a run of level m starts at (y, x) iff ``n(y, x-1) < m <= n(y, x)`` — so a pixel starts
  ``max(0, n(y, x) - n(y, x-1))`` runs, one per level in between; ends likewise with the right neighbour;
- runs of level m in rows y and y+1 touch where ``v = min(n(y, x), n(y+1, x)) >= m``; one edge per
  overlap, at its first column: where ``v(x-1) < m <= v(x)``;
- runs, keyed ``(level, raster position)``, are solved by the union-find of
  :func:`nobg_metrics.ops.union_find.union_find_roots` (levels never share an edge), sized, and the
  largest per (level, image) is picked by ``size · HW + (HW − 1 − first column-major pixel)``;
- a pixel's answer is the number of leading levels whose largest component holds it. The run of level m
  that holds a pixel lies inside one run of level m − 1 (its *container*); a run is *good* when it and
  every container below it are largest-component runs — an OR along the container chain by pointer
  doubling, ``ceil(log2 M)`` fixed rounds — and the count is the number of good runs over the pixel:
  ``+1`` at each good run's start, ``−1`` after its end, one running sum.

Cost: a few passes over the (B, H, W) level map, then work proportional to the number of runs over all
levels (the perimeter of the level sets, not their area) — versus M full-image labellings.
Two forms, one switch (``engine`` of :func:`connected_level_count`): ``"data_sized"`` lists runs and edges by the
data and solves the union-find to convergence (host syncs: ``nonzero`` and the convergence tests, as in
``ops.components``); ``"fixed"`` pads both lists to proven bounds and runs a fixed number of union-find rounds (no
host sync).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.union_find import union_find_roots


def level_steps(count: Tensor, base: Tensor, capacity: int | None = None,
                pad_level: int = 0) -> tuple[Tensor, Tensor]:
    """Expand each nonzero ``count`` into its levels ``base + 1 .. base + count``.

    Args:
        count: :math:`(N,)` non-negative ints (how many levels a position emits).
        base: :math:`(N,)` the level below the first one emitted.
        capacity: ``None``: exactly K = ``count.sum()`` entries (host reads: ``nonzero`` and K). Else a
            proven bound on K (no host read): the list is padded to ``capacity`` with position N at
            ``pad_level`` (above every real level, so padding sorts last).

    Returns:
        ``(position, level)``, each :math:`(K,)` (or :math:`(capacity,)`) int64, position-major.
    """
    if capacity is None:
        position = torch.nonzero(count).squeeze(1)
        repeats = count.index_select(0, position).long()
        total = int(repeats.sum())  # a host read, as nonzero's
        first = base.index_select(0, position).long() + 1
    else:
        repeats = torch.cat([count.long(), capacity - count.sum(dtype=torch.int64).view(1)])
        position = torch.arange(count.numel() + 1, device=count.device)
        first = torch.cat([base.long() + 1, torch.full((1,), pad_level, dtype=torch.int64, device=count.device)])
        total = capacity
    offset = torch.cumsum(repeats, 0) - repeats  # exclusive: index of each group's first entry
    rank = torch.arange(total, device=count.device) - offset.repeat_interleave(repeats, output_size=total)
    level = first.repeat_interleave(repeats, output_size=total) + rank
    if capacity is not None:
        level.clamp_(max=pad_level)  # real levels are below pad_level; padding counts up from it
    return position.repeat_interleave(repeats, output_size=total), level


def rises(level_map: Tensor, last: bool = False) -> tuple[Tensor, Tensor]:
    """``(max(0, n(x) - n(x-1)), n(x-1))`` along the last dim (``x+1`` if ``last``), 0 beyond the border."""
    neighbour = torch.zeros_like(level_map)
    if last:
        neighbour[..., :-1] = level_map[..., 1:]
    else:
        neighbour[..., 1:] = level_map[..., :-1]
    return level_map.sub(neighbour).clamp_min_(0), neighbour


def sorted_keys(position: Tensor, level: Tensor, pixels: int, num_levels: int) -> Tensor:
    """``level · pixels + position`` in (level, raster) order.

    ``position`` comes in raster order, so a stable sort of the small level values orders the keys: a
    radix sort of uint8 (int16 beyond 254 levels), ~5x faster on CPU than sorting the int64 keys. Levels
    reach M + 1 (the padding of the device path).
    """
    small = torch.uint8 if num_levels < 255 else torch.int16 if num_levels < 2**15 - 1 else torch.int32
    order = torch.sort(level.to(small), stable=True).indices
    return (level * pixels + position).index_select(0, order)


TieOrder = Literal["column", "raster"]
"""Which of equal largest components wins: the one whose first pixel comes first in column-major order (MATLAB's
``bwconncomp``) or in raster order (skimage's ``label``)."""

FIXED_SLOTS_PER_CALL = 2**24
"""Run slots the fixed-size (device) path pads per call: ~200 bytes each at peak (~3 GiB). Batches needing
more (``B · H · ⌈W/2⌉ · M``; 5.2 M per 1024² image at M = 10) are labelled in blocks of images."""


def connected_level_count(level_map: Tensor, num_levels: int, *, engine: host_reads.Engine = "auto",
                          order: TieOrder = "column") -> Tensor:
    """Per pixel, how many leading levels m = 1, 2, ... have their largest 4-connected component over it.

    Level set m of image b is ``{p : level_map[b, p] >= m}``; its largest component follows MATLAB
    (``bwconncomp(·, 4)`` + first maximum: equal sizes go to the component whose first pixel in
    column-major order comes first; ``order="raster"``: in raster order, as skimage's labels). A level with no
    pixel has an empty largest component.

    Tall maps (``H > W``) are labelled transposed (the components are the same; column-major order on the map is
    raster order on its transpose): the runs are along the longer side, so a 10^6 x 1 map has as few runs and
    edges as a 1 x 10^6 one instead of a run and an edge per pixel and level.

    Args:
        level_map: :math:`(B, H, W)` integer, values in ``0 .. num_levels``.
        num_levels: M, the number of levels.
        engine: ``"data_sized"``: list runs and edges by the data and solve to convergence (host reads; on CPU
            only the bounding box of level 1 is labelled); ``"fixed"``: padded lists and fixed rounds
            (:func:`_level_count`), in blocks of images of at most :data:`FIXED_SLOTS_PER_CALL` slots, no host read;
            ``"auto"``: ``"data_sized"`` where host reads are free, else ``"fixed"``. Same counts.
        order: the tie rule between equal largest components: ``"column"`` (MATLAB) or ``"raster"`` (skimage).

    Returns:
        :math:`(B, H, W)` int32 counts in ``0 .. M``: k means the pixel is in the largest component of
        levels 1..k and not of level k + 1.

    Examples:
        >>> n = torch.tensor([[[2, 2, 0, 1], [0, 2, 0, 1], [1, 0, 0, 1]]])
        >>> connected_level_count(n, 2)
        tensor([[[2, 2, 0, 0],
                 [0, 2, 0, 0],
                 [0, 0, 0, 0]]], dtype=torch.int32)
        >>> torch.equal(connected_level_count(n, 2, engine="fixed"), connected_level_count(n, 2))
        True
    """
    if order not in ("column", "raster"):
        raise ValueError(f"`order` must be 'column' or 'raster', got {order!r}")
    if level_map.shape[-2] > level_map.shape[-1]:
        flipped: TieOrder = "raster" if order == "column" else "column"
        return connected_level_count(level_map.transpose(1, 2), num_levels, engine=engine,
                                     order=flipped).transpose(1, 2).contiguous()
    raster = order == "raster"
    levels = level_map.to(torch.int16 if num_levels < 2**15 else torch.int32).contiguous()
    by_data = host_reads.resolve_engine(engine, levels) == "data_sized"
    b, h, w = levels.shape
    full = host_reads.Window(slice(0, h), slice(0, w), slice(0, h), slice(0, w))
    box = host_reads.window(levels > 0, 0) if by_data else full  # CPU: the box of level 1 (0 outside it)
    block = max(1, FIXED_SLOTS_PER_CALL // max(1, h * ((w + 1) // 2) * num_levels))
    if not by_data and b > block:  # memory: the padding grows with the batch
        return torch.cat([_level_count(levels[i:i + block], num_levels, False, raster) for i in range(0, b, block)])
    if box.rows == slice(0, h) and box.cols == slice(0, w):
        return _level_count(levels, num_levels, by_data, raster)
    counts = torch.zeros(levels.shape, dtype=torch.int32, device=levels.device)
    if box.rows.start != box.rows.stop:
        counts[box.crop] = _level_count(levels[box.crop].contiguous(), num_levels, by_data, raster)
    return counts


def _level_count(levels: Tensor, num_levels: int, by_data: bool, raster: bool = False) -> Tensor:
    """:func:`connected_level_count` on a (B, H, W) int16/int32 level map (ties by the first pixel in column-major
    order, or in raster order with ``raster``).

    ``by_data`` (CPU, or host syncs allowed): the run and edge lists have their exact lengths and the
    union-find runs to convergence. Otherwise both lists are padded to proven bounds (a row of W pixels starts at most
    ``M * ceil(W / 2)`` runs over all levels: two neighbours rise by at most M together) and
    the ``"fixed"`` :func:`~nobg_metrics.ops.union_find.union_find_roots` runs a fixed number of rounds. Padding
    sits at level M + 1: its own groups, never counted.
    """
    b, h, w = levels.shape
    pixels = b * h * w
    device = levels.device
    bound = None if by_data else num_levels * ((w + 1) // 2)  # runs per row, all levels
    pad = {} if bound is None else {"capacity": b * h * bound, "pad_level": num_levels + 1}
    counts = torch.zeros(pixels + 2, dtype=torch.int32, device=device)
    start_rise, left = rises(levels)
    end_rise, right = rises(levels, last=True)
    start_keys = sorted_keys(*level_steps(start_rise.view(-1), left.view(-1), **pad), pixels, num_levels)
    end_keys = sorted_keys(*level_steps(end_rise.view(-1), right.view(-1), **pad), pixels, num_levels)
    runs = start_keys.numel()
    if runs == 0:
        return counts[:pixels].view(b, h, w)
    run_level = torch.div(start_keys, pixels, rounding_mode="floor")
    start = start_keys - run_level * pixels  # padding: position ``pixels``
    end = end_keys - run_level * pixels  # the i-th end of a level closes its i-th run
    parent = torch.arange(runs, device=device)
    if h > 1:
        overlap = torch.minimum(levels[:, :-1], levels[:, 1:])  # (B, H-1, W)
        rise, below = rises(overlap)
        if bound is not None:
            pad["capacity"] = b * (h - 1) * bound
        where, edge_level = level_steps(rise.view(-1), below.view(-1), **pad)
        rows = torch.div(where, w, rounding_mode="floor")
        upper = where + torch.div(rows, h - 1, rounding_mode="floor") * w  # (b, y, x) of (B, H-1, W) in (B, H, W)
        keys = sorted_keys(upper, edge_level, pixels, num_levels)  # sorted queries search ~3x faster (cache)
        upper_run = torch.searchsorted(start_keys, keys, right=True) - 1  # padding: the last run, twice (a loop)
        lower_run = torch.searchsorted(start_keys, keys + w, right=True) - 1
        parent = union_find_roots(runs, upper_run, lower_run, engine="data_sized" if bound is None else "fixed",
                                  first_chains=h)
    image_pixels = h * w
    within = start % image_pixels
    column_major = within if raster else (within % w) * h + torch.div(within, w, rounding_mode="floor")
    size = torch.zeros(runs, dtype=torch.int64, device=device).index_add_(0, parent, end - start + 1)
    first = torch.full((runs,), image_pixels, dtype=torch.int64, device=device)
    first = first.scatter_reduce(0, parent, column_major, "amin")
    score = (size * image_pixels + (image_pixels - 1 - first)).index_select(0, parent)
    group = (run_level - 1) * b + torch.div(start, image_pixels, rounding_mode="floor")  # padding: M * b + b
    best = torch.full(((num_levels + 1) * b + 1,), -1, dtype=torch.int64, device=device)
    best = best.scatter_reduce(0, group, score, "amax")
    bad = score != best.index_select(0, group)
    # container: the run of the level below holding this run's first pixel (level 1 and padding: itself)
    container = torch.searchsorted(start_keys, start_keys - pixels, right=True) - 1
    own = (run_level == 1) | (run_level > num_levels)
    container = torch.where(own, torch.arange(runs, device=device), container)
    for _ in range(math.ceil(math.log2(num_levels)) if num_levels > 1 else 0):  # fixed: chains are <= M long
        bad = bad | bad.index_select(0, container)
        container = container.index_select(0, container)
    good = (~bad).to(torch.int32)
    if bound is not None:
        good.masked_fill_(run_level > num_levels, 0)
    counts.index_add_(0, start, good)
    counts.index_add_(0, end + 1, -good)
    return counts.cumsum_(0)[:pixels].view(b, h, w)
