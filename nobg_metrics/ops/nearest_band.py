"""The nearest feature pixel of the pixels close to the features, with scipy's choice among equidistant ones.

:func:`nearest_in_band` takes the exact squared distance ``D`` of every pixel (from
:func:`nobg_metrics.ops.distance.bounded_squared_distance`) and, for the pixels with ``1 <= D <= max_squared``,
finds *which* feature pixel is nearest without a second transform: it is one of the few offsets
``(dy, dx)`` with ``dy^2 + dx^2 = D`` (4 or 8 of them for ``D <= 24``), and among several feature pixels at that
distance scipy's ``distance_transform_edt(return_indices=True)`` returns the one with the smallest column,
then the smallest row (its passes keep the earlier site on ties; the lexicographic minimum of
``(D, column, row)``). So the candidates of each ``D`` are tried in ``(dx, dy)`` order and the first that lands
on a feature pixel wins: at most 8 gathers per pixel.

The weighted F-measure needs this on the pixels within Chebyshev distance 3 of the gt (``D <= 18``, see
docs/weighted_f_measure.md). Where host reads are free (CPU) only those pixels are visited (one ``nonzero``);
elsewhere every pixel of the window is, and pixels outside the band point at themselves (no sync).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics.ops import host_reads

MAX_CANDIDATES = 8
"""The most offsets at one squared distance ``D <= 24`` (``D = 5``: ``(±1, ±2), (±2, ±1)``)."""


@functools.lru_cache(maxsize=8)
def candidate_offsets(max_squared: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """For every ``D`` in ``0 .. max_squared``: the offsets ``(dy, dx)`` with ``dy^2 + dx^2 = D``, sorted by
    ``(dx, dy)`` (scipy's order among equidistant pixels); ``D = 0`` and sums of no two squares get ``()``.

    Example:
        >>> candidate_offsets(2)[1], candidate_offsets(2)[2]
        (((0, -1), (-1, 0), (1, 0), (0, 1)), ((-1, -1), (1, -1), (-1, 1), (1, 1)))
        >>> sum(len(offsets) for offsets in candidate_offsets(18))  # the 7 x 7 window's reach: 60 offsets
        60
    """
    if not 0 <= max_squared <= 24:
        raise ValueError(f"`max_squared` must be in [0, 24] (at most {MAX_CANDIDATES} offsets per D), got {max_squared}")
    reach = int(max_squared**0.5)
    table: list[list[tuple[int, int]]] = [[] for _ in range(max_squared + 1)]
    for dx in range(-reach, reach + 1):  # a bounded table of offsets, built once per max_squared
        for dy in range(-reach, reach + 1):
            if 0 < dy * dy + dx * dx <= max_squared:
                table[dy * dy + dx * dx].append((dy, dx))
    return tuple(tuple(offsets) for offsets in table)  # dx outer, dy inner: already in (dx, dy) order


CHUNK_PIXELS = 1 << 18
"""Pixels whose candidates are tried at once (eight int64 gathers each: ~50 MiB of temporaries at most)."""


class BandIndex(NamedTuple):
    """Nearest feature pixels of the band pixels of a crop of a :math:`(B, H, W)` batch, in the crop's flat
    :math:`(B, h, w)` indices.

    Attributes:
        targets: :math:`(N,)` int64 band pixels, or ``None``: every crop pixel, in order (the sync-free path).
        sources: :math:`(N,)` int64 their nearest feature pixels (off the band, on the sync-free path: themselves).
    """

    targets: Tensor | None
    sources: Tensor

    def spread(self, values: Tensor, rows: slice, cols: slice) -> Tensor:
        """The crop ``[rows, cols]`` of ``values`` with each band pixel's value replaced by its nearest feature
        pixel's: :math:`(B, h, w)`, a new tensor.

        Args:
            values: :math:`(B, H, W)` map.
            rows, cols: the crop the index was built on.
        """
        crop = values[:, rows, cols]
        if self.targets is None:
            return crop.reshape(-1).index_select(0, self.sources).view(crop.shape)
        crop = crop.clone(memory_format=torch.contiguous_format)
        flat = crop.view(-1)
        flat.index_copy_(0, self.targets, flat.index_select(0, self.sources))  # sources are never targets
        return crop


def nearest_in_band(features: Tensor, squared: Tensor, max_squared: int, rows: slice, cols: slice) -> BandIndex:
    """:class:`BandIndex` of the pixels of the crop ``[rows, cols]`` with ``1 <= squared <= max_squared``.

    The crop must hold the nearest feature pixel of each of its band pixels (a box around the features with
    a margin does).

    Args:
        features: :math:`(B, H, W)` bool.
        squared: :math:`(B, H, W)` int exact squared distance to the nearest feature pixel (exact at least up
            to ``max_squared``; larger values may be capped).
        max_squared: the band's reach, at most 24.
        rows, cols: the crop.

    Returns:
        :class:`BandIndex`.

    Example:
        >>> features = torch.tensor([[[False, True, False], [True, False, False]]])
        >>> squared = torch.tensor([[[1, 0, 1], [0, 1, 2]]], dtype=torch.int32)
        >>> band = nearest_in_band(features, squared, 2, slice(0, 2), slice(0, 3))
        >>> band.targets.tolist(), band.sources.tolist()  # (0, 0): column 0 (row 1) before column 1 (row 0)
        ([0, 2, 4, 5], [3, 1, 3, 1])
    """
    device = squared.device
    crop = squared[:, rows, cols]
    batch, height, width = crop.shape
    pad = math.isqrt(max_squared)
    padded = torch.nn.functional.pad(features[:, rows, cols].view(torch.uint8), (pad, pad, pad, pad)).view(-1)
    padded_width = width + 2 * pad
    padded_area = (height + 2 * pad) * padded_width
    if host_reads.free_on(squared):  # the band's pixels only
        coords = torch.nonzero((crop >= 1) & (crop <= max_squared))  # (N, 3): image, row, column
        targets: Tensor | None = (coords * torch.tensor([height * width, width, 1], device=device)).sum(dim=1)
        own = targets
        anchor = (coords * torch.tensor([padded_area, padded_width, 1], device=device)).sum(dim=1)
        full = squared.shape[1] * squared.shape[2]
        at = (coords * torch.tensor([full, squared.shape[2], 1], device=device)).sum(dim=1)
        distance = squared.reshape(-1).index_select(0, at.add_(rows.start * squared.shape[2] + cols.start))
    else:  # every crop pixel: no host read; off the band (D = 0 there) the pixel itself
        targets = None
        own = torch.arange(batch * height * width, device=device)
        anchor = torch.arange(batch * padded_area, device=device).view(batch, -1, padded_width)
        anchor = anchor[:, : height, : width].reshape(-1)
        distance = crop.reshape(-1)
        distance = torch.where((distance >= 1) & (distance <= max_squared), distance, 0)
    anchor = anchor + (pad * padded_width + pad)
    dy_table, dx_table = _shift_tables(max_squared, device)
    padded_shift, shift = dy_table * padded_width + dx_table, dy_table * width + dx_table
    first_slot = distance.long().mul_(MAX_CANDIDATES)
    slots = torch.arange(MAX_CANDIDATES, device=device)
    sources = []
    for start in range(0, own.numel(), CHUNK_PIXELS):  # bounded temporaries (a bounded number of rounds)
        part = slice(start, start + CHUNK_PIXELS)
        candidates = (first_slot[part, None] + slots).view(-1)  # each pixel's 8 candidates, in (dx, dy) order
        where = padded_shift.index_select(0, candidates).view(-1, MAX_CANDIDATES).add_(anchor[part, None])
        hits = padded.index_select(0, where.view(-1))  # 0/1 bytes, 8 per pixel: one little-endian int64 word
        word = hits.view(torch.int64)
        lowest = torch.bitwise_and(word, -word).double()  # 2^(8 k) for the first hit k (0: none)
        first = torch.log2(lowest).mul_(1 / 8).nan_to_num_(0.0, 0.0, 0.0).long()  # exact: powers of two
        sources.append(own[part] + shift.index_select(0, first_slot[part] + first))
    return BandIndex(targets, sources[0] if len(sources) == 1 else torch.cat([own[:0], *sources]))


@functools.lru_cache(maxsize=16)
def _shift_tables(max_squared: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """``(dy, dx)`` of candidate ``slot`` of squared distance ``D`` at ``D * MAX_CANDIDATES + slot``, int64, for
    ``D = 0 .. max_squared + 1``; a ``D`` with fewer candidates repeats its last one (a repeat is never the
    first hit), one without any (0, the row past the band) holds ``(0, 0)``: the pixel itself."""
    dy = torch.zeros((max_squared + 2) * MAX_CANDIDATES, dtype=torch.int64)
    dx = torch.zeros_like(dy)
    for d, offsets in enumerate(candidate_offsets(max_squared)):  # a bounded table: <= 25 x 8 entries
        for slot in range(MAX_CANDIDATES * bool(offsets)):
            dy[d * MAX_CANDIDATES + slot], dx[d * MAX_CANDIDATES + slot] = offsets[min(slot, len(offsets) - 1)]
    return dy.to(device), dx.to(device)  # once per device: no host-to-device copy inside an update
