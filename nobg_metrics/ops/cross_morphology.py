"""Erosion and dilation with the 3×3 cross (``skimage.morphology.disk(1)``), ``iterations=k``, with OpenCV's
default borders.

Reference: ``cv2.erode(mask, disk(1), iterations=k)`` and ``cv2.dilate(mask, disk(1), iterations=k)``
(``BORDER_CONSTANT`` with ``morphologyDefaultBorderValue()``): for erosion the outside reads as
**foreground** (the image edge does not erode), for dilation as background. ``k`` iterations of the
cross are the L1 (diamond) ball of radius ``k``:

    erode(x, k)[p]  = AND of x[q] over pixels q inside the image with |q - p|_1 <= k
    dilate(x, k)[p] = OR  of x[q] over the same q

computed as ``k`` rounds of "combine with the four 4-neighbours" (each round one vectorised pass over the
batch; no host reads). This differs from :mod:`nobg_metrics.ops.morphology`, whose square erosion reads
the outside as background (the boundary-iou-api rule).
"""

from __future__ import annotations

import torch
from torch import Tensor


def _check(mask: Tensor, iterations: int) -> None:
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"`mask` must be a bool tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    if mask.ndim < 2:
        raise ValueError(f"`mask` must have shape (..., H, W), got {tuple(mask.shape)}")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"`iterations` must be an int >= 0, got {iterations!r}")


def _cross_step(mask: Tensor, erode: bool) -> Tensor:
    """One round: each pixel combined (AND for erosion, OR for dilation) with its in-image 4-neighbours."""
    out = mask.clone()
    if erode:
        out[..., 1:, :] &= mask[..., :-1, :]
        out[..., :-1, :] &= mask[..., 1:, :]
        out[..., :, 1:] &= mask[..., :, :-1]
        out[..., :, :-1] &= mask[..., :, 1:]
    else:
        out[..., 1:, :] |= mask[..., :-1, :]
        out[..., :-1, :] |= mask[..., 1:, :]
        out[..., :, 1:] |= mask[..., :, :-1]
        out[..., :, :-1] |= mask[..., :, 1:]
    return out


def _rounds(mask: Tensor, iterations: int, erode: bool) -> Tensor:
    """``iterations`` cross steps (a bounded number of vectorised rounds) on a copy of ``mask``."""
    _check(mask, iterations)
    out = mask.clone()
    for _ in range(iterations):
        out = _cross_step(out, erode=erode)
    return out


def cross_erode(mask: Tensor, iterations: int = 1) -> Tensor:
    """``cv2.erode(mask, disk(1), iterations=iterations)``: the image edge does not erode.

    Args:
        mask: :math:`(..., H, W)` bool.
        iterations: number of rounds ``k >= 0``.

    Returns:
        same shape, bool (a new tensor).

    Examples:
        >>> cross_erode(torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)).int()
        tensor([[1, 1, 0],
                [1, 0, 0],
                [1, 1, 0]], dtype=torch.int32)
    """
    return _rounds(mask, iterations, erode=True)


def cross_dilate(mask: Tensor, iterations: int = 1) -> Tensor:
    """``cv2.dilate(mask, disk(1), iterations=iterations)``: the outside is background.

    Args:
        mask: :math:`(..., H, W)` bool.
        iterations: number of rounds ``k >= 0``.

    Returns:
        same shape, bool (a new tensor).

    Examples:
        >>> cross_dilate(torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=torch.bool)).int()
        tensor([[0, 1, 0],
                [1, 1, 1],
                [0, 1, 0]], dtype=torch.int32)
    """
    return _rounds(mask, iterations, erode=False)
