"""Binary erosion and dilation with a square structuring element, batched, exact and O(log d) per pixel.

``erode(mask, r)`` is the AND over the :math:`(2r+1)\\times(2r+1)` window centred on each pixel, with
everything outside the image read as **background** (zero padding). That is the boundary-iou-api's
``cv2.copyMakeBorder(mask, 1, 1, 1, 1, BORDER_CONSTANT, 0)`` followed by ``cv2.erode(3x3, iterations=r)``
and a crop: the zero ring survives every iteration, so after ``r`` rounds every pixel within chessboard
distance ``r`` of the outside is 0 — the image border is contour. It equals ``cv2.erode`` with a
:math:`(2r+1)^2` kernel and ``borderType=BORDER_CONSTANT, borderValue=0``; it is **not**
``-max_pool2d(-x, padding=r)``, whose ``-inf`` padding reads the outside as foreground.

``dilate(mask, r)`` is the OR over the same window, outside again background: ``cv2.dilate``'s default
border and ``max_pool2d(padding=r)`` agree with it.

How it is fast (cost per pixel grows with ``log r``, never ``r`` or ``r²``):

- the square window is separable: a column pass, then a row pass;
- a length-``L`` window of an AND/OR takes ``ceil(log2 L)`` rounds of "combine with a copy shifted by
  ``k``", ``k = 1, 2, 4, ...``, the last shift overlapping the previous cover (a sparse-table query);
- pixels are bits: each row is packed into ``int64`` words of 64 pixels (:func:`pack_bits`, pixel ``x``
  at bit ``x % 64`` of word ``x // 64``, little-endian byte order as on x86 and CUDA), so a column
  round is one word AND per 64 pixels and a row round shifts bits across words. Callers can keep
  combining packed masks and count them (:func:`count_bits`) without unpacking.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

_WORD_BITS = 64
_GATHER_BYTES = 0x0102040810204080  # sum_i 2^(56 - 7i): bit 8i -> bit 56 + i
_GATHER_HIGH_BITS = 0x0002040810204081  # sum_i 2^(49 - 7i): bit 8i + 7 -> bit 56 + i
_BYTE_ONES = 0x0101010101010101
_LOW7 = 0x7F7F7F7F7F7F7F7F
_HIGH = 0x8080808080808080 - (1 << 64)  # as a signed int64
_SPREAD_BITS = 0x8040201008040201 - (1 << 64)  # byte i: bit i


def _int64_rows(pixels: Tensor) -> Tensor:
    """A :math:`(N, H, W)` uint8 tensor as int64 rows of whole 64-byte blocks, zero-padded (a view when it can)."""
    count, height, width = pixels.shape
    if (width % _WORD_BITS == 0 and pixels.is_contiguous() and pixels.storage_offset() % 8 == 0
            and all(stride % 8 == 0 for stride in pixels.stride()[:-1])):  # a size-1 dim may keep any stride
        return pixels.view(torch.int64)
    padded = torch.empty((count, height, -(-width // _WORD_BITS) * _WORD_BITS), dtype=torch.uint8,
                         device=pixels.device)
    padded[..., :width] = pixels
    padded[..., width:].zero_()  # only the padding zeroed: one pass over the pixels instead of two
    return padded.view(torch.int64)


def _top_bytes(octets: Tensor) -> Tensor:
    """Words of 64 pixels from int64s whose top byte (little-endian byte 7) holds 8 pixels each."""
    return octets.view(torch.uint8)[..., 7::8].contiguous().view(torch.int64)


def pack_levels_at_least(levels: Tensor, level: int) -> Tensor:
    """Pack ``levels >= level`` of a uint8 image straight into bits (SWAR compare, 8 pixels per int64).

    Args:
        levels: :math:`(N, H, W)` uint8.
        level: ``1 <= level <= 255``.

    Returns:
        :math:`(N, H, \\lceil W / 64 \\rceil)` int64, as :func:`pack_bits` of ``levels >= level``.
    """
    octets = _int64_rows(levels)  # padding bytes are 0 < level: never set
    # v >= level, per byte, in bit 7; the 7-bit sums stay <= 254, so no carry crosses bytes:
    # level <= 128: v >= 128, or (v & 0x7F) + (128 - level) >= 128;
    # level >  128: v >= 128, and (v & 0x7F) + (256 - level) >= 128.
    # (in-place steps: every full-resolution temporary is an allocation, which costs more than the op)
    if level == 128:  # threshold 0.5 on v / 255: just the top bit
        high = octets & _HIGH
    elif level < 128:
        high = (octets & _LOW7).add_((128 - level) * _BYTE_ONES).bitwise_or_(octets).bitwise_and_(_HIGH)
    else:
        high = (octets & _LOW7).add_((256 - level) * _BYTE_ONES).bitwise_and_(octets).bitwise_and_(_HIGH)
    # bit 8i + 7 -> bit 56 + i (distinct partial products, no carries; the int64 product wraps).
    return _top_bytes(high.mul_(_GATHER_HIGH_BITS))


def pack_bits(masks: Sequence[Tensor]) -> Tensor:
    """Stack bool masks into rows of bits: pixel ``(y, x)`` at bit ``x % 64`` of word ``x // 64`` of row ``y``.

    Args:
        masks: bool tensors :math:`(N_i, H, W)` of one size; stacked in order.

    Returns:
        :math:`(\\sum N_i, H, \\lceil W / 64 \\rceil)` int64, zero past pixel ``W - 1``.
    """
    # Each int64 holds 8 pixel bytes (0/1; byte i at bit 8i). Multiplying by sum_i 2^(56 - 7i) moves byte i
    # to bit 56 + i; all partial products land on distinct bits (no carries) and those past bit 63 wrap
    # away (two's-complement int64 multiplication), so the top byte holds the 8 pixels in order.
    packed = [_top_bytes(_int64_rows(mask.view(torch.uint8)).mul(_GATHER_BYTES)) for mask in masks]
    return torch.cat(packed) if len(packed) > 1 else packed[0]


def unpack_bits(words: Tensor, width: int) -> Tensor:
    """Bool pixels ``0 .. width - 1`` of each packed row.

    Args:
        words: :math:`(N, R, M)` int64 rows of bits.
        width: pixels per row to return (``<= 64 M``).

    Returns:
        :math:`(N, R, width)` bool.
    """
    # Each byte of 8 pixels becomes an int64: replicated into all 8 bytes (x 0x0101..01), byte i keeps bit i
    # (& 0x8040..01), then every non-zero byte is clamped to 1 — which is a valid bool byte.
    spread = words.view(torch.uint8).to(torch.int64).mul_(_BYTE_ONES).bitwise_and_(_SPREAD_BITS)
    return spread.view(torch.uint8).clamp_(max=1).view(torch.bool)[..., :width]


def count_bits(words: Tensor) -> Tensor:
    """Set pixels per image of packed masks (SWAR popcount).

    Args:
        words: :math:`(N, R, M)` int64.

    Returns:
        :math:`(N,)` int64.
    """
    # Hacker's Delight 5-1; ``>>`` is arithmetic on int64, which only changes bit 63, masked off each time.
    bits = (words >> 1).bitwise_and_(0x5555555555555555)
    torch.sub(words, bits, out=bits)
    pairs = (bits >> 2).bitwise_and_(0x3333333333333333)
    bits.bitwise_and_(0x3333333333333333).add_(pairs)
    bits.add_(bits >> 4).bitwise_and_(0x0F0F0F0F0F0F0F0F)
    # Each byte now holds <= 8: multiplying by 0x0101...01 (wrapping) sums the bytes into the top byte.
    bits.mul_(_BYTE_ONES).bitwise_right_shift_(56)
    return bits.sum(dim=(-2, -1))


def shift_bits(words: Tensor, shift: int) -> Tensor:
    """Move the pixels of every row by ``shift``: output pixel ``j`` = input pixel ``j + shift``, zero-filled.

    ``shift > 0`` moves pixels towards ``x = 0``, ``shift < 0`` away from it (bits leaving the last word
    are dropped).

    Args:
        words: :math:`(N, R, M)` int64 rows of bits.
        shift: pixels.

    Returns:
        :math:`(N, R, M)` int64.
    """
    size = words.shape[-1]
    whole, part = divmod(abs(shift), _WORD_BITS)
    if whole >= size:
        return torch.zeros_like(words)
    if shift < 0:
        return _shift_away(words, whole, part)
    if part == 0:
        out = torch.zeros_like(words)
        out[..., :size - whole] = words[..., whole:]
        return out
    # logical right shift: the arithmetic shift's copies of bit 63 are masked off
    low = (words >> part).bitwise_and_((1 << (_WORD_BITS - part)) - 1)
    if whole == 0:
        out = low
    else:
        out = torch.zeros_like(words)
        out[..., :size - whole] = low[..., whole:]
    if size - whole > 1:
        out[..., :size - whole - 1] |= words[..., whole + 1:] << (_WORD_BITS - part)
    return out


def _shift_away(words: Tensor, whole: int, part: int) -> Tensor:
    """Output pixel ``j`` = input pixel ``j - (64 whole + part)``: word ``i`` from words ``i - whole`` and before."""
    size = words.shape[-1]
    out = torch.zeros_like(words)
    out[..., whole:] = words[..., :size - whole] << part
    if part and size - whole > 1:
        carry = (words[..., :size - whole - 1] >> (_WORD_BITS - part)) & ((1 << part) - 1)
        out[..., whole + 1:] |= carry
    return out


def _doubling_shifts(length: int) -> list[int]:
    """Shifts of the rounds covering a window of ``length``: 1, 2, 4, ..., then one overlapping shift."""
    shifts, covered = [], 1
    while 2 * covered <= length:
        shifts.append(covered)
        covered *= 2
    if covered < length:
        shifts.append(length - covered)
    return shifts


def window_rows(words: Tensor, length: int, use_and: bool) -> Tensor:
    """AND (``use_and``: erosion) or OR (dilation) of ``length`` consecutive rows.

    Shapes: ``words`` :math:`(N, R, M)` int64, ``R >= length`` -> :math:`(N, R - length + 1, M)`; output row
    ``y`` combines input rows ``y .. y + length - 1``.
    """
    combine = torch.bitwise_and if use_and else torch.bitwise_or
    for shift in _doubling_shifts(length):
        rows = words.shape[-2]
        words = combine(words[..., :rows - shift, :], words[..., shift:, :])
    return words


def window_cols(words: Tensor, length: int, use_and: bool) -> Tensor:
    """AND (``use_and``: erosion) or OR (dilation) of ``length`` consecutive pixels of each row.

    Shapes: ``words`` :math:`(N, R, M)` int64 rows of bits -> :math:`(N, R, M)`; output pixel ``j`` combines
    pixels ``j .. j + length - 1``, those past the end of a row reading as 0.
    """
    combine_ = torch.Tensor.bitwise_and_ if use_and else torch.Tensor.bitwise_or_
    for shift in _doubling_shifts(length):
        words = combine_(shift_bits(words, shift), words)
    return words


def square_window_bits(masks: Sequence[Tensor], radius: int, use_and: bool) -> tuple[Tensor, Tensor]:
    """Erosion (AND) or dilation (OR) by a :math:`(2r+1)^2` square with zero padding, kept packed.

    Args:
        masks: bool tensors :math:`(N_i, H, W)` of one size, processed as one stack.
        radius: ``r >= 0``.
        use_and: erosion (AND) or dilation (OR).

    Returns:
        As :func:`square_window_packed`.
    """
    return square_window_packed(pack_bits(masks), masks[0].shape[-1], radius, use_and)


def square_window_packed(packed: Tensor, width: int, radius: int, use_and: bool) -> tuple[Tensor, Tensor]:
    """Erosion (AND) or dilation (OR) of packed masks by a :math:`(2r+1)^2` square with zero padding.

    Args:
        packed: :math:`(N, H, \\lceil W / 64 \\rceil)` int64 from :func:`pack_bits`.
        width: ``W``, pixels per row.
        radius: ``r >= 0``.
        use_and: erosion (AND) or dilation (OR).

    Returns:
        ``(result, packed_masks)``: both :math:`(N, H, \\lceil (W + r) / 64 \\rceil)` int64 with pixel
        ``(y, x)`` at row ``y``, bit ``x`` (the input widened alike, for band arithmetic).
    """
    height = packed.shape[-2]
    if use_and and (height <= 2 * radius or width <= 2 * radius):
        # every window reaches the zero padding: the erosion is empty (no (2r+1)² work, no padded copy)
        return torch.zeros_like(packed), packed
    # A dilation's window never needs more rows or columns than the image has: OR with zero rows is a no-op.
    row_radius, col_radius = (radius, radius) if use_and else (min(radius, height - 1), min(radius, width - 1))
    extra_words = -(-(width + col_radius) // _WORD_BITS) - packed.shape[-1]
    if extra_words:
        packed = torch.nn.functional.pad(packed, (0, extra_words))
    # Zero padding: r bits on the left (the packed row already has >= r zero bits on the right). Rows: an
    # erosion's first and last r output rows reach the padding and are 0, so only the H - 2r inner rows are
    # computed (then zero rows put back); a dilation pads r rows. Memory stays O(H * W) on any aspect ratio.
    shifted = shift_bits(packed, -col_radius)
    if use_and:
        inner = window_rows(shifted, 2 * row_radius + 1, use_and)
        columns = torch.nn.functional.pad(inner, (0, 0, row_radius, row_radius))
    else:
        columns = window_rows(torch.nn.functional.pad(shifted, (0, 0, row_radius, row_radius)),
                              2 * row_radius + 1, use_and)
    return window_cols(columns, 2 * col_radius + 1, use_and), packed


def _check(mask: Tensor, radius: int) -> None:
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.ndim != 3:
        got = f"{mask.dtype} of shape {tuple(mask.shape)}" if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"`mask` must be a bool tensor of shape (B, H, W), got {got}")
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 0:
        raise ValueError(f"`radius` must be an int >= 0, got {radius!r}")


def erode(mask: Tensor, radius: int) -> Tensor:
    """Binary erosion by a :math:`(2r+1)^2` square; outside the image is background (zero padding).

    Equals ``cv2.erode(m, ones((2r+1, 2r+1)), borderType=cv2.BORDER_CONSTANT, borderValue=0)`` and the
    boundary-iou-api's padded ``r``-fold 3x3 erosion.

    Args:
        mask: :math:`(B, H, W)` bool.
        radius: ``r >= 0`` (``2r >= H`` or ``2r >= W`` erodes everything).

    Returns:
        :math:`(B, H, W)` bool.

    Examples:
        >>> m = torch.ones(1, 3, 5, dtype=torch.bool)
        >>> erode(m, 1).int()
        tensor([[[0, 0, 0, 0, 0],
                 [0, 1, 1, 1, 0],
                 [0, 0, 0, 0, 0]]], dtype=torch.int32)
    """
    _check(mask, radius)
    return unpack_bits(square_window_bits([mask], radius, True)[0], mask.shape[-1])


def dilate(mask: Tensor, radius: int) -> Tensor:
    """Binary dilation by a :math:`(2r+1)^2` square; outside the image is background.

    Equals ``cv2.dilate(m, ones((2r+1, 2r+1)))`` (default border) and ``max_pool2d(m, 2r+1, 1, r)``.

    Args:
        mask: :math:`(B, H, W)` bool.
        radius: ``r >= 0``.

    Returns:
        :math:`(B, H, W)` bool.

    Examples:
        >>> m = torch.zeros(1, 3, 5, dtype=torch.bool)
        >>> m[0, 0, 0] = True
        >>> dilate(m, 1).int()
        tensor([[[1, 1, 0, 0, 0],
                 [1, 1, 0, 0, 0],
                 [0, 0, 0, 0, 0]]], dtype=torch.int32)
    """
    _check(mask, radius)
    return unpack_bits(square_window_bits([mask], radius, False)[0], mask.shape[-1])
