"""Masks held as their row bands: what the CPU path of instance AP reads, without a full-frame copy of each mask.

A mask of an ``H x W`` image is 0 outside the band of rows ``[top, bottom)`` it occupies. :class:`RowBands` keeps,
for ``N`` masks of one image, only those bands: ``rows`` stacks each non-empty mask's band rows followed by one zero
row (an empty mask: no rows, ``top = bottom = 0``) — the pieces the data-sized counting of
:mod:`~nobg_metrics.functional.instance.crops` stacks into its atlas, so counting from bands and from dense masks
gives the same integers. ``nobg-metrics instances`` gives the masks as their runs (:meth:`RowBands.from_runs`):
mask IoU is counted on the runs themselves (:mod:`~nobg_metrics.ops.run_overlap`), and a band is drawn from its
runs only where pixels are needed (boundaries): a detection of a few hundred pixels costs its band, not ``H x W``.

``MeanAveragePrecision.update`` takes a :class:`RowBands` where it takes a ``masks`` tensor; it is read by the
data-sized (CPU) counting directly and made dense (:meth:`RowBands.dense`) everywhere else.
"""

from __future__ import annotations

import torch
from torch import Tensor


class RowBands:
    """``N`` masks of one ``height x width`` image as their row bands (module notes).

    Attributes:
        rows: :math:`(R, W)` bool: each non-empty mask's rows ``top .. bottom - 1`` then one zero row, in mask order
            (made on first use where the masks were given as runs, :meth:`from_runs`).
        tops, bottoms: the bands ``[top, bottom)`` of the masks (an empty mask: ``[0, 0)``).
        height, width: the image's size.
        runs: the masks' foreground as row-major runs ``(owner, start, stop)`` where they were given so
            (:meth:`from_runs`; ``None`` otherwise): what the run-based counting reads without drawing.
        areas: :math:`(N,)` int64 pixel counts where the reader knew them (``None``: counted from the runs).

    Examples:
        >>> m = torch.zeros(3, 4, 5, dtype=torch.bool); m[0, 1:3, 1:4] = True; m[2, 3, 0] = True
        >>> bands = RowBands.from_dense(m)
        >>> bands.tops, bands.bottoms, tuple(bands.rows.shape), bands.shape
        ([1, 0, 3], [3, 0, 4], (5, 5), torch.Size([3, 4, 5]))
        >>> bool((bands.dense() == m).all()), bands[torch.tensor([False, True, True])].tops, bands[1:].tops
        (True, [0, 3], [0, 3])
        >>> bool((bands[1:].dense() == m[1:]).all()) and bool((bands[:1].dense() == m[:1]).all())
        True
    """

    def __init__(self, rows: Tensor | None, tops: list[int], bottoms: list[int], height: int, width: int,
                 runs: tuple[Tensor, Tensor, Tensor] | None = None, areas: Tensor | None = None) -> None:
        if rows is None and runs is None:
            raise ValueError("RowBands needs its rows or its runs")
        self._rows = rows
        self.tops, self.bottoms, self.height, self.width, self.runs = tops, bottoms, height, width, runs
        self.areas = areas

    @property
    def rows(self) -> Tensor:
        """:math:`(R, W)` bool, the bands and their zero rows (drawn from :attr:`runs` on first use)."""
        if self._rows is None:
            assert self.runs is not None
            self._rows = _draw(*self.runs, self.tops, self.bottoms, self.width)
        return self._rows

    @property
    def shape(self) -> torch.Size:
        """``(N, height, width)``, as the dense stack's."""
        return torch.Size((len(self.tops), self.height, self.width))

    @property
    def device(self) -> torch.device:
        """Where ``rows`` lie."""
        return self._rows.device if self._rows is not None else torch.device("cpu")

    @property
    def held_pixels(self) -> int:
        """Pixels stored (the bands and their zero rows; as many for runs not drawn yet)."""
        return sum(b - t + 1 for t, b in zip(self.tops, self.bottoms) if b > t) * self.width

    @staticmethod
    def from_runs(owner: Tensor, start: Tensor, stop: Tensor, n: int, height: int, width: int) -> RowBands:
        """``n`` masks of ``height x width`` from their row-major runs ``[start, stop)`` of positions
        ``row * width + col`` (CPU int64, sorted by ``(owner, start)``, non-empty, not overlapping within a
        mask); the bands are drawn only when :attr:`rows` is read.

        Examples:
            >>> bands = RowBands.from_runs(torch.tensor([1, 1]), torch.tensor([4, 6]), torch.tensor([5, 8]), 2, 4, 3)
            >>> bands.tops, bands.bottoms, bands.rows.int().tolist()
            ([0, 1], [0, 3], [[0, 1, 0], [1, 1, 0], [0, 0, 0]])
        """
        masks = torch.arange(n, dtype=owner.dtype)  # sorted by (owner, start): a mask's first and last runs
        first, end = torch.searchsorted(owner, masks), torch.searchsorted(owner, masks, right=True)
        some = end > first
        runs = max(owner.numel(), 1)
        tops = torch.where(some, start[first.clamp(max=runs - 1)] // width, 0) if owner.numel() else first
        bottoms = torch.where(some, (stop[(end - 1).clamp(min=0)] - 1) // width + 1, 0) if owner.numel() else first
        return RowBands(None, tops.tolist(), bottoms.tolist(), height, width, (owner, start, stop))

    def starts(self) -> list[int]:
        """The first row of each mask's band in ``rows`` (an empty mask: where the next band starts)."""
        starts, row = [], 0
        for top, bottom in zip(self.tops, self.bottoms):
            starts.append(row)
            if bottom > top:
                row += bottom - top + 1
        return starts

    def nonempty(self) -> Tensor:
        """:math:`(N,)` bool: the masks with a pixel."""
        return torch.tensor([b > t for t, b in zip(self.tops, self.bottoms)], dtype=torch.bool)

    def to(self, device: torch.device | str) -> RowBands:
        """The bands on ``device``."""
        return self if torch.device(device) == self.device else RowBands(self.rows.to(device), self.tops,
                                                                          self.bottoms, self.height, self.width)

    def __getitem__(self, keep: Tensor | slice) -> RowBands:
        """The masks where the :math:`(N,)` bool ``keep`` is True, or a slice of them (``step`` 1)."""
        if isinstance(keep, slice):
            first, last, step = keep.indices(len(self.tops))
            if step != 1:
                raise ValueError("RowBands slices take a step of 1")
            if self._rows is None:  # the runs of masks first .. last - 1: one stretch (sorted by mask)
                assert self.runs is not None
                owner, start, stop = self.runs
                lo, hi = torch.searchsorted(owner, torch.tensor([first, max(first, last)])).tolist()
                return RowBands(None, self.tops[first:last], self.bottoms[first:last], self.height, self.width,
                                (owner[lo:hi] - first, start[lo:hi], stop[lo:hi]),
                                None if self.areas is None else self.areas[first:last])
            starts = [*self.starts(), self.rows.shape[0]]
            return RowBands(self.rows[starts[first]:starts[max(first, last)]], self.tops[first:last],
                            self.bottoms[first:last], self.height, self.width)
        chosen = keep.tolist()
        tops = [t for t, k in zip(self.tops, chosen) if k]
        bottoms = [b for b, k in zip(self.bottoms, chosen) if k]
        if self.runs is not None and self._rows is None:  # the runs of the kept masks, renumbered
            owner, start, stop = self.runs
            kept = keep.to(torch.bool)
            number = torch.cumsum(kept, 0) - 1
            inside = kept[owner]
            return RowBands(None, tops, bottoms, self.height, self.width,
                            (number[owner[inside]], start[inside], stop[inside]),
                            None if self.areas is None else self.areas[kept])
        starts = self.starts()
        pieces = [self.rows[s:s + b - t + 1] for s, t, b, k in zip(starts, self.tops, self.bottoms, chosen)
                  if k and b > t]
        rows = torch.cat(pieces) if pieces else self.rows[:0]
        return RowBands(rows, tops, bottoms, self.height, self.width)

    def dense(self) -> Tensor:
        """The :math:`(N, H, W)` bool masks."""
        out = torch.zeros(self.shape, dtype=torch.bool, device=self.device)
        for index, (start, top, bottom) in enumerate(zip(self.starts(), self.tops, self.bottoms)):
            if bottom > top:
                out[index, top:bottom] = self.rows[start:start + bottom - top]
        return out

    def bool(self) -> Tensor:
        """:meth:`dense` (for code that reads ``masks.bool()``)."""
        return self.dense()

    @staticmethod
    def from_dense(masks: Tensor) -> RowBands:
        """The bands of an :math:`(N, H, W)` bool stack."""
        count, height, width = masks.shape
        occupied = masks.any(dim=2)
        tops, bottoms, pieces = [], [], []
        gap = torch.zeros((1, width), dtype=torch.bool, device=masks.device)
        for index in range(count):
            rows = occupied[index].nonzero()[:, 0].tolist()
            top, bottom = (rows[0], rows[-1] + 1) if rows else (0, 0)
            tops.append(top)
            bottoms.append(bottom)
            if bottom > top:
                pieces += [masks[index, top:bottom], gap]
        rows_tensor = torch.cat(pieces) if pieces else torch.zeros((0, width), dtype=torch.bool, device=masks.device)
        return RowBands(rows_tensor, tops, bottoms, height, width)


def _draw(owner: Tensor, start: Tensor, stop: Tensor, tops: list[int], bottoms: list[int], width: int,
          lead: int = 0) -> Tensor:
    """The bands of row-major runs, each band followed by a zero row (after ``lead`` zero rows): one difference
    array (+1 at a start, -1 at a stop) and one cumulative sum for all masks."""
    top, bottom = torch.tensor(tops, dtype=torch.int64), torch.tensor(bottoms, dtype=torch.int64)
    lengths = torch.where(bottom > top, bottom - top + 1, 0)  # the band and its zero row
    first = torch.cumsum(lengths, 0) - lengths + lead
    total = int(lengths.sum()) + lead
    edges = torch.zeros(total * width + 1, dtype=torch.int8)
    offset = (first - top)[owner] * width
    ones = torch.ones(owner.numel(), dtype=torch.int8)
    edges.index_add_(0, offset + start, ones)
    edges.index_add_(0, offset + stop, -ones)  # a band's last stop: its zero row's first pixel
    return torch.cumsum(edges[:-1], 0, dtype=torch.int8).view(total, width).view(torch.bool)


def placeholder(bands: RowBands) -> Tensor:
    """A zero-memory :math:`(N, H, W)` bool stand-in (an expanded zero) with the bands' shape and device."""
    return torch.zeros((1, 1, 1), dtype=torch.bool, device=bands.device).expand(*bands.shape)


def held_pixels(masks: Tensor | RowBands) -> int:
    """Pixels a ``masks`` value holds in memory (a batch's budget)."""
    return masks.held_pixels if isinstance(masks, RowBands) else masks.numel()
