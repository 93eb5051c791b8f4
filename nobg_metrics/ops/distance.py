"""Exact Euclidean distance transform with nearest-feature indices, batched, pure torch.

``nearest_feature(features)`` gives, for every pixel of a :math:`(B, H, W)` bool map, the squared distance to
the nearest ``True`` pixel and that pixel's (row, col). It equals ``scipy.ndimage.distance_transform_edt(~f,
return_indices=True)`` (scipy measures the distance of NON-zero pixels to the nearest ZERO pixel, so its input is
our complement) bit for bit on the distances, and the index breaks ties as scipy does (leftmost column,
then upper row; tested).

Algorithm (separable, exact — see docs/distance_transform.md):

1. Column pass: for every pixel the nearest feature in its own column, from a ``cummax`` of the feature row
   indices above and a ``cummin`` below: ``g(i, k)``, with its row.
2. Row pass (``ops.envelope``): ``f(i, j) = min_k c(k) + (j - x_k)^2`` with ``c(k) = g(i, k)^2`` over the
   columns ``x_k`` that hold a feature (only those can be nearest; all ``W`` columns off CPU, no sync)
   (Felzenszwalb & Huttenlocher 2012, "Distance transforms of sampled functions"). The cost matrix is Monge,
   so the leftmost argmin ``k*(j)`` is nondecreasing in ``j``. We get ``k*`` at ``j = 0, Q, 2Q, ..., 15Q``
   (``Q = P/16``, ``P`` the power of two >= W) by a brute-force int32 scan, then bisect: at odd multiples of
   ``s = Q/2, ..., 1`` scan only ``[k*(j - s), k*(j + s)]``. Those ranges tile the sites, so one level costs
   ``O(S)`` per row and the whole pass ``O(B·H·S·log W)`` in ``ceil(log2 W) - 4`` vectorised levels, never an
   ``O(H·W·W)`` tensor.
3. With a small ``max_distance`` the row pass is instead ``T = floor(max_distance)`` rounds of
   ``f <- min(f, f(j -+ 1) + (2t - 1))``, exact for every pixel whose distance is <= T.

``bounded_squared_distance(features, radius)`` is the same transform without indices, exact up to a radius:
``min(D, (radius + 1)^2)``, int32 at any image size. Its column pass stops at ``radius + 1`` rows and its row
pass reads the minimum off the bisection's keys (the weighted F-measure needs ``D`` only up to 265²).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.envelope import (
    feature_columns,
    lower_envelope_bisection,
    lower_envelope_minimum,
    lower_envelope_rounds,
)


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


def _column_pass(features: Tensor, positions: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Nearest feature in each pixel's own column (upper row on ties), in every column or only some.

    The scans run along the contiguous last dim of the transposed map (``cummax`` along a strided dim is
    ~20x slower on CPU); everything is int32.

    Args:
        features: :math:`(B, H, W)` bool.
        positions: optional :math:`(B, 1, S)` int64 columns to scan (default: all ``W``).

    Returns:
        ``(gap, row)``: :math:`(B, H, S)` int32 vertical distance (``H + W + 1`` when the column has no
        feature) and the row of that feature.
    """
    batch, height, width = features.shape
    far = height + width + 1
    columns = swap_last_two(features)  # (B, W, H)
    if positions is not None:
        columns = columns.gather(1, positions.transpose(1, 2).expand(batch, -1, height))
    index = torch.arange(height, device=features.device, dtype=torch.int32)
    above = torch.where(columns, index, -far).cummax(dim=2).values
    below = torch.where(columns.flip(2), index.flip(0), height + far).cummin(dim=2).values
    below = below.flip(2)
    gap_above, gap_below = index - above, below.sub_(index)
    take_above = gap_above <= gap_below
    gap = torch.where(take_above, gap_above, gap_below).clamp_(max=far)
    row = torch.where(take_above, above, gap_below.add_(index))
    return swap_last_two(gap), swap_last_two(row)


def swap_last_two(tensor: Tensor) -> Tensor:
    """``tensor.transpose(1, 2).contiguous()`` of a contiguous (B, M, N) tensor, through 2-D transposes.

    torch's copy has a cache-blocked kernel for 2-D transposes only; a batched one goes element by element
    (~5x slower at 1024²). ``(B·M, N)ᵀ`` is one blocked transpose, then the rows of length M are regrouped
    per image (plain row copies).

    Examples:
        >>> swap_last_two(torch.arange(12).view(2, 2, 3))[1]
        tensor([[ 6,  9],
                [ 7, 10],
                [ 8, 11]])
    """
    batch, rows, cols = tensor.shape
    flipped = tensor.reshape(batch * rows, cols).t().contiguous()  # (N, B·M)
    if batch == 1:
        return flipped.view(1, cols, rows)
    return flipped.view(cols, batch, rows).transpose(0, 1).contiguous()


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

    Examples:
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
    _, height, width = features.shape
    rounds = None if max_distance is None else max(0, math.floor(max_distance))
    squared, rows, cols = _nearest_exact(features, rounds)
    limit = (height - 1) ** 2 + (width - 1) ** 2  # above this only the "no feature" sentinel remains
    if max_distance is not None:
        limit = min(limit, math.floor(max_distance * max_distance)) if max_distance >= 0 else -1
    missing = squared > limit
    return NearestFeature(
        squared.double().masked_fill_(missing, math.inf),
        rows.long().masked_fill_(missing, -1),
        cols.long().masked_fill_(missing, -1),
    )


class NearestSite(NamedTuple):
    """The nearest feature of every pixel, its row left to read only where it is needed.

    Attributes:
        squared: :math:`(B, H, W)` squared distance, int32 (int64 when ``(H + W + 1)^2 + W^2`` needs it).
        cols: :math:`(B, H, W)` column of the nearest feature, same dtype.
        site: :math:`(B, H, W)` int64 index of that column among the row pass's sites.
        site_rows: :math:`(B, H, S)` int32 row of the nearest feature in each site's column.
    """

    squared: Tensor
    cols: Tensor
    site: Tensor
    site_rows: Tensor

    def rows_cols(self, rows: slice = slice(None), cols: slice = slice(None)) -> tuple[Tensor, Tensor]:
        """Row (int32) and column (``squared``'s dtype) of the nearest feature of the pixels in ``[rows, cols]``."""
        return self.site_rows[:, rows].gather(2, self.site[:, rows, cols]), self.cols[:, rows, cols]


def _nearest_site(features: Tensor, rounds: int | None = None) -> NearestSite:
    """:class:`NearestSite` of every pixel (exact; with ``rounds``, exact within that distance).

    A pixel of an image without features holds a squared distance above ``(H - 1)^2 + (W - 1)^2``.

    Args:
        features: :math:`(B, H, W)` bool.
        rounds: optional cap; a small one switches the row pass to ``rounds`` cheap rounds.
    """
    batch, height, width = features.shape
    far = height + width + 1
    # int32 whenever every value fits (half the memory traffic); never mixed with int64: mixed kernels are slow.
    # A gap reaches ``far``: its square wraps in int32 from far = 46 341 on (a 1 x 46 340 strip's gt at one end)
    cost_dtype = torch.int32 if far * far < 2**31 else torch.int64
    dtype = torch.int32 if far * far + width * width < 2**31 else torch.int64
    if rounds is not None and 4 * rounds < 10 * max(1.0, math.log2(width)):
        gap, site_rows = _column_pass(features)
        cost = gap.to(cost_dtype)
        cost = cost.mul_(cost)  # (B, H, W); mul_, not square_ (pow: ~15x slower on ints)
        site = lower_envelope_rounds(cost.view(batch * height, width), rounds).view(batch, height, width)
        cols = site.to(dtype)
    else:
        positions, sites = feature_columns(features)  # only columns holding a feature can be nearest
        gap, site_rows = _column_pass(features, positions)  # (B, H, S)
        cost = gap.to(cost_dtype)
        cost = cost.mul_(cost)
        site = lower_envelope_bisection(cost, positions, width, far)
        cols = positions.to(dtype).expand(batch, height, sites).gather(2, site)
    offset = torch.arange(width, device=features.device, dtype=dtype) - cols
    squared = offset.mul_(offset).add_(cost.to(dtype).gather(2, site))
    return NearestSite(squared, cols, site, site_rows)


def _nearest_exact(features: Tensor, rounds: int | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """Squared distance, row (int32) and column of the nearest feature, each :math:`(B, H, W)`.

    See :func:`_nearest_site`.
    """
    nearest = _nearest_site(features, rounds)
    return (nearest.squared, *nearest.rows_cols())


def distance_transform(features: Tensor, *, max_distance: float | None = None) -> Tensor:
    """Exact Euclidean distance to the nearest feature pixel, ``sqrt`` of :func:`nearest_feature`'s ``squared``.

    Args:
        features: :math:`(B, H, W)` (or :math:`(H, W)`) bool.
        max_distance: optional cap; farther pixels are ``inf`` (see :func:`nearest_feature`).

    Returns:
        :math:`(B, H, W)` float64, ``inf`` where no feature is (within ``max_distance``).

    Examples:
        >>> distance_transform(torch.tensor([[True, False, False]]))
        tensor([[0., 1., 2.]], dtype=torch.float64)
    """
    return nearest_feature(features, max_distance=max_distance).squared.sqrt()


class BoundedNearest(NamedTuple):
    """Result of :func:`bounded_nearest`.

    Attributes:
        squared: :math:`(B, H, W)` int32 ``min(D, (radius + 1)^2)``.
        site: :math:`(B, H, W)` int32 index into ``positions`` of the leftmost column holding a nearest feature
            (meaningful where ``squared < (radius + 1)^2``).
        positions: :math:`(B, 1, S)` int64 the row pass's site columns.
    """

    squared: Tensor
    site: Tensor
    positions: Tensor


def bounded_squared_distance(features: Tensor, radius: int) -> Tensor:
    """``min(D, (radius + 1)^2)`` of every pixel, ``D`` its exact squared distance to the nearest feature pixel.

    Exact wherever ``D <= (radius + 1)^2`` (so every pixel within ``radius``); an image without features is
    ``(radius + 1)^2`` everywhere. Why the cap is exact: the column pass gives ``g' = min(g, radius + 1)``, and
    ``min_k g'_k^2 + (j - x_k)^2`` is at most the true minimum ``D`` (each term only shrinks) and at least
    ``min(D, (radius + 1)^2)`` (a term whose ``g`` was cut is ``>= (radius + 1)^2``, the others are true terms).

    Args:
        features: :math:`(B, H, W)` bool.
        radius: distances up to this are exact, ``0 <= radius <= 46 339`` (the cap's square fits int32).

    Returns:
        :math:`(B, H, W)` int32.

    Examples:
        >>> features = torch.zeros(1, 1, 7, dtype=torch.bool)
        >>> features[0, 0, 1] = True
        >>> bounded_squared_distance(features, 2)[0]
        tensor([[1, 0, 1, 4, 9, 9, 9]], dtype=torch.int32)
    """
    return _bounded(features, radius, False)[0]


def bounded_nearest(features: Tensor, radius: int) -> BoundedNearest:
    """:func:`bounded_squared_distance` and the column of the nearest feature: the leftmost one among equidistant
    features (scipy's choice of column), for every pixel closer than ``radius + 1``.

    The site comes with the minimum out of the row pass's keys (no second transform, no gather); the row of that
    feature is not kept (from ``D`` and the column it is one of two, see :mod:`nobg_metrics.ops.nearest_band`).

    Examples:
        >>> features = torch.tensor([[[True, False, False, True]]])
        >>> result = bounded_nearest(features, 2)
        >>> result.positions[0, 0, result.site[0, 0].long()].tolist()  # the tie at column 1.5 goes left
        [0, 0, 3, 3]
    """
    squared, site, positions = _bounded(features, radius, True)
    assert site is not None
    return BoundedNearest(squared, site, positions)


def _bounded(features: Tensor, radius: int, with_sites: bool) -> tuple[Tensor, Tensor | None, Tensor]:
    if not 0 <= radius < 46_340:
        raise ValueError(f"`radius` must be in [0, 46339], got {radius}")
    batch, _, width = features.shape
    cap = radius + 1
    if host_reads.free_on(features):
        positions, _ = feature_columns(features)  # only columns holding a feature can be nearest
    else:  # every column, in order: a column without a feature is a site of cost cap^2 (no sort, no sync)
        positions = torch.arange(width, device=features.device).expand(batch, 1, width)
    gaps = _capped_column_gaps(features, positions, cap)
    squared, site = lower_envelope_minimum(gaps, positions, width, cap * cap, with_sites)
    return squared, site, positions


def _capped_column_gaps(features: Tensor, positions: Tensor, cap: int) -> Tensor:
    """``min(g, cap)``, ``g`` the distance to the nearest feature in the pixel's own column: :math:`(B, H, S)`
    int32 in the columns ``positions`` (:math:`(B, 1, S)`). The scans run on the transposed map (see
    :func:`_column_pass`); no row is kept."""
    batch, height, _ = features.shape
    columns = swap_last_two(features)  # (B, W, H)
    if batch == 1:  # whole rows of the transposed map: a row copy each (a gather by an expanded index: ~3x slower)
        columns = columns.index_select(1, positions[0, 0])
    else:
        columns = columns.gather(1, positions.transpose(1, 2).expand(batch, -1, height))
    index = torch.arange(height, device=features.device, dtype=torch.int32)
    # the last feature row at or above each pixel (-cap: none), then the same on the flipped columns (below)
    above = torch.where(columns, index, -cap).cummax(dim=2).values
    below = torch.where(columns.flip(2), index, -cap).cummax(dim=2).values
    gap = torch.sub(index, above, out=above)
    torch.minimum(gap, torch.sub(index, below, out=below).flip(2), out=gap).clamp_(max=cap)
    return swap_last_two(gap)
