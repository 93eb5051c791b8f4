"""The inner boundary bands of every region of a label map at once: ``mask_to_boundary`` of each label.

For a label map ``L`` and a radius ``d``, pixel ``p`` is on its region's boundary when the
:math:`(2d+1)^2` window centred on ``p`` holds a pixel of another label or reaches outside the image. For
each label ``l`` that is exactly the boundary-iou-api's ``mask_to_boundary(L == l)`` (zero padding, ``d``
3x3 erosions: the band of pixels within chessboard distance ``d`` of the region's contour or of the image
border), so one pass gives the bands of all segments of a panoptic id map.

How (cost per pixel independent of ``d`` and of the number of labels): the window is uniform iff it holds
no *separation* — no two horizontally or vertically adjacent pixels of different labels — and lies inside
the image. The separations between columns (``L[:, x] != L[:, x + 1]``, and the image's left and right
edges) and between rows are two bit maps; "a separation in the window" is an OR over a
:math:`2d \\times (2d+1)` box of the first and a :math:`(2d+1) \\times 2d` box of the second, computed on
bit-packed rows with the doubling windows of :mod:`nobg_metrics.ops.morphology`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops.morphology import (
    pack_bits,
    shift_bits,
    unpack_bits,
    window_cols,
    window_rows,
)

_WORD_BITS = 64


def label_boundary_packed(labels: Tensor, radius: int) -> Tensor:
    """:func:`label_boundary` as packed bits (:func:`~nobg_metrics.ops.morphology.pack_bits` layout).

    Args:
        labels: :math:`(B, H, W)` integer label map.
        radius: ``d >= 1``.

    Returns:
        :math:`(B, H, M)` int64 words, ``M >= ceil(W / 64)``; bits past pixel ``W - 1`` are unspecified.
    """
    size, height, width = labels.shape
    d = radius
    device = labels.device
    if height <= 2 * d or width <= 2 * d:  # every window reaches outside: every pixel is on a band
        return torch.full((size, height, -(-width // _WORD_BITS)), -1, dtype=torch.int64, device=device)
    # Column separations, laid out so that output column x reads separations x .. x + 2d - 1: the first d
    # entries stand for the image's left edge (and beyond), then L[x] != L[x + 1], then the right edge (and
    # beyond: ones to a whole number of words, so packing needs no copy; past the right edge they change
    # nothing, every window reaching there holds the edge already).
    columns = torch.ones((size, height, _whole_words(width + d)), dtype=torch.bool, device=device)
    torch.ne(labels[..., 1:], labels[..., :-1], out=columns[..., d:d + width - 1])
    horizontal = window_cols(pack_bits([columns]), 2 * d, False)
    # ... and over the window's rows y - d .. y + d (rows outside the image add nothing: the row separations
    # below see the top and bottom edges).
    zero_rows = horizontal.new_zeros((size, d, horizontal.shape[-1]))
    horizontal = window_rows(torch.cat([zero_rows, horizontal, zero_rows], dim=1), 2 * d + 1, False)
    # Row separations: output row y reads separation rows y .. y + 2d - 1 (top edge first, bottom edge last);
    # columns past the image are 0 (whole words again).
    rows = torch.zeros((size, height + 2 * d - 1, _whole_words(width + d)), dtype=torch.bool, device=device)
    rows[:, :d, :width].fill_(True)  # (fill_: an assigned Python scalar would be copied to the device)
    torch.ne(labels[:, 1:], labels[:, :-1], out=rows[:, d:d + height - 1, :width])
    rows[:, d + height - 1, :width].fill_(True)
    vertical = window_rows(pack_bits([rows]), 2 * d, False)
    # ... over the window's columns x - d .. x + d (shifted d bits away from x = 0 first).
    vertical = window_cols(shift_bits(vertical, -d), 2 * d + 1, False)
    return horizontal | vertical


def _whole_words(width: int) -> int:
    """``width`` rounded up to whole 64-pixel words."""
    return -(-width // _WORD_BITS) * _WORD_BITS


def label_boundary(labels: Tensor, radius: int) -> Tensor:
    """Every region's inner boundary band: pixels within chessboard distance ``radius`` of another label or
    of the image border.

    Equals the union over labels ``l`` of the boundary-iou-api's ``mask_to_boundary(labels == l)`` with
    ``d = radius`` (module notes).

    Args:
        labels: :math:`(B, H, W)` integer label map (any integer dtype).
        radius: ``d >= 1``.

    Returns:
        :math:`(B, H, W)` bool.

    Examples:
        >>> labels = torch.tensor([[[1, 1, 1, 1, 2, 2],
        ...                         [1, 1, 1, 1, 2, 2],
        ...                         [1, 1, 1, 1, 2, 2],
        ...                         [1, 1, 1, 1, 2, 2]]])
        >>> label_boundary(labels, 1).int()
        tensor([[[1, 1, 1, 1, 1, 1],
                 [1, 0, 0, 1, 1, 1],
                 [1, 0, 0, 1, 1, 1],
                 [1, 1, 1, 1, 1, 1]]], dtype=torch.int32)
    """
    if not isinstance(labels, Tensor) or labels.ndim != 3 or labels.is_floating_point() or labels.dtype == torch.bool:
        got = f"{labels.dtype} of shape {tuple(labels.shape)}" if isinstance(labels, Tensor) else type(labels).__name__
        raise TypeError(f"`labels` must be an integer tensor of shape (B, H, W), got {got}")
    if isinstance(radius, bool) or not isinstance(radius, int) or radius < 1:
        raise ValueError(f"`radius` must be an int >= 1, got {radius!r}")
    return unpack_bits(label_boundary_packed(labels, radius), labels.shape[-1])
