"""Union-find on the edge lists of a planar graph (the run graphs of 2-D masks): the root of every node, two forms.

:func:`union_find_roots` takes the switch ``engine`` (:data:`~nobg_metrics.ops.host_reads.Engine`):

- ``"data_sized"``: min-root hooking and pointer jumping **to convergence** — each round hooks every root that has
  an edge to a smaller root onto the smallest such root (``scatter_reduce(amin)``), compresses all paths by
  ``parent = parent[parent]`` until stable, and drops the edges that became internal (``nonzero``). It stops when
  nothing changes, which the host must read back (a device sync per test; free on CPU).
- ``"fixed"``: a count of rounds proven sufficient for any planar graph of its size, on arrays whose sizes are
  proven bounds, so nothing is read back (below).

Both return the smallest node id of each node's component.

**Rounds of the fixed form.** One round hooks every root onto the smallest root it shares an edge with, if smaller
(``scatter_reduce(amin)``), then compresses every path fully (``parent = parent[parent]``, ``⌈log2(n + 1)⌉``
times: hooks only go to smaller ids, so a chain is at most n long). The roots left are the *local minima*
of the contracted graph. In a component of k ≥ 2 super-nodes, a minimum that absorbed no neighbour in
round t sees only smaller roots in round t + 1 (each of its neighbours hooked onto something smaller than
it), so it is absorbed then; the minima that did absorb a neighbour number at most min(#minima, k − #minima)
≤ ⌊k/2⌋. Hence **two rounds at least halve every unfinished component**: ⌊log2 k⌋ pairs of rounds finish it.

**Sizes.** After each pair of rounds only the *active* roots (those with an edge to another root) go on,
renumbered in order (so the smallest id stays the root): by the halving above at most ⌊n/2⌋ of n. Their
edges, once deduplicated (a sort of the ``(low, high)`` keys), number at most 3 per active root, because
the graphs solved here are planar (run graphs of 2-D masks, and their contractions; a simple planar graph
with k nodes has at most 3k − 6 edges); the sort runs only once a list exceeds 6 per root, every other
phase. So the arrays halve from one pair of rounds to the next (the edges every other one), and the whole
solve costs a few pairs of rounds on the input, with ⌈log2 n⌉ jumps each.

Were a bound ever exceeded (a non-planar graph), the compaction would index past its buffer and raise —
never return a wrong labelling.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads

__all__ = ["union_find_roots"]


def union_find_roots(nodes: int, first: Tensor, second: Tensor, *, engine: host_reads.Engine = "auto",
                     first_chains: int | None = None) -> Tensor:
    """The root (smallest node id) of every node's component.

    Args:
        nodes: n, the number of nodes (a Python int: on the ``"fixed"`` form it sets every size and round count).
        first, second: :math:`(E,)` int64 node ids in ``0 .. n - 1``, one edge per position, of a planar
            graph; an edge from a node to itself is allowed (padding).
        engine: ``"data_sized"`` (to convergence, host reads), ``"fixed"`` (fixed rounds, no host read) or
            ``"auto"`` (``"data_sized"`` where host reads are free, else ``"fixed"``).
        first_chains: for ``"fixed"``, a bound on the longest chain of hooks in the very first round, when the
            caller knows one (runs of a mask numbered in raster order hook one row up: the rows); default n.

    Returns:
        :math:`(n,)` int64, the same from either form.

    Examples:
        >>> union_find_roots(5, torch.tensor([3, 4, 1]), torch.tensor([4, 1, 1]))
        tensor([0, 1, 2, 1, 1])
        >>> union_find_roots(5, torch.tensor([3, 4, 1]), torch.tensor([4, 1, 1]), engine="fixed")
        tensor([0, 1, 2, 1, 1])
    """
    if host_reads.resolve_engine(engine, first) == "data_sized":
        return _converged_roots(nodes, first, second)
    return _fixed_roots(nodes, first, second, first_chains)


def _converged_roots(nodes: int, first: Tensor, second: Tensor) -> Tensor:
    """The ``"data_sized"`` form: hooking and jumping until no edge joins two roots (host reads per round)."""
    parent = torch.arange(nodes, device=first.device)
    edges = torch.stack([first, second])  # (2, K)
    while True:
        roots = parent.index_select(0, edges.view(-1)).view(2, -1)
        open_edges = torch.nonzero(roots[0] != roots[1]).squeeze(1)
        if open_edges.numel() == 0:
            return parent
        edges = edges.index_select(1, open_edges)
        roots = roots.index_select(1, open_edges)
        low, high = torch.minimum(roots[0], roots[1]), torch.maximum(roots[0], roots[1])
        parent = _compress(parent.scatter_reduce(0, high, low, "amin"))


def _compress(parent: Tensor) -> Tensor:
    """Pointer jumping ``parent = parent[parent]`` until every node points at its root (host reads)."""
    while True:
        grand = parent.index_select(0, parent)
        if torch.equal(grand, parent):
            return parent
        parent = grand


def _fixed_roots(nodes: int, first: Tensor, second: Tensor, first_chains: int | None) -> Tensor:
    """The ``"fixed"`` form: pairs of rounds on halving arrays, all sizes and counts from ``nodes`` (no host read)."""
    device = first.device
    ids = torch.int32 if nodes < 2**31 - 1 else torch.int64  # int32: half the bytes per gather
    size, tails, heads = nodes, first.to(ids), second.to(ids)  # the current space: ids 0 .. size - 1, sink size
    phases: list[tuple[Tensor, Tensor, Tensor]] = []
    while size > 1 and tails.numel() > 0:
        parent = _two_rounds(size, tails, heads, first_chains if not phases else None)
        tail_root, head_root = parent.index_select(0, tails), parent.index_select(0, heads)
        is_open = tail_root != head_root
        active = torch.zeros(size + 1, dtype=torch.bool, device=device)
        active.index_fill_(0, torch.where(is_open, tail_root, size).long(), True)  # closed edges mark the sink
        active.index_fill_(0, torch.where(is_open, head_root, size).long(), True)
        active[size:].fill_(False)  # the sink
        next_size = size // 2  # at most half the nodes stay active (module docstring)
        rank = torch.cumsum(active, 0, dtype=ids).sub_(1)  # order-preserving: the smallest id stays the root
        next_id = torch.where(active, rank, next_size)  # finished or inactive -> the next space's sink
        phases.append((parent, active, next_id))
        tails, heads = _next_edges(tail_root, head_root, is_open, next_id, next_size)
        size = next_size
    return _resolve(phases, nodes, device).long()


def _two_rounds(size: int, tails: Tensor, heads: Tensor, first_chains: int | None) -> Tensor:
    """Two rounds of min-root hooking with full compression on ``size`` nodes (+ sink): :math:`(size + 1,)`.

    A chain of hooks of length L is flattened by ``⌈log2(L + 1)⌉`` jumps; chains are at most ``size`` long.
    """
    parent = torch.arange(size + 1, dtype=tails.dtype, device=tails.device)
    for chains in (size if first_chains is None else min(first_chains, size), size):
        tail_root, head_root = parent.index_select(0, tails), parent.index_select(0, heads)
        parent = parent.scatter_reduce(0, torch.maximum(tail_root, head_root).long(),
                                       torch.minimum(tail_root, head_root), "amin")
        for _ in range(math.ceil(math.log2(chains + 1))):
            parent = parent.index_select(0, parent)
    return parent


def _next_edges(tail_root: Tensor, head_root: Tensor, is_open: Tensor, next_id: Tensor,
                next_size: int) -> tuple[Tensor, Tensor]:
    """The open edges between active roots, renumbered (closed ones become sink self-loops): ``(tails,
    heads)``: as they are while E <= 6 per next-space node, else deduplicated into 3 per node (the planar
    bound) — one sort every other phase instead of every phase (~10 % of the solve on CPU)."""
    tails = torch.where(is_open, next_id.index_select(0, tail_root), next_size)
    heads = torch.where(is_open, next_id.index_select(0, head_root), next_size)
    if tails.numel() <= 6 * next_size:
        return tails, heads  # small enough: sort only when the list exceeds twice the bound (every other phase)
    stride = next_size + 1
    closed = stride * stride  # sorts after every open key
    key = torch.where(is_open, torch.minimum(tails, heads).long() * stride + torch.maximum(tails, heads), closed)
    key = torch.sort(key).values
    fresh = key != closed
    fresh[1:] &= key[1:] != key[:-1]
    capacity = min(key.numel(), 3 * next_size)
    slot = torch.where(fresh, torch.cumsum(fresh, 0), 0)  # 1-based; 0 collects the rest, then is dropped
    kept = torch.full((capacity + 1,), closed, dtype=key.dtype, device=key.device).scatter_(0, slot, key)[1:]
    is_edge = kept != closed
    return (torch.where(is_edge, torch.div(kept, stride, rounding_mode="floor"), next_size).to(tails.dtype),
            torch.where(is_edge, kept % stride, next_size).to(tails.dtype))


def _resolve(phases: list[tuple[Tensor, Tensor, Tensor]], nodes: int, device: torch.device) -> Tensor:
    """Compose the phases backwards: a node's root is its phase root's final root, or the phase root
    itself (in input ids) when that root's component finished in the phase."""
    if not phases:
        return torch.arange(nodes, device=device)
    ids = phases[0][0].dtype
    originals = [torch.arange(nodes + 1, dtype=ids, device=device)]  # the input id of every node of each space
    for parent, _, next_id in phases[:-1]:
        next_size = (parent.numel() - 1) // 2
        next_original = torch.empty(next_size + 1, dtype=ids, device=device)
        originals.append(next_original.index_copy_(0, next_id.long(), originals[-1]))  # the sink keeps any value
    final = None  # the final root (input id) of every node of the next space
    for (parent, active, next_id), original in zip(reversed(phases), reversed(originals)):
        own = original.index_select(0, parent)
        if final is not None:
            onward = final.index_select(0, next_id.index_select(0, parent))  # via the root's next-space id
            own = torch.where(active.index_select(0, parent), onward, own)
        final = own
    assert final is not None  # phases is not empty
    return final[:nodes]
