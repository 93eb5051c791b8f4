"""Exact Euclidean distance transform with nearest-feature indices, batched, pure torch.

``nearest_feature(features)`` gives, for every pixel of a :math:`(B, H, W)` bool map, the squared distance to
the nearest ``True`` pixel and that pixel's (row, col). It equals ``scipy.ndimage.distance_transform_edt(~f,
return_indices=True)`` (scipy measures the distance of NON-zero pixels to the nearest ZERO pixel, so its input is
our complement) bit for bit on the distances, and the index breaks ties as scipy does (leftmost column,
then upper row; tested).

Algorithm (separable, exact — see docs/distance_transform.md):

1. Column pass: for every pixel the nearest feature in its own column, from a ``cummax`` of the feature row
   indices above and a ``cummin`` below: ``g(i, k)``, with its row.
2. Row pass: ``f(i, j) = min_k c(k) + (j - k)^2`` with ``c(k) = g(i, k)^2`` (Felzenszwalb & Huttenlocher 2012,
   "Distance transforms of sampled functions"). The cost matrix ``c(k) + (j - k)^2`` is Monge, so the leftmost
   argmin ``k*(j)`` is nondecreasing in ``j``. We get ``k*`` at ``j = 0, S, 2S, 3S`` (``S = P/4``, ``P`` the
   power of two >= W) by a brute-force int32 scan, then bisect: at odd multiples of ``s = S/2, ..., 1`` scan
   only ``[k*(j - s), k*(j + s)]``. Those ranges tile each row, so one level costs ``O(W)`` per row and the
   whole pass ``O(B·H·W·log W)`` in ``ceil(log2 W) - 1`` vectorised levels, never an ``O(H·W·W)`` tensor.
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
    """Nearest feature in each pixel's own column (upper row on ties).

    The scans run along the contiguous last dim of the transposed map (``cummax`` along a strided dim is
    ~20x slower on CPU); everything is int32.

    Args:
        features: :math:`(B, H, W)` bool.

    Returns:
        ``(gap, row)``: :math:`(B, H, W)` int32 vertical distance (``H + W + 1`` when the column has no
        feature) and the row of that feature.
    """
    _, height, width = features.shape
    far = height + width + 1
    columns = features.transpose(1, 2).contiguous()  # (B, W, H)
    index = torch.arange(height, device=features.device, dtype=torch.int32)
    above = torch.where(columns, index, -far).cummax(dim=2).values
    below = torch.where(columns.flip(2), index.flip(0), height + far).cummin(dim=2).values
    below = below.flip(2)
    gap_above, gap_below = index - above, below.sub_(index)
    take_above = gap_above <= gap_below
    gap = torch.where(take_above, gap_above, gap_below).clamp_(max=far)
    row = torch.where(take_above, above, gap_below.add_(index))
    return gap.transpose(1, 2).contiguous(), row.transpose(1, 2).contiguous()


_BRUTE_ELEMENTS = 1 << 24
"""Elements of one brute-force block (int32): bounds the memory of the first row-pass level."""


def _row_pass_bisection(cost: Tensor, far: int) -> Tensor:
    """Leftmost ``argmin_k cost[r, k] + (j - k)^2`` for every row ``r`` and column ``j`` (exact).

    First ``k*`` at ``j = 0, S, 2S, ...`` (``S`` a power of two, at most 4 queries) by a brute-force int32
    scan (``argmin`` returns the first minimum: the leftmost ``k``). Then, for ``s = S/2, ..., 1``, the odd
    multiples ``j`` of ``s`` scan ``[k*(j - s), k*(j + s)]`` (monotone argmin, Monge cost). Those ranges tile
    the row: site ``k`` belongs to the query ``q`` with ``low_q <= k < low_{q+1}`` (a scatter + cumsum), and
    each query's right end ``high_q = low_{q+1}`` is scored on its own. A site given to a query whose range
    does not hold it only adds a candidate, which cannot change the leftmost argmin. One
    ``scatter_reduce(amin)`` of ``key = (cost + (j - k)^2) * W + k`` over the owners gives each query's
    minimum and leftmost argmin together (``cummin`` of ``key - owner * M`` would do it too, but is 4x
    slower on CPU).

    Args:
        cost: :math:`(R, W)` int32 site costs ``g^2``.
        far: the largest gap ``g``, ``H + W + 1`` (bounds the keys).

    Returns:
        :math:`(R, W)` int64 ``k*``.
    """
    rows, width = cost.shape
    device = cost.device
    sites = torch.arange(width, device=device, dtype=torch.int64)
    stride = 1 << max(0, math.ceil(math.log2(width)) - 2)  # <= 4 brute-force queries per row
    coarse = torch.arange(0, width, stride, device=device)
    square = (coarse[:, None] - sites[None]).square_()  # (Q0, W)
    wide = torch.int32 if far * far + width * width < 2**31 else torch.int64
    chunk = max(1, _BRUTE_ELEMENTS // (coarse.numel() * width))
    best = torch.empty((rows, width), device=device, dtype=torch.int64)
    for first in range(0, rows, chunk):  # bounded memory; each block fully vectorised
        block = cost[first : first + chunk, None, :].to(wide) + square.to(wide)
        best[first : first + chunk, ::stride] = block.argmin(dim=2)
    base = cost.to(torch.int64).mul_(width).add_(sites)  # key without the (j - k)^2 term
    owner = torch.empty((rows, width), device=device, dtype=torch.int64)
    key = torch.empty((rows, width), device=device, dtype=torch.int64)
    step = stride // 2
    while step >= 1:
        queries = torch.arange(step, width, 2 * step, device=device)
        count = queries.numel()
        if count:
            low = best[:, 0 : width - step : 2 * step][:, :count]  # k*(j - s)
            last = 2 * step * count  # j + s of the last query (Python ints: no device sync)
            if last < width:
                last_high = best[:, last : last + 1]
            else:
                last_high = torch.full((rows, 1), width - 1, device=device, dtype=torch.int64)
            high = torch.cat([low[:, 1:], last_high], dim=1)  # k*(j + s)
            owner.zero_().scatter_add_(1, low[:, 1:], torch.ones_like(low[:, 1:]))
            torch.cumsum(owner, dim=1, out=owner)  # owner(k) = #{q >= 1 : low_q <= k}
            torch.mul(owner, 2 * step, out=key).add_(step - sites)  # j_owner - k
            key.mul_(key).mul_(width).add_(base)
            segment = torch.full((rows, count), torch.iinfo(torch.int64).max, device=device, dtype=torch.int64)
            segment.scatter_reduce_(1, owner, key, reduce="amin")
            right = (queries - high).square_().mul_(width).add_(base.gather(1, high))
            best[:, queries] = torch.minimum(segment, right) % width
        step //= 2
    return best


def _row_pass_rounds(cost: Tensor, rounds: int) -> Tensor:
    """``argmin_k cost[r, k] + (j - k)^2`` over ``|j - k| <= rounds``: exact where the distance is <= rounds.

    Round t: ``f(j) <- min(f(j), f(j - 1) + 2t - 1)`` then ``f(j) <- min(f(j), f(j + 1) + 2t - 1)``
    (REFERENCES.md). The site index rides in the low digits of ``key = f * W + k``.

    Args:
        cost: :math:`(R, W)` int32 site costs.
        rounds: number of rounds T.

    Returns:
        :math:`(R, W)` int64 site per pixel (optimal wherever the optimum is within T columns).
    """
    width = cost.shape[1]
    sites = torch.arange(width, device=cost.device, dtype=torch.int64)
    key = cost.to(torch.int64) * width + sites
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
    rounds = None if max_distance is None else max(0, int(math.floor(max_distance)))
    squared, rows, cols = _nearest_exact(features, rounds)
    limit = (height - 1) ** 2 + (width - 1) ** 2  # above this only the "no feature" sentinel remains
    if max_distance is not None:
        limit = min(limit, math.floor(max_distance * max_distance)) if max_distance >= 0 else -1
    missing = squared > limit
    return NearestFeature(
        squared.double().masked_fill_(missing, math.inf),
        rows.long().masked_fill_(missing, -1),
        cols.masked_fill_(missing, -1),
    )


def _nearest_exact(features: Tensor, rounds: int | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Squared distance (int64), row (int32) and column (int64) of the nearest feature, each :math:`(B, H, W)`.

    Exact for every pixel when ``rounds`` is None, else for pixels within distance ``rounds`` (farther pixels
    hold some larger squared distance). A pixel of an image without features holds a squared distance
    above ``(H - 1)^2 + (W - 1)^2``.

    Args:
        features: :math:`(B, H, W)` bool.
        rounds: optional cap; a small one switches the row pass to ``rounds`` cheap rounds.
    """
    batch, height, width = features.shape
    gap, gap_row = _column_pass(features)
    cost = gap.mul_(gap).view(batch * height, width)
    if rounds is not None and 4 * rounds < 10 * max(1.0, math.log2(width)):
        cols = _row_pass_rounds(cost, rounds)
    else:
        cols = _row_pass_bisection(cost, height + width + 1)
    offset = torch.arange(width, device=features.device, dtype=torch.int64) - cols
    squared = offset.mul_(offset).add_(cost.gather(1, cols)).view(batch, height, width)
    cols = cols.view(batch, height, width)
    return squared, gap_row.gather(2, cols), cols


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
