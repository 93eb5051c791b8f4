"""Binary morphology with OpenCV's elliptic structuring element, exact and batched on bit-packed masks.

``cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2r+1, 2r+1))`` (OpenCV ``imgproc/src/morph.dispatch.cpp``)
builds its kernel row by row::

    inv_r2 = 1 / (r * r)                     # 0 for r = 0
    for dy in -r .. r:
        dx = saturate_cast<int>(r * sqrt((r*r - dy*dy) * inv_r2))        # cvRound: half to even
        row dy holds ones at columns -dx .. dx (clipped to the kernel)

:func:`ellipse_half_widths` reproduces ``dx`` with the same float64 operations (Python's ``round`` is half
to even, as ``cvRound``); :func:`ellipse_kernel` is the kernel itself (tested equal to OpenCV's for
``r = 0 .. 60``).

Border rules: ``cv2.dilate`` / ``cv2.erode`` / ``cv2.morphologyEx`` with their default border
(``BORDER_CONSTANT`` with ``morphologyDefaultBorderValue()``) **ignore** the outside of the image: a
dilation reads it as the minimum, an erosion as the maximum. So ``dilate(m)`` is the OR over the kernel
window with the outside as background, ``erode(m) = NOT dilate(NOT m)`` (the kernel is point-symmetric) and
``MORPH_GRADIENT`` ``= dilate - erode``, which on a 0/1 mask is ``dilate(m) AND dilate(NOT m)``: the pixels
whose window (inside the image) holds both classes.

How it is computed: the rows of the kernel have non-increasing ``dx`` as ``|dy|`` grows, so the ellipse
is the union of a few nested rectangles ``[-h, h] x [-w, w]``, one per distinct half-width ``w``
(:func:`ellipse_rectangles`; 4 for ``r = 5``). A dilation by the union is the OR of the dilations by the
rectangles, and each of those is separable: an OR over ``2w+1`` pixels of each row (shared by every
rectangle and radius of that width, built incrementally), then over ``2h+1`` rows, on rows packed 64
pixels per ``int64`` (:mod:`nobg_metrics.ops.morphology`). No loop over pixels; the loops are over widths
and rectangles, ``<= r + 1`` rounds each.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import Tensor

from nobg_metrics.ops.morphology import pack_bits, shift_bits, unpack_bits, window_rows

_WORD_BITS = 64


@functools.cache
def ellipse_half_widths(radius: int) -> tuple[int, ...]:
    """OpenCV's half-width ``dx`` of each kernel row ``dy = -r .. r`` of the ``(2r+1)²`` ellipse.

    Examples:
        >>> ellipse_half_widths(2)
        (0, 2, 2, 2, 0)
    """
    _check_radius(radius)
    inv_r2 = 1.0 / (radius * radius) if radius else 0.0
    # dx = saturate_cast<int>(c * sqrt((r*r - dy*dy) * inv_r2)), c = r: the same float64 operations
    return tuple(round(radius * math.sqrt((radius * radius - dy * dy) * inv_r2)) for dy in range(-radius, radius + 1))


def ellipse_kernel(radius: int, device: torch.device | str | None = None) -> Tensor:
    """``cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2r+1, 2r+1)) > 0`` as a bool tensor.

    Examples:
        >>> ellipse_kernel(2).int()
        tensor([[0, 0, 1, 0, 0],
                [1, 1, 1, 1, 1],
                [1, 1, 1, 1, 1],
                [1, 1, 1, 1, 1],
                [0, 0, 1, 0, 0]], dtype=torch.int32)
    """
    half = torch.tensor(ellipse_half_widths(radius), device=device)
    columns = torch.arange(-radius, radius + 1, device=device).abs()
    return columns[None, :] <= half[:, None]


@functools.cache
def ellipse_rectangles(radius: int) -> tuple[tuple[int, int], ...]:
    """The ellipse as a union of centred rectangles ``(half_height, half_width)``, one per distinct ``dx``.

    Rectangle ``(h, w)`` covers rows ``-h .. h`` and columns ``-w .. w``; ``h`` is the last row whose
    half-width is ``w`` (half-widths never grow away from the centre row).

    Examples:
        >>> ellipse_rectangles(5)
        ((2, 5), (3, 4), (4, 3), (5, 0))
    """
    lower = ellipse_half_widths(radius)[radius:]  # dy = 0 .. r
    return tuple((dy, width) for dy, width in enumerate(lower) if dy == radius or lower[dy + 1] != width)


def _check_radius(radius: int) -> None:
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 0:
        raise ValueError(f"`radius` must be an int >= 0, got {radius!r}")


def inside_words(height: int, width: int, words: int, device: torch.device | str) -> Tensor:
    """:math:`(1, H, M)` int64 packed mask of the pixels inside a ``W``-pixel row (bits ``>= W`` clear).

    Examples:
        >>> inside_words(2, 3, 1, "cpu").tolist()
        [[[7], [7]]]
    """
    whole, part = divmod(width, _WORD_BITS)
    row = torch.zeros(words, dtype=torch.int64, device=device)
    row[:whole].fill_(-1)  # all 64 bits (fill_: a Python scalar assignment would copy a host tensor over)
    if part:
        row[whole:whole + 1].fill_((1 << part) - 1)
    return row.expand(1, height, words)


def dilate_ellipses_packed(packed: Tensor, width: int, radii: Iterable[int], *,
                           transposed: bool = False) -> dict[int, Tensor]:
    """OR over OpenCV's ``(2r+1)²`` ellipse window for several radii at once, the outside read as background.

    The rows of every rectangle of every radius share one set of horizontal ORs, built incrementally
    (``C_w = C_{w-1} | m << w | m >> w``: two bit shifts per width, however many radii use it); each rectangle
    then only ORs rows (``ceil(log2(2h + 1))`` word ORs of row slices, no bit shifts), and a radius ORs its
    rectangles.

    Args:
        packed: :math:`(N, H, M)` int64 rows of bits (:func:`~nobg_metrics.ops.morphology.pack_bits` layout,
            bits ``>= W`` clear).
        width: ``W``.
        radii: radii ``r >= 0``.
        transposed: ``packed`` holds transposed images (rows = the images' columns; a tall image packs far fewer
            words so): the window is the transposed ellipse (OpenCV's is not symmetric), whose rectangles are the
            ellipse's swapped.

    Returns:
        ``{r: (N, H, M) int64}``, new tensors; bits ``>= W`` may be set (AND with :func:`inside_words` before
        counting).
    """
    height, words = packed.shape[-2:]
    # windows larger than the image only OR more zeros: clamp to H - 1 rows and W - 1 pixels; a clamped rectangle
    # inside another adds nothing to the union (a thin image clamps every rectangle of a large radius to one)
    clamped = {radius: sorted({(min(h, height - 1), min(w, width - 1))
                               for h, w in (((w, h) for h, w in ellipse_rectangles(radius)) if transposed
                                            else ellipse_rectangles(radius))})
               for radius in sorted(set(radii))}
    rectangles = {radius: _outermost(rects) for radius, rects in clamped.items()}
    by_rows = {radius for radius, rects in rectangles.items()  # the kernel's own rows (not for its transpose)
               if not transposed and 2 * radius <= sum(2 + math.ceil(math.log2(2 * h + 1)) for h, _ in rects)}
    widths = sorted({w for radius, rects in rectangles.items() for _, w in (clamped if radius in by_rows
                                                                            else rectangles)[radius]})
    margin = max(h for rects in rectangles.values() for h, _ in rects)
    # wide windows (half-widths beyond TRIPLING_WIDTH: images with H + W > ~19 200, e.g. 1 x 10^6) grow the OR by
    # tripling its span, which reads bits spread beyond the row: zero words on both sides keep them
    spare = -(-widths[-1] // _WORD_BITS) + 1 if widths[-1] > TRIPLING_WIDTH else 0
    padded = F.pad(packed, (spare, spare, margin, margin)) if margin or spare else packed  # zero rows: the outside
    row_padded, current, done = {}, padded, 0
    for half_width in widths:
        if spare:  # C_(d + s) = C_d | C_d << s | C_d >> s for s <= 2d + 1: ceil(log3) rounds to any width
            while done < half_width:
                step = min(2 * done + 1, half_width - done)
                current = current | shift_bits(current, step) | shift_bits(current, -step)
                done += step
        for shift in range(done + 1, half_width + 1):  # pixel x <- pixels x - w .. x + w (zero beyond the row)
            current = current | _shift(padded, shift) | _shift(padded, -shift)
        done = half_width
        row_padded[half_width] = current
    out: dict[int, Tensor] = {}
    for radius, rects in rectangles.items():
        result: Tensor | None = None
        if radius in by_rows:
            result = _or_rows(row_padded, ellipse_half_widths(radius), margin, height, width)
        else:
            for half_height, half_width in rects:
                rows = row_padded[half_width][..., margin - half_height:margin + height + half_height, :]
                dilated = window_rows(rows, 2 * half_height + 1, False)
                if result is None:
                    result = dilated.clone() if half_height == 0 else dilated  # never a view of shared rows / the input
                else:
                    result.bitwise_or_(dilated)
        assert result is not None  # every radius has a rectangle
        out[radius] = result[..., spare:spare + words].contiguous() if spare else result
    return out


TRIPLING_WIDTH = 64
"""Half-widths up to this grow the rows' OR one pixel at a time from the mask (two shifts a pixel: every width a
radius of an image under ~19 200 px of ``H + W`` uses is kept); wider ones triple the span of the OR so far."""


def _outermost(rectangles: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The distinct rectangles ``(h, w)`` not inside another of the list (the same union of windows), by increasing
    ``h``: from the tallest down, those wider than every taller one.

    Examples:
        >>> _outermost([(0, 3), (0, 5), (1, 4), (1, 2), (2, 1), (2, 1)])
        [(0, 5), (1, 4), (2, 1)]
    """
    kept, widest = [], -1
    for h, w in sorted(set(rectangles), key=lambda rectangle: (-rectangle[0], -rectangle[1])):
        if w > widest:
            kept.append((h, w))
            widest = w
    return kept[::-1]


def _shift(words: Tensor, shift: int) -> Tensor:
    """:func:`~nobg_metrics.ops.morphology.shift_bits` (output pixel ``j`` = input pixel ``j + shift``, zero-filled)
    in four word ops for ``0 < |shift| < 64``: the shifted words, then the bits carried from the neighbour word.
    Bits pushed past the last word are dropped (pixels ``>= 64 M``, never inside the image)."""
    if not 0 < abs(shift) < _WORD_BITS:
        return shift_bits(words, shift)
    if shift > 0:  # towards x = 0: logical right shift, carry from the next word's low bits
        out = (words >> shift).bitwise_and_((1 << (_WORD_BITS - shift)) - 1)
        out[..., :-1].bitwise_or_((words << (_WORD_BITS - shift))[..., 1:])  # in place: no copy back
        return out
    part = -shift  # away from x = 0: left shift, carry from the previous word's high bits
    out = words << part
    out[..., 1:].bitwise_or_((words >> (_WORD_BITS - part)).bitwise_and_((1 << part) - 1)[..., :-1])
    return out


def _or_rows(row_padded: dict[int, Tensor], half_widths: tuple[int, ...], margin: int, height: int,
             width: int) -> Tensor:
    """The OR of the kernel's ``2r + 1`` rows, each row ``dy`` read from the horizontal OR of its half-width
    ``dx(dy)`` shifted by ``dy`` rows (``2r`` word ORs: fewer than the rectangles' doubling rounds for small r)."""
    radius = len(half_widths) // 2
    result = None
    for dy, half_width in enumerate(half_widths):
        rows = row_padded[min(half_width, width - 1)]
        offset = margin + dy - radius
        if offset < 0 or offset > 2 * margin:  # rows beyond the clamped margin: only outside zeros
            continue
        piece = rows[..., offset:offset + height, :]
        result = piece.clone() if result is None else result.bitwise_or_(piece)
    assert result is not None  # the centre row is always read
    return result


def dilate_ellipse_packed(packed: Tensor, width: int, radius: int) -> Tensor:
    """:func:`dilate_ellipses_packed` for one radius: :math:`(N, H, M)` int64 (bits ``>= W`` may be set).

    Examples:
        >>> m = torch.zeros(1, 5, 5, dtype=torch.bool); m[0, 2, 2] = True
        >>> torch.equal(unpack_bits(dilate_ellipse_packed(pack_bits([m]), 5, 2), 5)[0], ellipse_kernel(2))
        True
    """
    _check_radius(radius)
    return dilate_ellipses_packed(packed, width, (radius,))[radius]


def _packed(mask: Tensor, radius: int) -> Tensor:
    _check_mask(mask)
    _check_radius(radius)
    return pack_bits([mask])


def dilate_ellipse(mask: Tensor, radius: int) -> Tensor:
    """``cv2.dilate(m, ellipse(r))`` with the default border (outside ignored).

    Args:
        mask: :math:`(B, H, W)` bool.
        radius: ``r >= 0``.

    Returns:
        :math:`(B, H, W)` bool.

    Examples:
        >>> m = torch.zeros(1, 5, 5, dtype=torch.bool); m[0, 2, 2] = True
        >>> torch.equal(dilate_ellipse(m, 2)[0], ellipse_kernel(2))
        True
    """
    return unpack_bits(dilate_ellipse_packed(_packed(mask, radius), mask.shape[-1], radius), mask.shape[-1])


def erode_ellipse(mask: Tensor, radius: int) -> Tensor:
    """``cv2.erode(m, ellipse(r))`` with the default border (outside ignored): ``NOT dilate(NOT m)``.

    Examples:
        >>> erode_ellipse(torch.ones(1, 2, 3, dtype=torch.bool), 3).all().item()
        True
    """
    return dilate_ellipse(~mask, radius).logical_not_()


def gradient_ellipse(mask: Tensor, radius: int) -> Tensor:
    """``cv2.morphologyEx(m, MORPH_GRADIENT, ellipse(r)) > 0``: pixels whose window holds both classes.

    Examples:
        >>> m = torch.zeros(1, 1, 6, dtype=torch.bool); m[0, 0, 3:] = True
        >>> gradient_ellipse(m, 1).int()
        tensor([[[0, 0, 1, 1, 0, 0]]], dtype=torch.int32)
    """
    return dilate_ellipse(mask, radius) & dilate_ellipse(~mask, radius)


def _check_mask(mask: Tensor) -> None:
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.ndim != 3:
        got = f"{mask.dtype} of shape {tuple(mask.shape)}" if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(f"`mask` must be a bool tensor of shape (B, H, W), got {got}")
