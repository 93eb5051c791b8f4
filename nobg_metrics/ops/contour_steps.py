"""What both forms of :func:`nobg_metrics.ops.contours.find_contours` share: OpenCV's eight directions, the
next-direction table of its border walk, and the result type :class:`Contours`."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import Tensor

DIRECTIONS = ((0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1), (1, 0), (1, 1))
"""OpenCV's 3x3 deltas, ``s = 0..7``: E, NE, N, NW, W, SW, S, SE as (row, col)."""


@dataclass
class Contours:
    """The contours of a batch as one list of points: OpenCV's ``RETR_TREE`` order per image, images one after the
    other, every real point before any padding. Both forms of :func:`~nobg_metrics.ops.contours.find_contours`
    return it with the same values on the real points; they differ only in the list's length ``S``.

    Attributes:
        points: :math:`(S, 2)` int64 ``(x, y)`` = (column, row) of every point (padding: ``(0, 0)``).
        real: :math:`(S,)` bool, False on the padding. ``"data_sized"``: ``S`` is the number of points, no padding;
            ``"fixed"``: ``S = 8 B (H+2) (W+2)``, a bound of it fixed by the frame.
        image: :math:`(S,)` int64 the image of each point (non-decreasing; padding: ``B``).
        contour: :math:`(S,)` int64 the index of each point's contour in the batch's list, ``0 .. K-1``
            (non-decreasing; padding: -1).
        hole: :math:`(S,)` bool, the point's contour is a hole border (padding: False).
        component: :math:`(S,)` int64 the label of the point's 8-connected foreground component, numbered as
            ``skimage.measure.label(mask[b], connectivity=2)`` numbers them (``1 .. n`` per image in raster order of
            their first pixel; padding: 0).
        components: :math:`(B,)` int64 the number of 8-connected foreground components of each image.
    """

    points: Tensor
    real: Tensor
    image: Tensor
    contour: Tensor
    hole: Tensor
    component: Tensor
    components: Tensor


@functools.lru_cache(maxsize=8)
def next_direction_table(device: torch.device) -> Tensor:
    """(256, 8) int64: for an occupancy code (bit s = neighbour s is foreground) and a back direction b, the
    first foreground direction among b+1, ..., b+8 (mod 8); -1 for code 0.

    Examples:
        >>> table = next_direction_table(torch.device("cpu"))
        >>> table[0b00000101, 0].item(), table[0b00000101, 2].item(), table[0, 3].item()  # E and N set
        (2, 0, -1)
    """
    code = torch.arange(256, device=device).unsqueeze(1)
    back = torch.arange(8, device=device).unsqueeze(0)
    table = torch.full((256, 8), -1, dtype=torch.int64, device=device)
    for step in range(8, 0, -1):  # 8 fixed rounds over the whole table: the smallest step wins
        direction = (back + step) % 8
        table = torch.where(((code >> direction) & 1) == 1, direction, table)
    return table


def first_in_order(occupancy: Tensor, order: tuple[int, ...]) -> Tensor:
    """The first direction of ``order`` whose neighbour is foreground (``occupancy``: (K, 8) bool); -1 if none.

    Examples:
        >>> occupancy = torch.tensor([[True, False, True, False, False, False, False, False]])  # E and N set
        >>> first_in_order(occupancy, (3, 2, 1, 0)).tolist()
        [2]
    """
    out = torch.full((occupancy.shape[0],), -1, dtype=torch.int64, device=occupancy.device)
    for direction in reversed(order):
        out = torch.where(occupancy[:, direction], direction, out)
    return out
