"""Separable 1-D correlations as products with small banded matrices: the filters' fast path.

A 'valid' correlation with ``n`` taps, ``out[c] = sum_k taps[k] * x[c + k]``, is for ``T`` consecutive
outputs the product of the ``T + n - 1`` inputs they read with a ``(T + n - 1) x T`` band matrix
``band[j + k, j] = taps[k]``. Done as shifted multiply-adds it costs ``n`` memory-bound passes over the
map; as matrix products it is two BLAS calls (the ``T`` inputs of a tile, then the ``n - 1`` halo inputs
after it), compute-bound and ~3x faster on CPU in float64, the same on every device.

The products need every window to be a plain strided matrix, so the map lives in a :class:`Tiled`
buffer: each image's rows and columns rounded up to whole tiles of ``T``, images stacked, and one tile
of spare rows at the end. The window of a tile reads its halo from the next tile (or the next row,
image or the spare rows), which only ever feeds outputs beyond the valid ones. Every slot holds a finite
value (zeros beyond the map): a product also multiplies the window's other entries by the band's zeros.
Sums run in BLAS order: the same terms as the shifted passes, reassociated (float64: ~1e-16 relative).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

TILE = 16
"""Outputs per tile: band matrices are ``(TILE + n - 1) x TILE``, for up to ``TILE + 1`` taps. 16 was the
fastest of 8 ... 96 for DIM's 9 taps at 1024² (float64, one thread: 2.1 ms a pass against 6.6 ms shifted)."""


class Tiled(NamedTuple):
    """A (B, H, W) map in the tile layout.

    Attributes:
        buffer: :math:`(B \\cdot R_a + T, C_a)` float, ``R_a`` and ``C_a`` multiples of ``T`` = :data:`TILE`;
            image ``b`` occupies rows ``b R_a .. b R_a + H - 1``, columns ``0 .. W - 1``; the rest is finite.
        batch, height, width: the valid ``(B, H, W)``.
    """

    buffer: Tensor
    batch: int
    height: int
    width: int

    @property
    def rows(self) -> int:
        """``R_a``: buffer rows per image."""
        return (self.buffer.shape[0] - TILE) // self.batch

    def valid(self) -> Tensor:
        """:math:`(B, H, W)` view of the valid map."""
        columns = self.buffer.shape[1]
        return self.buffer[: self.batch * self.rows].view(self.batch, self.rows, columns)[:, : self.height,
                                                                                         : self.width]


def _round_up(value: int) -> int:
    return max(1, -(-value // TILE)) * TILE


def tiled(image: Tensor, pad: int = 0) -> Tiled:
    """Copy a :math:`(B, R, C)` map into a zeroed tile layout, with ``pad`` zero rows and columns around it.

    Args:
        image: :math:`(B, R, C)` float.
        pad: zero border width (a filter's zero padding); 0 for an image that is already padded.

    Returns:
        :class:`Tiled` of valid size ``(B, R + 2 pad, C + 2 pad)``.
    """
    batch, rows, cols = image.shape
    layout = empty_tiled(batch, rows + 2 * pad, cols + 2 * pad, image)
    valid = layout.valid()
    if pad:
        valid.zero_()
    valid[:, pad : pad + rows, pad : pad + cols] = image
    return layout


def empty_tiled(batch: int, rows: int, cols: int, like: Tensor) -> Tiled:
    """A tile layout of valid size ``(B, R, C)`` in ``like``'s dtype and device: zeros beyond the map, the map
    itself left to the caller to fill."""
    rows_alloc, cols_alloc = _round_up(rows), _round_up(cols)
    buffer = like.new_empty((batch * rows_alloc + TILE, cols_alloc))
    buffer[batch * rows_alloc:].zero_()
    images = buffer[: batch * rows_alloc].view(batch, rows_alloc, cols_alloc)
    images[:, rows:].zero_()
    images[:, :rows, cols:].zero_()
    return Tiled(buffer, batch, rows, cols)


_BANDS: dict[tuple[tuple[float, ...], torch.dtype, torch.device], Tensor] = {}


def _band(taps: list[float], like: Tensor) -> Tensor:
    """``(TILE + n - 1, TILE)`` band: ``band[j + k, j] = taps[k]``, in ``like``'s dtype and device (cached)."""
    key = (tuple(taps), like.dtype, like.device)
    if key not in _BANDS:
        count = len(taps)
        if count - 1 > TILE:
            raise ValueError(f"`taps` must hold at most {TILE + 1} values, got {count}")
        band = torch.zeros((TILE + count - 1, TILE), dtype=like.dtype)
        columns = torch.arange(TILE)
        for shift, tap in enumerate(taps):  # n taps: host-side construction of a small constant, once
            band[columns + shift, columns] = tap
        _BANDS[key] = band.to(like.device)
    return _BANDS[key]


def correlate_rows(source: Tiled, taps: list[float]) -> Tiled:
    """'valid' correlation along the width: ``out[b, r, c] = sum_k taps[k] * x[b, r, c + k]``.

    Args:
        source: :class:`Tiled` map of valid size ``(B, R, C)``, ``C >= n``.
        taps: the ``n`` taps.

    Returns:
        :class:`Tiled` of valid size ``(B, R, C - n + 1)`` in a new buffer of the same layout.
    """
    buffer = source.buffer
    band = _band(taps, buffer)
    windows = buffer.numel() // TILE - 1  # every tile of the buffer but the last (tail) one
    flat = buffer.view(-1)
    main = flat.as_strided((windows, TILE), (TILE, 1))
    halo = flat.as_strided((windows, len(taps) - 1), (TILE, 1), flat.storage_offset() + TILE)  # offsets are absolute
    out = buffer.new_empty(buffer.shape)
    result = out.view(-1)[: windows * TILE].view(windows, TILE)
    torch.mm(main, band[:TILE], out=result)
    if len(taps) > 1:
        result.addmm_(halo, band[TILE:])
    out.view(-1)[windows * TILE:].zero_()
    return Tiled(out, source.batch, source.height, source.width - len(taps) + 1)


def correlate_columns(source: Tiled, taps: list[float], out: Tensor | None = None) -> Tiled:
    """'valid' correlation along the height: ``out[b, r, c] = sum_k taps[k] * x[b, r + k, c]``.

    Args:
        source: :class:`Tiled` map of valid size ``(B, R, C)``, ``R >= n``.
        taps: the ``n`` taps.
        out: optional buffer of the source's shape to write into (must not be the source's).

    Returns:
        :class:`Tiled` of valid size ``(B, R - n + 1, C)``.
    """
    buffer = source.buffer
    columns = buffer.shape[1]
    band_t = _band(taps, buffer).t()  # (TILE, TILE + n - 1): out rows of a tile from its input rows
    tiles = (buffer.shape[0] - TILE) // TILE
    main = buffer.as_strided((tiles, TILE, columns), (TILE * columns, columns, 1))
    halo = buffer.as_strided((tiles, len(taps) - 1, columns), (TILE * columns, columns, 1),
                             buffer.storage_offset() + TILE * columns)
    out = buffer.new_empty(buffer.shape) if out is None else out
    result = out[: tiles * TILE].view(tiles, TILE, columns)
    torch.matmul(band_t[:, :TILE], main, out=result)
    if len(taps) > 1:
        result.baddbmm_(band_t[:, TILE:].expand(tiles, -1, -1), halo)
    out[tiles * TILE:].zero_()
    return Tiled(out, source.batch, source.height - len(taps) + 1, source.width)


STRIP_BOUNDS = (1 << 19, 1 << 26)
"""A filter's working buffers in the tile layout hold the padded window rounded up to whole tiles plus a tile of
spare rows; :func:`strips` cuts a window so that each buffer holds at most twice the window's pixels, clamped to
these bounds (4 MiB ... 512 MiB of float64). A square image or batch is one strip below 8192² (its layout wastes a
few per cent); a one-pixel-thin image, whose few padded rows become 32 buffer rows, paid ~15x the memory per pixel
of a square one without strips (the gradient error: 806 B/px at 1 x 10^6)."""


def strips(rows: slice, cols: slice, batch: int, half: int) -> list[tuple[slice, slice]]:
    """The output window ``rows x cols`` of a filter with half-size ``half``, cut along its longer side into strips
    whose tile buffers fit :data:`STRIP_BOUNDS` (a bounded number of vectorised rounds).

    Examples:
        >>> len(strips(slice(0, 1024), slice(0, 1024), 1, 4)), len(strips(slice(0, 1), slice(0, 10**6), 1, 4))
        (1, 17)
    """
    height, width = rows.stop - rows.start, cols.stop - cols.start
    low, high = STRIP_BOUNDS
    budget = min(max(2 * batch * height * width, low), high)
    if height >= width:  # strips of whole rows: buffer ~ (B * rows_alloc + T) x cols_alloc
        across = batch * _round_up(width + 2 * half)
        step = max(TILE, budget // across - 2 * half - 2 * TILE)
        return [(slice(start, min(start + step, rows.stop)), cols) for start in range(rows.start, rows.stop, step)]
    across = batch * _round_up(height + 2 * half) + TILE
    step = max(TILE, budget // across - 2 * half - TILE)
    return [(rows, slice(start, min(start + step, cols.stop))) for start in range(cols.start, cols.stop, step)]
