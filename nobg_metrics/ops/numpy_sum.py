"""numpy's own summation order, for the few decisions that depend on the last bit of a mean.

The adaptive threshold ``min(2 · mean(pred), 1)`` (PySODMetrics ``get_adaptive_threshold``) is compared with
pixel values: when ``2 · mean`` equals a pixel value in exact arithmetic (e.g. levels 13, 186, 80:
``2 · 279 / 765 = 186 / 255``), the binarisation is decided by how numpy rounded the sum. ``np.mean`` of a
contiguous array is numpy's pairwise summation (``pairwise_sum`` in ``loops_utils.h``) divided by the size:

- ``n < 8``: ``0 + a[0] + a[1] + …`` in order;
- ``n <= 128``: eight accumulators ``r[j] = a[j] + a[j + 8] + …`` over the first ``n - n % 8`` elements,
  ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the ``n % 8`` last elements in order;
- else the sums of the first ``n2 = n // 2 - (n // 2) % 8`` and of the other elements, added.

:func:`pairwise_sum` evaluates that exact tree for every image of a batch at once (its shape depends only on
``n``, so it is planned once per size on the host and costs no device sync); it equals ``np.sum`` bit for
bit (tested for every n up to 300 and for large images).
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

_BLOCK = 128
_LANES = 8


@functools.lru_cache(maxsize=64)
def _plan(size: int) -> tuple[Tensor, Tensor, list[tuple[Tensor, Tensor, Tensor]], int]:
    """The summation tree of ``size`` elements.

    Returns:
        ``(lanes, rest, levels, nodes)``: ``lanes`` :math:`(L, 16, 8)` element indices of each leaf's
        accumulators (``size`` = a zero pad), ``rest`` :math:`(L, 7)` the leaf's trailing elements,
        ``levels`` the internal nodes by height as ``(node, left, right)`` index tensors, ``nodes`` their count
        (leaves are nodes ``0 … L-1``).
    """
    leaves: list[tuple[int, int]] = []
    internal: list[tuple[int, int, int, int]] = []  # (id, left, right, height)

    def build(start: int, count: int) -> tuple[int, int]:
        if count <= _BLOCK:
            leaves.append((start, count))
            return -len(leaves), 0  # leaf ids are renumbered below
        half = count // 2
        half -= half % _LANES
        left, left_height = build(start, half)
        right, right_height = build(start + half, count - half)
        internal.append((len(internal), left, right, 1 + max(left_height, right_height)))
        return len(internal) - 1 + 1_000_000_000, 1 + max(left_height, right_height)

    build(0, size)
    num_leaves = len(leaves)
    lanes = torch.full((num_leaves, _BLOCK // _LANES, _LANES), size, dtype=torch.int64)
    rest = torch.full((num_leaves, _LANES - 1), size, dtype=torch.int64)
    for index, (start, count) in enumerate(leaves):
        main = count - count % _LANES if count >= _LANES else 0
        if main:
            lanes[index, : main // _LANES] = torch.arange(start, start + main).view(-1, _LANES)
        rest[index, : count - main] = torch.arange(start + main, start + count)

    def node_id(reference: int) -> int:
        return -reference - 1 if reference < 0 else num_leaves + reference - 1_000_000_000

    levels = []
    for height in range(1, 1 + max((h for *_, h in internal), default=0)):
        chosen = [(num_leaves + i, node_id(left), node_id(right)) for i, left, right, h in internal if h == height]
        ids, lefts, rights = (torch.tensor(column, dtype=torch.int64) for column in zip(*chosen))
        levels.append((ids, lefts, rights))
    return lanes, rest, levels, num_leaves + len(internal)


@functools.lru_cache(maxsize=64)
def _plan_on(size: int, device: torch.device) -> tuple[Tensor, Tensor, list[tuple[Tensor, ...]], int]:
    """:func:`_plan` with its index tensors on ``device`` (copied once per size and device, never per call)."""
    lanes, rest, levels, nodes = _plan(size)
    return lanes.to(device), rest.to(device), [tuple(t.to(device) for t in level) for level in levels], nodes


def pairwise_sum(values: Tensor) -> Tensor:
    """``np.sum`` of each row of ``values`` in numpy's order and dtype: :math:`(B, N)` -> :math:`(B,)`.

    Examples:
        >>> import numpy as np
        >>> row = np.arange(300) / 255
        >>> pairwise_sum(torch.from_numpy(row)[None]).item() == float(np.sum(row))
        True
    """
    batch, size = values.shape
    lanes, rest, levels, nodes = _plan_on(size, values.device)
    padded = torch.cat([values, values.new_zeros(batch, 1)], dim=1)
    gathered = padded[:, lanes]  # (B, L, 16, 8): zeros past a leaf's end add exactly nothing
    accumulators = gathered[:, :, 0]
    for row in range(1, gathered.shape[2]):  # sixteen rows: a bounded number of vectorised rounds
        accumulators = accumulators + gathered[:, :, row]
    r = accumulators.unbind(-1)
    leaf = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    tail = padded[:, rest]
    for column in range(tail.shape[-1]):
        leaf = leaf + tail[:, :, column]
    if nodes == leaf.shape[1]:
        return leaf[:, 0]
    sums = values.new_zeros(batch, nodes)
    sums[:, : leaf.shape[1]] = leaf
    for node, left, right in levels:  # the tree's height: ~log2(N / 64) rounds
        sums[:, node] = sums[:, left] + sums[:, right]
    return sums[:, -1]


def numpy_mean(values: Tensor) -> Tensor:
    """``np.mean`` of each image, bit for bit: :math:`(B, H, W)` float -> :math:`(B,)` of the same dtype.

    Examples:
        >>> import numpy as np
        >>> image = np.array([[13, 186, 80]]) / 255
        >>> numpy_mean(torch.from_numpy(image)[None]).item() == float(image.mean())
        True
    """
    flat = values.reshape(values.shape[0], -1)
    return pairwise_sum(flat) / flat.shape[1]
