"""The inner boundary bands of every segment of a label map at once (no mask per segment).

For a label map ``ids`` and a radius ``r``, a pixel is **interior** when its :math:`(2r+1)^2` window lies inside the
image and holds one value only. For each segment ``s`` (the pixels of one value), ``(ids == s) & ~interior`` is then
exactly the boundary-iou-api band ``mask_to_boundary(ids == s)``: ``ids == s`` minus its :math:`(2r+1)^2` erosion with
the outside read as background (``cv2.copyMakeBorder(0)`` + ``cv2.erode`` ``r`` times) — a pixel survives that erosion
iff every window pixel is inside and belongs to ``s``.

The window test is separable, on neighbour equalities rather than on values:

- ``row[y, x]``: the ``2r`` horizontal neighbour pairs ``(x', x' + 1)``, ``x - r <= x' < x + r``, exist and are equal
  (an AND of length ``2r`` over ``ids[:, :, :-1] == ids[:, :, 1:]``, pairs outside the image False);
- ``interior[y, x]``: ``row`` holds on the ``2r + 1`` rows ``y - r .. y + r`` and the ``2r`` vertical pairs between
  them are equal (then every row of the window is constant and all rows share column ``x``'s value).

Each AND over ``L`` consecutive positions is ``ceil(log2 L)`` rounds of "AND with a copy shifted by ``k``" (``k = 1,
2, 4, ...``, the last one overlapping), so the cost is :math:`O(HW \\log r)` for any number of segments.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def run_and(flags: Tensor, length: int, dim: int) -> Tensor:
    """``out[j] = flags[j] & ... & flags[j + length - 1]`` along ``dim`` (``size - length + 1`` outputs,
    ``length >= 1``).

    Examples:
        >>> import torch
        >>> run_and(torch.tensor([True, True, False, True, True, True]), 2, 0)
        tensor([ True, False, False,  True,  True])
    """
    covered = 1
    while covered < length:
        shift = min(covered, length - covered)  # doubling, then one overlapping round to reach ``length``
        size = flags.shape[dim]
        flags = flags.narrow(dim, 0, size - shift) & flags.narrow(dim, shift, size - shift)
        covered += shift
    return flags


def _padded_run_and(flags: Tensor, radius: int, length: int, dim: int) -> Tensor:
    """``run_and`` of ``flags`` padded with ``radius`` False on both sides of ``dim``."""
    pad = [0, 0] * (flags.ndim - 1 - dim % flags.ndim) + [radius, radius]
    return run_and(F.pad(flags, pad, value=False), length, dim)


def segment_interiors(ids: Tensor, radius: int) -> Tensor:
    """Pixels whose :math:`(2r+1)^2` window is inside the image and holds a single value (module doc).

    Args:
        ids: :math:`(B, H, W)` integer label maps.
        radius: ``r >= 1``.

    Returns:
        :math:`(B, H, W)` bool; ``(ids == v) & ~interior`` is the ``mask_to_boundary`` band of segment ``v``.

    Examples:
        >>> import torch
        >>> ids = torch.tensor([[[1, 1, 1, 1, 2], [1, 1, 1, 1, 2], [1, 1, 1, 1, 2], [1, 1, 1, 1, 2]]])
        >>> segment_interiors(ids, 1).int()
        tensor([[[0, 0, 0, 0, 0],
                 [0, 1, 1, 0, 0],
                 [0, 1, 1, 0, 0],
                 [0, 0, 0, 0, 0]]], dtype=torch.int32)
    """
    if radius < 1:
        raise ValueError(f"`radius` must be >= 1, got {radius}")
    horizontal = ids[..., :, :-1] == ids[..., :, 1:]  # (B, H, W - 1)
    vertical = ids[..., :-1, :] == ids[..., 1:, :]  # (B, H - 1, W)
    rows = _padded_run_and(horizontal, radius, 2 * radius, dim=-1)  # (B, H, W): pairs x - r .. x + r - 1
    columns = _padded_run_and(vertical, radius, 2 * radius, dim=-2)  # (B, H, W): pairs y - r .. y + r - 1
    return _padded_run_and(rows, radius, 2 * radius + 1, dim=-2) & columns
