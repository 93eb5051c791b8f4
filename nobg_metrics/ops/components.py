"""Exact connected-component labelling of batched bool masks, and MATLAB's "largest component".

Algorithm (docs/connected_components.md): every horizontal run of foreground pixels is one node
(runs are numbered in raster order by a cumulative sum of run starts, so a row needs no propagation at
all); two runs in consecutive rows are joined by one edge per overlap (4-connectivity) or per touching
offset (8-connectivity). The run graph is solved by the ``"data_sized"`` form of
:func:`nobg_metrics.ops.union_find.union_find_roots`: **min-root hooking and pointer jumping** to convergence.
Every root that is not a local minimum of its neighbours is absorbed in a round, so the number of
super-nodes at least halves along any path: O(log n) rounds even for spirals and snakes, each round
fully vectorised over the whole (B, H, W) batch. Edges that became internal are dropped every round.

Device syncs: the convergence tests (``while`` a root changed) and ``nonzero`` need the host; there are
O(log n) of them. Nothing is capped: the loops run to convergence. This labelling has that one form; the
sync-free labellings of runs are those of :mod:`nobg_metrics.ops.level_components` (largest components of
level sets) and :mod:`nobg_metrics.ops.contours_fixed` (the labels border following needs).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops.union_find import union_find_roots


def _as_batch(mask: Tensor) -> Tensor:
    if mask.dtype != torch.bool:
        raise TypeError(f"`mask` must be a bool tensor, got {mask.dtype}")
    if mask.ndim == 2:
        mask = mask.unsqueeze(0)
    if mask.ndim != 3:
        raise ValueError(f"`mask` must have shape (B, H, W) or (H, W), got {tuple(mask.shape)}")
    return mask.contiguous()  # runs are read as flat memory: views of any strides are copied once


def _first_of_segments(mask: Tensor, last: bool = False) -> Tensor:
    """``mask & ~left(mask)`` (``~right`` if ``last``) along the last dim, one pass: bool ``a > b`` is ``a & ~b``."""
    edge = torch.empty_like(mask)
    if last:
        edge[..., -1:] = mask[..., -1:]
        torch.gt(mask[..., :-1], mask[..., 1:], out=edge[..., :-1])
    else:
        edge[..., :1] = mask[..., :1]
        torch.gt(mask[..., 1:], mask[..., :-1], out=edge[..., 1:])
    return edge


def _touching_rows(fg: Tensor, shift: int) -> Tensor:
    """Flat indices of the pixels (y, x) whose lower neighbour (y + 1, x + shift) is also foreground, keeping
    only the first column of each overlap (consecutive columns join the same two runs): :math:`(K,)` int64.
    """
    _, h, w = fg.shape
    if h < 2 or abs(shift) >= w:
        return torch.zeros(0, dtype=torch.int64, device=fg.device)
    left, right = max(0, -shift), w - max(0, shift)
    both = fg[:, :-1, left:right] & fg[:, 1:, left + shift:right + shift]  # (B, H-1, W')
    where = torch.nonzero(_first_of_segments(both).view(-1)).squeeze(1)
    width = right - left
    rows, column = torch.div(where, width, rounding_mode="floor"), where % width
    image, row = torch.div(rows, h - 1, rounding_mode="floor"), rows % (h - 1)
    return (image * h + row) * w + column + left


class Runs:
    """Horizontal runs of a (B, H, W) mask: starts, ends, lengths, and the run graph solved to roots.

    Runs are numbered 1..R in raster order (node 0 is the background sentinel).
    """

    def __init__(self, fg: Tensor, connectivity: int) -> None:
        b, h, w = fg.shape
        self.shape = (b, h, w)
        starts = _first_of_segments(fg)
        ends = _first_of_segments(fg, last=True)
        self._flat_starts = starts.view(-1)
        self._run_id: Tensor | None = None
        # one nonzero pass for both ends of every run: code 1 = first pixel, 2 = last pixel, 3 = both
        code = torch.add(starts.view(torch.uint8), ends.view(torch.uint8), alpha=2).view(-1)
        where = torch.nonzero(code).squeeze(1)
        kind = code[where]
        self.start_index = where[kind.bitwise_and(1).bool()]  # (R,) flat index of each run's first pixel
        self.end_index = where[kind >= 2]  # (R,) flat index of each run's last pixel
        self.length = self.end_index - self.start_index + 1
        shifts = (0,) if connectivity == 4 else (-1, 0, 1)
        upper = [_touching_rows(fg, shift) for shift in shifts]
        lower = [where + (w + shift) for where, shift in zip(upper, shifts)]
        self.parent = union_find_roots(self.start_index.numel() + 1, self.ids_at(torch.cat(upper)),
                                       self.ids_at(torch.cat(lower)), engine="data_sized")

    @property
    def run_id(self) -> Tensor:
        """:math:`(B \\cdot H \\cdot W,)` run id of every pixel (meaningful on foreground pixels only)."""
        if self._run_id is None:
            id_dtype = torch.int32 if self._flat_starts.numel() < 2**31 else torch.int64
            self._run_id = torch.cumsum(self._flat_starts, 0, dtype=id_dtype)
        return self._run_id

    def ids_at(self, positions: Tensor) -> Tensor:
        """Run ids (int64) of foreground pixels at flat ``positions``: the number of run starts at or before them."""
        if self._run_id is None and positions.numel() * 16 < self._flat_starts.numel():
            return torch.searchsorted(self.start_index, positions, right=True)  # sparse: no per-pixel pass
        return self.run_id.index_select(0, positions).long()

    def paint(self, run_values: Tensor) -> Tensor:
        """:math:`(B, H, W)` each run's value on its pixels, 0 elsewhere (``run_values``: :math:`(R,)` int64 or bool).

        ``+value`` at each run's start, ``-value`` after its end, then a running sum (runs never overlap).
        """
        dtype = torch.int8 if run_values.dtype == torch.bool else torch.int64
        values = run_values.to(dtype)
        delta = torch.zeros(self._flat_starts.numel() + 1, dtype=dtype, device=run_values.device)
        delta.index_put_((self.start_index,), values, accumulate=True)
        delta.index_put_((self.end_index + 1,), -values, accumulate=True)
        painted = delta.cumsum_(0)[:-1].view(self.shape)  # in place: no second full-size buffer
        return painted.view(torch.bool) if run_values.dtype == torch.bool else painted  # int8 0/1 is a valid bool

    def image_of_run(self) -> Tensor:
        """:math:`(R,)` the batch index of each run."""
        _, h, w = self.shape
        return torch.div(self.start_index, h * w, rounding_mode="floor")


def connected_components(mask: Tensor, connectivity: int = 4) -> Tensor:
    """Label the connected components of each image, exactly as ``scipy.ndimage.label`` numbers them.

    Labels are consecutive per image, 1..n in raster (row-major) order of each component's first
    pixel; background is 0.

    Args:
        mask: :math:`(B, H, W)` or :math:`(H, W)` bool.
        connectivity: 4 (edges) or 8 (edges and corners).

    Returns:
        :math:`(B, H, W)` (or :math:`(H, W)`) int64 labels.

    Examples:
        >>> connected_components(torch.tensor([[1, 0, 1], [1, 0, 0], [0, 1, 1]], dtype=torch.bool))
        tensor([[1, 0, 2],
                [1, 0, 0],
                [0, 3, 3]])
    """
    if connectivity not in (4, 8):
        raise ValueError(f"`connectivity` must be 4 or 8, got {connectivity}")
    fg = _as_batch(mask)
    b = fg.shape[0]
    runs = Runs(fg, connectivity)
    parent = runs.parent[1:]
    is_root = parent == torch.arange(1, parent.numel() + 1, device=fg.device)
    root_rank = torch.cumsum(is_root, 0)  # global 1..n over the batch, raster order
    roots_per_image = torch.zeros(b, dtype=torch.int64, device=fg.device)
    roots_per_image.index_add_(0, runs.image_of_run(), is_root.long())
    offset = torch.cumsum(roots_per_image, 0) - roots_per_image
    label_of_run = root_rank[parent - 1] - offset[runs.image_of_run()]
    labels = runs.paint(label_of_run)
    return labels if mask.ndim == 3 else labels[0]


def largest_component(mask: Tensor, connectivity: int = 4) -> Tensor:
    """The largest connected component of each image, with MATLAB's tie rule.

    ``bwconncomp`` numbers components in column-major order of their first pixel and ``max`` returns
    the first maximum, so among equal sizes the component whose first pixel in column-major scan order
    comes first wins. An image without foreground gives an all-False mask.

    Args:
        mask: :math:`(B, H, W)` or :math:`(H, W)` bool.
        connectivity: 4 or 8.

    Returns:
        :math:`(B, H, W)` (or :math:`(H, W)`) bool.

    Examples:
        >>> largest_component(torch.tensor([[1, 0, 1], [0, 0, 1], [1, 0, 0]], dtype=torch.bool)).int()
        tensor([[0, 0, 1],
                [0, 0, 1],
                [0, 0, 0]], dtype=torch.int32)
    """
    if connectivity not in (4, 8):
        raise ValueError(f"`connectivity` must be 4 or 8, got {connectivity}")
    fg = _as_batch(mask)
    b, h, w = fg.shape
    runs = Runs(fg, connectivity)
    nodes = runs.parent.numel()
    parent = runs.parent[1:]
    pixels = h * w
    within = runs.start_index - runs.image_of_run() * pixels
    column_major_key = (within % w) * h + torch.div(within, w, rounding_mode="floor")
    size = torch.zeros(nodes, dtype=torch.int64, device=fg.device).index_add_(0, parent, runs.length)
    first = torch.full((nodes,), pixels, dtype=torch.int64, device=fg.device)
    first = first.scatter_reduce(0, parent, column_major_key, "amin")
    # larger size wins; equal sizes: the smaller column-major first pixel wins (keys are distinct)
    score = size * pixels + (pixels - 1 - first)
    image = runs.image_of_run()
    best = torch.full((b,), -1, dtype=torch.int64, device=fg.device).scatter_reduce(0, image, score[parent], "amax")
    largest = runs.paint(score[parent] == best[image])
    return largest if mask.ndim == 3 else largest[0]
