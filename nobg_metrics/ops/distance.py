"""Exact Euclidean distance transform with nearest-feature indices, batched, pure torch.

``nearest_feature(features)`` gives, for every pixel of a :math:`(B, H, W)` bool map, the squared distance to
the nearest ``True`` pixel and that pixel's (row, col). It equals ``scipy.ndimage.distance_transform_edt(~f,
return_indices=True)`` (scipy measures the distance of NON-zero pixels to the nearest ZERO pixel, so its input is
our complement) bit for bit on the distances; among equidistant nearest pixels the index may differ.

Algorithm (separable, exact — see docs/distance_transform.md):

1. Column pass: for every pixel the nearest feature in its own column, from a ``cummax`` of the feature row
   indices above and a ``cummin`` below: ``g(i, k)``, with its row.
2. Row pass: ``f(i, j) = min_k c(k) + (j - k)^2`` with ``c(k) = g(i, k)^2`` (Felzenszwalb & Huttenlocher 2012,
   "Distance transforms of sampled functions"). The cost matrix ``c(k) + (j - k)^2`` is Monge, so the leftmost
   argmin ``k*(j)`` is nondecreasing in ``j``. We bisect: ``k*`` at ``j = 0`` by a full scan, then at odd
   multiples of ``s = P/2, P/4, ..., 1`` (``P`` the power of two >= W) by scanning only
   ``[k*(j - s), k*(j + s)]``. Those ranges tile each row, so one level costs ``O(W)`` per row and the
   whole pass ``O(B·H·W·log W)`` in ``ceil(log2 W) + 1`` vectorised levels, never an ``O(H·W·W)`` tensor.
3. With a small ``max_distance`` the row pass is instead ``T = floor(max_distance)`` rounds of
   ``f <- min(f, f(j -+ 1) + (2t - 1))``, exact for every pixel whose distance is <= T.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor


class NearestFeature(NamedTuple):
    """Result of :func:`nearest_feature`.

    Attributes:
        squared: :math:`(B, H, W)` float64 squared distance (an exact integer), ``+inf`` where there is no
            feature (within ``max_distance``).
        rows: :math:`(B, H, W)` int64 row of a nearest feature pixel, ``-1`` where ``squared`` is ``inf``.
        cols: :math:`(B, H, W)` int64 column of that pixel, ``-1`` where ``squared`` is ``inf``.
    """

    squared: Tensor
    rows: Tensor
    cols: Tensor


def _column_pass(features: Tensor) -> tuple[Tensor, Tensor]:
    """Nearest feature in each pixel's own column.

    The scans run along the contiguous last dim of the transposed map (``cummax`` along a strided dim is
    ~20x slower on CPU).

    Args:
        features: :math:`(B, H, W)` bool.

    Returns:
        ``(gap, row)``: :math:`(B, H, W)` int64 vertical distance (``H + W + 1`` when the column has no
        feature) and the row of that feature.
    """
    _, height, width = features.shape
    far = height + width + 1
    columns = features.transpose(1, 2).contiguous()  # (B, W, H)
    index = torch.arange(height, device=features.device, dtype=torch.int64)
    above = torch.where(columns, index, index.new_tensor(-far)).cummax(dim=2).values
    below = torch.where(columns, index, index.new_tensor(height + far)).flip(2).cummin(dim=2).values.flip(2)
    gap_above, gap_below = index - above, below - index
    take_above = gap_above <= gap_below
    gap = torch.where(take_above, gap_above, gap_below).clamp_(max=far)
    row = torch.where(take_above, above, below)
    return gap.transpose(1, 2).contiguous(), row.transpose(1, 2).contiguous()


def _row_pass_bisection(cost: Tensor, far: int) -> Tensor:
    """Leftmost ``argmin_k cost[r, k] + (j - k)^2`` for every row ``r`` and column ``j`` (exact).

    Args:
        cost: :math:`(R, W)` int64 site costs ``g^2``, each <= ``far^2``.
        far: the column pass's "no feature" gap, ``H + W + 1``.

    Returns:
        :math:`(R, W)` int64 ``k*``.
    """
    rows, width = cost.shape
    device = cost.device
    sites = torch.arange(width, device=device, dtype=torch.int64)
    best = torch.zeros((rows, width), device=device, dtype=torch.int64)
    # j = 0: a full scan; key = cost * W + k orders by cost, then by the leftmost k.
    best[:, 0] = ((cost + sites * sites) * width + sites).amin(dim=1) % width
    # Slots past a row's last range scan sites k >= W: they read a cost no real candidate can lose to.
    never = far * far + 16 * width * width
    padded = torch.cat([cost, cost.new_full((rows, 2 * width), never)], dim=1)
    step = 1 << max(0, math.ceil(math.log2(width)) - 1)
    while step >= 1:  # ceil(log2 W) levels, each fully vectorised over all rows and queries
        queries = torch.arange(step, width, 2 * step, device=device)
        count = queries.numel()
        if count:
            low = best[:, queries - step]  # k*(j - s) <= k*(j) <= k*(j + s) (monotone argmin)
            high = torch.where(queries + step < width, best[:, (queries + step).clamp(max=width - 1)], width - 1)
            length = high - low + 1
            start = length.cumsum(dim=1) - length  # the ranges tile [0, W-1]: sum(length) <= W - 1 + Q
            slots = width - 1 + count
            owner = torch.zeros((rows, slots), device=device, dtype=torch.int64)
            owner.scatter_(1, start[:, 1:], 1)
            owner = owner.cumsum_(dim=1)
            slot = torch.arange(slots, device=device, dtype=torch.int64)
            site = (low - start).gather(1, owner).add_(slot)  # k = low + (slot - start)
            offset = (queries - low + start).gather(1, owner).sub_(slot)  # j - k
            key = padded.gather(1, site).add_(offset.mul_(offset)).mul_(width).add_(site)
            minimum = torch.full((rows, count), torch.iinfo(torch.int64).max, device=device, dtype=torch.int64)
            minimum.scatter_reduce_(1, owner, key, reduce="amin")
            best[:, queries] = minimum % width
        step //= 2
    return best


def _row_pass_rounds(cost: Tensor, rounds: int) -> Tensor:
    """``argmin_k cost[r, k] + (j - k)^2`` over ``|j - k| <= rounds``: exact where the distance is <= rounds.

    Round t: ``f(j) <- min(f(j), f(j - 1) + 2t - 1)`` then ``f(j) <- min(f(j), f(j + 1) + 2t - 1)``
    (REFERENCES.md). The site index rides in the low digits of ``key = f * W + k``.

    Args:
        cost: :math:`(R, W)` int64 site costs.
        rounds: number of rounds T.

    Returns:
        :math:`(R, W)` int64 site per pixel (optimal wherever the optimum is within T columns).
    """
    width = cost.shape[1]
    sites = torch.arange(width, device=cost.device, dtype=torch.int64)
    key = cost * width + sites
    for t in range(1, rounds + 1):  # a bounded number of vectorised rounds
        increment = (2 * t - 1) * width
        key[:, 1:] = torch.minimum(key[:, 1:], key[:, :-1] + increment)
        key[:, :-1] = torch.minimum(key[:, :-1], key[:, 1:] + increment)
    return key % width


def nearest_feature(features: Tensor, *, max_distance: float | None = None) -> NearestFeature:
    """Exact squared Euclidean distance of every pixel to its nearest feature (``True``) pixel, with its index.

    Equals ``scipy.ndimage.distance_transform_edt(~features[b], return_indices=True)`` per image: squared
    distances exactly; the index is a feature pixel at exactly that distance (ties may pick another one).

    Args:
        features: :math:`(B, H, W)` (or :math:`(H, W)`) bool, the pixels distances are measured to.
        max_distance: optional cap. Pixels farther than ``max_distance`` from every feature saturate:
            ``squared = inf``, ``rows = cols = -1``; all others are exact. A small cap (``4 * cap`` below
            ``10 * log2(W)``) switches the row pass to ``floor(cap)`` cheap rounds. ``None``: no cap.

    Returns:
        :class:`NearestFeature` ``(squared, rows, cols)``, each :math:`(B, H, W)`; an image without
        features is all ``inf`` / ``-1``.

    Example:
        >>> features = torch.zeros(1, 3, 4, dtype=torch.bool)
        >>> features[0, 0, 0] = True
        >>> result = nearest_feature(features)
        >>> result.squared[0]
        tensor([[ 0.,  1.,  4.,  9.],
                [ 1.,  2.,  5., 10.],
                [ 4.,  5.,  8., 13.]], dtype=torch.float64)
        >>> int(result.rows.max()), int(result.cols.max())
        (0, 0)
    """
    if features.dtype != torch.bool:
        raise TypeError(f"`features` must be a bool tensor, got {features.dtype}")
    if features.ndim == 2:
        return NearestFeature(*(t[0] for t in nearest_feature(features[None], max_distance=max_distance)))
    if features.ndim != 3:
        raise ValueError(f"`features` must have shape (B, H, W) or (H, W), got {tuple(features.shape)}")
    batch, height, width = features.shape
    gap, gap_row = _column_pass(features)
    cost = (gap * gap).reshape(batch * height, width)
    rounds = None if max_distance is None else int(math.floor(max_distance))
    if rounds is not None and 4 * rounds < 10 * max(1.0, math.log2(width)):
        cols = _row_pass_rounds(cost, rounds)
    else:
        cols = _row_pass_bisection(cost, height + width + 1)
    squared = cost.gather(1, cols)
    offset = torch.arange(width, device=features.device, dtype=torch.int64) - cols
    squared = (squared + offset * offset).view(batch, height, width)
    cols = cols.view(batch, height, width)
    rows = gap_row.gather(2, cols)
    limit = (height - 1) ** 2 + (width - 1) ** 2  # above this only the "no feature" sentinel remains
    if max_distance is not None:
        limit = min(limit, math.floor(max_distance * max_distance)) if max_distance >= 0 else -1
    missing = squared > limit
    minus_one = torch.full_like(cols, -1)
    return NearestFeature(
        torch.where(missing, torch.full_like(squared, math.inf, dtype=torch.float64), squared.double()),
        torch.where(missing, minus_one, rows),
        torch.where(missing, minus_one, cols),
    )


def distance_transform(features: Tensor, *, max_distance: float | None = None) -> Tensor:
    """Exact Euclidean distance to the nearest feature pixel, ``sqrt`` of :func:`nearest_feature`'s ``squared``.

    Args:
        features: :math:`(B, H, W)` (or :math:`(H, W)`) bool.
        max_distance: optional cap; farther pixels are ``inf`` (see :func:`nearest_feature`).

    Returns:
        :math:`(B, H, W)` float64, ``inf`` where no feature is (within ``max_distance``).

    Example:
        >>> distance_transform(torch.tensor([[True, False, False]]))
        tensor([[0., 1., 2.]], dtype=torch.float64)
    """
    return nearest_feature(features, max_distance=max_distance).squared.sqrt()
