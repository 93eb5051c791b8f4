"""Multi-scale IoU's dynamic curve, every threshold at once: per gt-edge cell and scale, the thresholds at which the
prediction has an edge there (:func:`curve_hits`), from interval chains instead of 257 edge maps.

The derivation is in :mod:`nobg_metrics.functional.sod.msiou` (module notes) and docs/msiou.md; this module holds the
chain machinery: node values of row triples, chains per cell row and slot, their pooling from scale ``c`` to
``2c``, and the union count of a cell's intervals (sorted pieces, or a coverage histogram for many).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.histogram import NUM_LEVELS, bincount_fixed

NUM_SCALES = 10
CELL_SIZES = tuple(2**k for k in range(NUM_SCALES))
"""The reference's ``np.power(2, np.linspace(0, 9, num=10, dtype=int))``."""

NUM_THRESHOLDS = NUM_LEVELS + 1
"""Points of the dynamic curve: ``u8 >= t`` for ``t = 0 ... 256``."""

_BINS = NUM_THRESHOLDS + 1
"""Histogram bins of interval ends ``+ 1`` (``-1 ... 256`` -> ``0 ... 257``)."""


# ------------------------------------------------------------------------------------------ every threshold at once
#
# A chain is stored as 8 int16: its four intervals' lows, then their highs; merging chains (and pairing two node
# rows) takes the minimum of the lows and the maximum of the highs. An empty chain is (256, ..., -1, ...), neutral
# for both. Layouts keep the image columns innermost (contiguous, vectorised): nodes (B, R + 2, 4, C), chains
# (B, cell rows, 2 slots, 8, C).


def _empty_chain(like: Tensor) -> Tensor:
    """:math:`(8, 1)` the stored empty chain, broadcastable over columns (two fills: no host-to-device copy)."""
    chain = like.new_full((8, 1), NUM_LEVELS)
    chain[4:].fill_(-1)
    return chain


def _node_levels(padded: Tensor) -> Tensor:
    """Every row triple ``(l, c, r)`` of a ``-1``-padded level map :math:`(B, R + 2, C + 2)` as four int16 node values
    :math:`(B, R + 2, 4, C)`, ``q1 >= q2 >= q3 >= q4`` with ``[l >= t] + 2 [c >= t] + [r >= t] = #{m : q_m >= t}``
    for every ``t``: ``max(l, c, r)``, ``max(c, min(l, r))``, ``min(c, max(l, r))``, ``min(l, c, r)``."""
    left, centre, right = padded[:, :, :-2], padded[:, :, 1:-1], padded[:, :, 2:]
    high, low = torch.maximum(left, right), torch.minimum(left, right)
    nodes = padded.new_empty((centre.shape[0], centre.shape[1], 4, centre.shape[2]))
    torch.maximum(centre, high, out=nodes[:, :, 0])
    torch.maximum(centre, low, out=nodes[:, :, 1])
    torch.minimum(centre, high, out=nodes[:, :, 2])
    torch.minimum(centre, low, out=nodes[:, :, 3])
    return nodes


def _first_chains(padded: Tensor) -> Tensor:
    """The chains of the 2-row cells of scale 2, :math:`(B, \\lceil R/2 \\rceil, 2, 8, C)`, from a padded level map.

    Pixel row ``i``'s vertical pairs join the triples of rows ``i - 1`` and ``i + 1``: its four intervals are
    ``(min, max]`` of their node values. A 2-row cell's two chains of each column are the pairs of its two pixel rows
    (slot = row offset in the cell; the grid is padded at the top, and the padding row's chain is empty).
    """
    size, rows, cols = padded.shape[0], padded.shape[1] - 2, padded.shape[2] - 2
    nodes = _node_levels(padded)
    pad = rows % 2
    chains = padded.new_empty((size, (rows + pad) // 2, 2, 8, cols))
    for slot in range(2):
        skip = 1 if slot < pad else 0  # cell 0's slot 0 is the padding row
        pixel = slot - pad + 2 * skip  # the first pixel row of this slot
        above, below = nodes[:, pixel:rows:2], nodes[:, pixel + 2:rows + 2:2]
        torch.minimum(above, below, out=chains[:, skip:, slot, :4])
        torch.maximum(above, below, out=chains[:, skip:, slot, 4:])
        if skip:
            chains[:, 0, slot] = _empty_chain(chains)
    return chains


def _merge(first: Tensor, second: Tensor, out: Tensor) -> Tensor:
    """Chains holding both chains' nodes: min of the lows, max of the highs (``out`` may not alias the inputs)."""
    torch.minimum(first[..., :4, :], second[..., :4, :], out=out[..., :4, :])
    torch.maximum(first[..., 4:, :], second[..., 4:, :], out=out[..., 4:, :])
    return out


def _pool_chains(chains: Tensor) -> Tensor:
    """The next scale: merge the chains of pairs of cell rows (the grid padded at the top when odd)."""
    count = chains.shape[1]
    pooled = chains.new_empty((chains.shape[0], (count + 1) // 2, *chains.shape[2:]))
    if count % 2 == 0:
        return _merge(chains[:, 0::2], chains[:, 1::2], pooled)
    pooled[:, 0] = chains[:, 0]  # paired with the empty padding row
    _merge(chains[:, 1::2], chains[:, 2::2], pooled[:, 1:])
    return pooled


def _split(values: Tensor) -> tuple[Tensor, Tensor]:
    """Stored chains :math:`(K, ..., 8, n)` -> ``(low, high)`` :math:`(K, M)` int32 of their intervals."""
    count, width = values.shape[0], values[..., :4, :].shape[1:].numel()
    return values[..., :4, :].reshape(count, width).int(), values[..., 4:, :].reshape(count, width).int()


def _cell_chains(chains: Tensor, image: Tensor, row: Tensor, col: Tensor, cell: int) -> Tensor:
    """The vertical chains of cells ``(image, row, col)`` of scale ``cell``: :math:`(K, 2, 8, c)` stored form.

    Args:
        chains: :math:`(B, h, 2, 8, C)`, cell rows by image columns.
        image, row, col: :math:`(K,)` the cells (``col`` in the grid of ``ceil(C / c)`` cell columns).

    A cell's columns left of the image (the grid's padding) read its first column again: the union is unchanged.
    """
    cell_rows, cols = chains.shape[1], chains.shape[-1]
    first = col * cell - (-(-cols // cell) * cell - cols)  # the cell's first image column (grids end at the right)
    columns = (first[:, None] + torch.arange(cell, device=chains.device)).clamp_(min=0)  # (K, c)
    lines = (image * cell_rows + row)[:, None] * 16 + torch.arange(16, device=chains.device)  # (K, 16)
    flat = (lines * cols)[:, :, None] + columns[:, None, :]
    return chains.view(-1).index_select(0, flat.view(-1)).view(-1, 2, 8, cell)


_SORT_BELOW = 64
"""Cells with fewer intervals count their union by sorting them; cells with more, by a per-cell coverage histogram
(cheaper from 64 intervals on, measured on 1024² pairs)."""


def _count_union(low: Tensor, high: Tensor, image: Tensor, keep: Tensor | None, size: int) -> Tensor:
    """Per image and threshold ``t``, the number of cells whose intervals ``(low, high]`` hold ``t``.

    Args:
        low, high: :math:`(K, M)` int32, the ``M`` intervals of each of ``K`` cells.
        image: :math:`(K,)` int64 image of each cell.
        keep: :math:`(K,)` bool, the cells to count (``None``: all).
        size: images ``B``.

    Returns:
        :math:`(B, 257)` int64.

    Few intervals: sorted by ``low``, interval ``m`` adds the piece ``(max(low_m, R), max(high_m, max(low_m, R))]``,
    ``R`` the largest ``high`` before it (everything before covers ``(low_m, R]`` above ``low_m``); the pieces are
    disjoint, and their starts and ends, histogrammed and summed up to ``t``, count the cells holding ``t``. Many
    intervals: each cell's coverage count over the 257 thresholds from a histogram of its interval ends.
    """
    count = low.shape[0]
    if low.shape[1] >= _SORT_BELOW:
        high = torch.maximum(high, low)  # empty intervals: (low, low], whose ends cancel
        # int16 holds the <= 16 * 512 intervals of a cell; int32 off CPU, where atomic adds want 32-bit words (a
        # property of the device, not a host read: the values are the same)
        dtype = torch.int16 if low.device.type == "cpu" else torch.int32
        coverage = torch.zeros((count, _BINS), dtype=dtype, device=low.device)
        coverage.scatter_add_(1, (low + 1).long(), torch.ones(low.shape, dtype=dtype, device=low.device))
        coverage.scatter_add_(1, (high + 1).long(), torch.full(low.shape, -1, dtype=dtype, device=low.device))
        covered = coverage.cumsum(dim=1, dtype=dtype)[:, :NUM_THRESHOLDS] > 0
        if keep is not None:
            covered &= keep[:, None]
        out = torch.zeros((size, NUM_THRESHOLDS), dtype=torch.int64, device=low.device)
        return out.index_add_(0, image, covered.long())
    keys = ((low + 1) << 9) | (high + 1)  # sorted by low (ties in any order)
    keys = keys.sort(dim=-1).values
    low, high = (keys >> 9) - 1, (keys & 511) - 1
    reach = high.cummax(dim=-1).values
    start = torch.maximum(low, torch.cat([torch.full_like(reach[:, :1], -1), reach[:, :-1]], dim=-1))
    end = torch.maximum(high, start)
    if keep is not None:  # a cell not counted: an empty piece (its start and end cancel)
        start = torch.where(keep[:, None], start, end)
    offset = (image * _BINS + 1)[:, None]
    opens = bincount_fixed((start.long() + offset).flatten(), size * _BINS)
    closes = bincount_fixed((end.long() + offset).flatten(), size * _BINS)
    return (opens - closes).view(size, _BINS).cumsum(dim=1)[:, :NUM_THRESHOLDS]


def _cells(cells: Tensor, engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """``(image, row, col, keep)`` of the cells to read: ``"data_sized"`` (``"auto"`` on CPU) the gt-edge cells
    (``nonzero``, a host read), ``"fixed"`` every cell, ``keep`` marking the gt-edge ones (fixed sizes, no host
    read)."""
    size, rows, cols = cells.shape
    if host_reads.resolve_engine(engine, cells) == "data_sized":
        image, row, col = cells.nonzero(as_tuple=True)
        return image, row, col, None
    index = torch.arange(size * rows * cols, device=cells.device)
    return index // (rows * cols), index // cols % rows, index % cols, cells.reshape(-1).bool()


def curve_hits(levels: Tensor, gt_cells: list[Tensor], engine: host_reads.Engine = "auto") -> Tensor:
    """:math:`(B, 257, 10)` ``|shrink(edge(u8 >= t)) & shrink(edge(gt))|`` for every threshold ``t`` and scale.

    Args:
        levels: :math:`(B, H, W)` int16 ``u8`` levels in 0..255.
        gt_cells: the gt's :func:`cell_pyramid`.
        engine: which cells are read: the gt-edge ones (``"data_sized"``) or all (``"fixed"``); same counts.

    Per pixel, ``Sx(t) = #{m : q_m(below) >= t} - #{m : q_m(above) >= t}`` with the :func:`_node_levels` ``q`` of
    the row triples above and below (``-1`` outside), so ``Sx(t) != 0`` exactly on the four intervals
    ``(min, max]`` of ``q_m(above), q_m(below)``; ``Sy`` likewise with column triples. A cell's rows chain the row
    triples of one parity of each column (its columns, the column triples of each row): a chain's intervals union to
    ``(min, max]`` over its nodes. Scale ``c`` keeps, per image column, the two chains of each cell row
    (``vertical``, :math:`(B, \\lceil H/c \\rceil, 2, 8, W)`) and the same of the transposed image
    (``horizontal``); scale ``2c`` merges pairs of cell rows. A cell is an edge at ``t`` where one of its ``16 c``
    intervals holds ``t``.
    """
    size, height, width = levels.shape
    padded = levels.new_full((size, height + 2, width + 2), -1)
    padded[:, 1:-1, 1:-1] = levels
    vertical = _first_chains(padded)
    horizontal = _first_chains(padded.transpose(1, 2).contiguous())
    del padded

    # scale 1: a pixel's own pairs: the slot of its row in its 2-row cell (of its column in its 2-column cell)
    image, row, col, keep = _cells(gt_cells[0], engine)
    octet = torch.arange(8, device=levels.device)
    v_row, h_col = row + height % 2, col + width % 2  # in the top / left padded grids
    v_lines = ((image * vertical.shape[1] + v_row // 2) * 2 + v_row % 2)[:, None] * 8 + octet  # (K, 8)
    h_lines = ((image * horizontal.shape[1] + h_col // 2) * 2 + h_col % 2)[:, None] * 8 + octet
    picked = torch.stack([vertical.view(-1, width)[v_lines, col[:, None]],
                          horizontal.view(-1, height)[h_lines, row[:, None]]], dim=1)  # (K, 2, 8)
    low, high = _split(picked[..., None])
    hits = [_count_union(low, high, image, keep, size)]

    for scale in range(1, NUM_SCALES):
        if scale > 1:
            vertical, horizontal = _pool_chains(vertical), _pool_chains(horizontal)
        image, row, col, keep = _cells(gt_cells[scale], engine)
        cell = CELL_SIZES[scale]
        picked = torch.cat([_cell_chains(vertical, image, row, col, cell),
                            _cell_chains(horizontal, image, col, row, cell)], dim=1)  # (K, 4, 8, c)
        hits.append(_count_union(*_split(picked), image, keep, size))
    return torch.stack(hits, dim=-1)
