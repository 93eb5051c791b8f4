"""Both forms of the union-find (``engine``: to convergence, or fixed rounds with no host read) give every node the
smallest node id of its component, as scipy's ``connected_components`` groups them, on the planar graphs they are
made for: run graphs of masks, grids, paths and stars with shuffled ids, forests with repeated edges and self-loops
— the shapes that need the most rounds or the longest chains."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components as scipy_components

from nobg_metrics.ops.components import _first_of_segments, _touching_rows
from nobg_metrics.ops.union_find import union_find_roots
from tests.helpers.syncs import HostSyncRecorder
from tests.ops.test_components import snake, spiral

ENGINES = ["data_sized", "fixed"]


def run_graph(mask: np.ndarray) -> tuple[int, torch.Tensor, torch.Tensor]:
    """Runs of a (H, W) mask in raster order and one edge per vertical overlap (4-connectivity)."""
    fg = torch.from_numpy(mask)[None]
    starts = torch.nonzero(_first_of_segments(fg).view(-1)).squeeze(1)
    upper = _touching_rows(fg, 0)
    lower = upper + mask.shape[1]
    return (starts.numel(), torch.searchsorted(starts, upper, right=True) - 1,
            torch.searchsorted(starts, lower, right=True) - 1)


def graph(kind: str, n: int, rng: np.random.Generator) -> tuple[int, torch.Tensor, torch.Tensor]:
    if kind == "path":
        return n, torch.arange(n - 1), torch.arange(1, n)
    if kind == "star":
        centre = int(rng.integers(n))
        return n, torch.full((n - 1,), centre), torch.tensor([i for i in range(n) if i != centre], dtype=torch.int64)
    if kind == "grid":
        h = int(rng.integers(1, 40))
        w = max(1, n // h)
        index = torch.arange(h * w).view(h, w)
        right = torch.from_numpy(rng.random((h, w - 1)) < 0.6)
        down = torch.from_numpy(rng.random((h - 1, w)) < 0.6)
        return (h * w, torch.cat([index[:, :-1][right], index[:-1][down]]),
                torch.cat([index[:, 1:][right], index[1:][down]]))
    parents = torch.from_numpy(np.array([rng.integers(0, i) if i else 0 for i in range(n)]))  # a random forest
    keep = torch.from_numpy(rng.random(n - 1) < 0.8)
    tails, heads = torch.arange(1, n)[keep], parents[1:][keep]
    loops = torch.arange(min(3, n))  # self-loops, and the first five edges repeated
    return n, torch.cat([tails, tails[:5], loops]), torch.cat([heads, heads[:5], loops])


def reference_roots(nodes: int, tails: torch.Tensor, heads: torch.Tensor) -> np.ndarray:
    """The smallest node id of every node's component (scipy's components of the undirected graph)."""
    graph = coo_matrix((np.ones(tails.numel()), (tails.numpy(), heads.numpy())), shape=(nodes, nodes))
    _, component = scipy_components(graph, directed=False)
    smallest = np.full(component.max() + 1 if nodes else 0, nodes)
    np.minimum.at(smallest, component, np.arange(nodes))
    return smallest[component]


def check(nodes: int, tails: torch.Tensor, heads: torch.Tensor, engine: str, **hint) -> None:
    roots = union_find_roots(nodes, tails, heads, engine=engine, **hint)
    assert roots.dtype == torch.int64 and np.array_equal(roots.numpy(), reference_roots(nodes, tails, heads))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["path", "star", "grid", "forest"])
def test_shuffled_graphs(kind, engine):
    rng = np.random.default_rng(len(kind))
    for n in (2, 3, 7, 64, 1000, 2500):
        nodes, tails, heads = graph(kind, n, rng)
        shuffle = torch.from_numpy(rng.permutation(nodes))
        check(nodes, shuffle[tails], shuffle[heads], engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("density", [0.2, 0.5, 0.8])
def test_run_graphs_of_random_masks_with_the_row_hint(density, engine):
    rng = np.random.default_rng(int(density * 10))
    for h, w in [(1, 1), (1, 30), (30, 1), (37, 53), (64, 48), (90, 17)]:
        mask = rng.random((h, w)) < density
        check(*run_graph(mask), engine, first_chains=h)


@pytest.mark.parametrize("engine", ENGINES)
def test_spirals_and_snakes_long_chains_of_runs(engine):
    for mask in (spiral(61, 57), snake(60, 33), spiral(7, 200), snake(200, 5)):
        check(*run_graph(mask), engine, first_chains=mask.shape[0])


@pytest.mark.parametrize("engine", ENGINES)
def test_no_edges_and_no_nodes(engine):
    empty = torch.zeros(0, dtype=torch.int64)
    assert torch.equal(union_find_roots(4, empty, empty, engine=engine), torch.arange(4))
    assert union_find_roots(0, empty, empty, engine=engine).numel() == 0
    loops = torch.tensor([0, 2, 2])
    assert torch.equal(union_find_roots(3, loops, loops, engine=engine), torch.arange(3))


def test_more_distinct_edges_than_planarity_allows_raise_never_mislabel():
    """Long edge lists shrink to 3 per active root (planar graphs). Were that exceeded — 91 distinct edges
    among 14 roots (K_14) — the compaction indexes past its buffer and raises."""
    from nobg_metrics.ops.union_find import _next_edges

    pairs = torch.combinations(torch.arange(14, dtype=torch.int32))
    is_open = torch.ones(len(pairs), dtype=torch.bool)
    with pytest.raises(RuntimeError, match="index"):
        _next_edges(pairs[:, 0], pairs[:, 1], is_open, torch.arange(15, dtype=torch.int32), 14)


def test_the_fixed_form_reads_nothing_back_from_the_device():
    nodes, tails, heads = run_graph(spiral(41, 37))
    with HostSyncRecorder() as recorder:
        union_find_roots(nodes, tails, heads, engine="fixed", first_chains=41)
    assert not recorder.hits, recorder.hits
