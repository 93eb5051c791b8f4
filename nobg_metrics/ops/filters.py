"""Image filters of the matting gradient error: DIM's ``gaussgradient`` and a zero-padded 3x3 Sobel.

``gaussgradient(IM, sigma)`` (DIM MATLAB evaluation, after Guanglei Xiong's ``gaussgradient.m``)::

    halfsize = ceil(sigma * sqrt(-2 * log(sqrt(2*pi) * sigma * 0.01)))      % 4 for sigma = 1.4
    hx(i, j) = gauss(i - halfsize - 1) * dgauss(j - halfsize - 1)           % 9 x 9
    gauss(x) = exp(-x^2 / (2 sigma^2)) / (sigma sqrt(2 pi)),  dgauss(x) = -x gauss(x) / sigma^2
    hx = hx / sqrt(sum(sum(abs(hx) .* abs(hx))));  hy = hx'
    gx = imfilter(IM, hx, 'replicate', 'conv');  gy = imfilter(IM, hy, 'replicate', 'conv')

``hx`` is the outer product of two 1-D kernels, so it is applied as two 9-tap passes (row, then
column) on the replicate-padded image — the same sum, reordered (float64: ~1e-16 relative); each pass is
a banded matrix product (:mod:`nobg_metrics.ops.banded`, ~3x faster than nine shifted multiply-adds).
``'conv'`` flips the kernel: we correlate with the flipped 1-D kernels. Everything is batched over (B, H, W).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from nobg_metrics.ops import banded


def _gaussgradient_taps(sigma: float) -> tuple[list[float], list[float], float]:
    """``gauss``, ``dgauss`` (Python floats, offsets ``-h..h``) and ``norm = ||gauss|| * ||dgauss||``."""
    halfsize = math.ceil(sigma * math.sqrt(-2 * math.log(math.sqrt(2 * math.pi) * sigma * 1e-2)))
    offsets = range(-halfsize, halfsize + 1)
    gauss = [math.exp(-x**2 / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi)) for x in offsets]
    dgauss = [-x * g / sigma**2 for x, g in zip(offsets, gauss)]
    # sqrt(sum(sum(hx.^2))) of hx = outer(gauss, dgauss)
    norm = math.sqrt(sum(g * g for g in gauss) * sum(d * d for d in dgauss))
    return gauss, dgauss, norm


def gaussgradient_kernels(sigma: float = 1.4, *, dtype: torch.dtype = torch.float64,
                          device: torch.device | str | None = None) -> tuple[Tensor, Tensor, float]:
    """The 1-D factors of ``gaussgradient``'s kernel: ``hx = outer(gauss, dgauss) / norm``.

    Args:
        sigma: the Gaussian's standard deviation (DIM uses 1.4).

    Returns:
        ``(gauss, dgauss, norm)``: two :math:`(2h+1,)` tensors (h = ``halfsize``) and the float
        ``sqrt(sum(hx^2)) = ||gauss|| * ||dgauss||``.

    Examples:
        >>> gauss, dgauss, norm = gaussgradient_kernels(1.4)
        >>> gauss.shape, round(float(dgauss[0]), 6)
        (torch.Size([9]), 0.009816)
    """
    gauss, dgauss, norm = _gaussgradient_taps(sigma)
    return (torch.tensor(gauss, dtype=dtype, device=device), torch.tensor(dgauss, dtype=dtype, device=device),
            norm)


def gaussian_gradient(image: Tensor, sigma: float = 1.4) -> tuple[Tensor, Tensor]:
    """``[gx, gy] = gaussgradient(image, sigma)``: replicate borders, convolution (kernel flipped).

    Args:
        image: :math:`(B, H, W)` float (float64 recommended: the reference filters in double).

    Returns:
        ``(gx, gy)``, each :math:`(B, H, W)`, same dtype as ``image``.

    Examples:
        >>> ramp = torch.arange(21.0, dtype=torch.float64).repeat(9, 1)[None]   # +1 per column
        >>> gx, gy = gaussian_gradient(ramp)
        >>> round(float(gx[0, 4, 10]), 6), bool(gy.abs().max() < 1e-12)
        (9.683831, True)
    """
    half = len(_gaussgradient_taps(sigma)[0]) // 2
    padded = F.pad(image.unsqueeze(1), (half, half, half, half), mode="replicate")[:, 0]  # (B, H+2h, W+2h)
    return gaussian_gradient_padded(padded, sigma)


def gaussian_gradient_padded(padded: Tensor, sigma: float = 1.4) -> tuple[Tensor, Tensor]:
    """:func:`gaussian_gradient` of an image already padded by ``halfsize`` on every side.

    Args:
        padded: :math:`(B, H + 2h, W + 2h)` float.

    Returns:
        ``(gx, gy)``, each :math:`(B, H, W)` (views into one working buffer).
    """
    return gaussian_gradient_tiled(banded.tiled(padded), sigma)


def gaussian_gradient_tiled(padded: banded.Tiled, sigma: float = 1.4) -> tuple[Tensor, Tensor]:
    """:func:`gaussian_gradient_padded` of a map in the tile layout (its buffer is reused).

    The four 9-tap passes run as banded matrix products (:mod:`nobg_metrics.ops.banded`).

    Args:
        padded: :class:`~nobg_metrics.ops.banded.Tiled` map of valid size :math:`(B, H + 2h, W + 2h)`, float;
            overwritten.

    Returns:
        ``(gx, gy)``, each a :math:`(B, H, W)` view.
    """
    gauss, dgauss, norm = _gaussgradient_taps(sigma)  # host constants: no device round trip
    # 'conv' flips the kernel: correlate with the reversed taps (gauss is symmetric, dgauss odd); hx / norm
    # is applied to the dgauss factor (the same product, rounded once more or less: ~1e-16 relative)
    derivative = [tap / norm for tap in dgauss[::-1]]
    smooth_x = banded.correlate_rows(padded, gauss[::-1])
    deriv_x = banded.correlate_rows(padded, derivative)
    # each buffer is reused once it is dead: fresh memory costs page faults on every call
    gx = banded.correlate_columns(deriv_x, gauss[::-1], out=padded.buffer)
    gy = banded.correlate_columns(smooth_x, derivative, out=deriv_x.buffer)
    return gx.valid(), gy.valid()


def _correlate(image: Tensor, taps: list[float], dim: int, out: Tensor | None = None) -> Tensor:
    """'valid' 1-D correlation along ``dim`` as a sum of shifted slices: :math:`(B, H, W)` shrinks by len-1.

    ``out`` (optional) receives the result; it must not overlap ``image``.
    """
    out_len = image.shape[dim] - len(taps) + 1
    out = torch.mul(image.narrow(dim, 0, out_len), taps[0], out=out)
    for shift, tap in enumerate(taps[1:], start=1):
        if tap != 0.0:
            out.add_(image.narrow(dim, shift, out_len), alpha=tap)
    return out


def sobel_magnitude(image: Tensor) -> Tensor:
    """Gradient magnitude ``sqrt(sx^2 + sy^2)`` of 3x3 Sobel filters with zero padding.

    ``sx = [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]`` (correlation), ``sy = sx^T``; the sign convention
    does not affect the magnitude.

    Args:
        image: :math:`(B, H, W)` float.

    Returns:
        :math:`(B, H, W)` magnitude, same dtype.

    Examples:
        >>> sobel_magnitude(torch.ones(1, 3, 3, dtype=torch.float64))[0, 1]
        tensor([4., 0., 4.], dtype=torch.float64)
    """
    smooth, diff = [1.0, 2.0, 1.0], [-1.0, 0.0, 1.0]  # host constants: no device round trip
    padded = F.pad(image, (1, 1, 1, 1))  # (B, H+2, W+2), zeros
    sx = _correlate(_correlate(padded, diff, dim=-1), smooth, dim=-2)
    sy = _correlate(_correlate(padded, smooth, dim=-1), diff, dim=-2)
    return torch.sqrt(sx.square_() + sy.square_())
