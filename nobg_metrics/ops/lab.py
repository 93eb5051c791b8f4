"""CIE Lab colour conversions and the CIEDE2000 difference as the camouflage measure CCm's reference computes them:
OpenCV's 8-bit ``cv2.cvtColor(rgb, cv2.COLOR_RGB2Lab)`` bit for bit, scikit-image's float64 ``rgb2lab`` and
``deltaE_ciede2000`` (0.25) ported operation by operation. Images are :math:`(B, 3, H, W)` (channels R, G, B).

OpenCV's 8-bit path (``modules/imgproc/src/color_lab.cpp``, ``RGB2Lab_b``) is fixed point::

    R, G, B  = gamma[r], gamma[g], gamma[b]               gamma[v] = round(2040 · sRGB⁻¹(v / 255))   (0 .. 2040)
    fX       = cbrt_tab[descale(C00 R + C01 G + C02 B, 12)]   (and fY, fZ with rows 1, 2)
    C        = round(4096 · M / white)   M = sRGB -> XYZ (D65), white = (0.950456, 1, 1.088754)
    cbrt_tab[i] = round(2^15 · f(i / 2040)),  f(t) = t^(1/3) for t >= 0.008856, else 7.787 t + 16 / 116
    L = descale(296 fY - 1336934, 15);  a = descale(500 (fX - fY) + 128 · 2^15, 15);  b = descale(200 (fY - fZ) + ..)
    descale(x, n) = (x + 2^(n-1)) >> n, saturated to 0 .. 255

OpenCV builds the two tables in float32 ``softfloat`` arithmetic; computed in float64 the cube-root table differs from
it at two entries (49 and 628, one unit each), found by converting all 2^24 colours with both
(``tests/ops/test_lab.py``); :data:`_CBRT_FIXES` holds them.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

_CBRT_FIXES = {49: -1, 628: 1}
"""``cbrt_tab`` entries where OpenCV's float32 table is one off the float64 formula."""

_SRGB_TO_XYZ = ((0.412453, 0.357580, 0.180423), (0.212671, 0.715160, 0.072169), (0.019334, 0.119193, 0.950227))
"""OpenCV's and scikit-image's sRGB -> XYZ (D65) matrix."""

_OPENCV_WHITE = (0.950456, 1.0, 1.088754)
_SKIMAGE_WHITE = (0.95047, 1.0, 1.08883)
"""The D65 white points: OpenCV's, and scikit-image's ``_illuminants["D65"]["2"]``."""


def _srgb_linear(values: Tensor) -> Tensor:
    """The inverse sRGB gamma of values in [0, 1] (float64): ``((v + 0.055) / 1.055)^2.4`` above 0.04045, else
    ``v / 12.92``."""
    return torch.where(values > 0.04045, ((values + 0.055) / 1.055).pow(2.4), values / 12.92)


_OPENCV_XYZ = tuple(
    tuple(round(4096 * value / white) for value in row) for row, white in zip(_SRGB_TO_XYZ, _OPENCV_WHITE)
)
"""OpenCV's 12-bit XYZ coefficients ``round(4096 M / white)`` (rows X, Y, Z; columns R, G, B)."""


def _opencv_tables(device: torch.device) -> tuple[Tensor, Tensor]:
    """OpenCV's 8-bit gamma table (256) and cube-root table (3072), int64."""
    levels = torch.arange(256, dtype=torch.float64, device=device) / 255.0
    gamma = torch.round(2040 * torch.where(levels <= 0.04045, levels / 12.92, ((levels + 0.055) / 1.055).pow(2.4)))
    ratio = torch.arange(3072, dtype=torch.float64, device=device) / 2040.0
    cube_root = torch.where(ratio < 0.008856, ratio * 7.787 + 16 / 116, _cbrt(ratio))
    cube_root = torch.round(32768 * cube_root).long()
    for index, delta in _CBRT_FIXES.items():
        cube_root[index] += delta  # a local table being built, not a state
    return gamma.long(), cube_root


def _cbrt(values: Tensor) -> Tensor:
    """Cube root of non-negative float64 values to about one ulp (``pow`` then one Newton step)."""
    root = values.pow(1 / 3)
    refined = root - (root * root * root - values) / (3 * root * root)
    return torch.where(root > 0, refined, root)


def opencv_rgb_to_lab(image: Tensor) -> Tensor:
    """``cv2.cvtColor(image, cv2.COLOR_RGB2Lab)`` for uint8 images, bit for bit (all 2^24 colours).

    Args:
        image: :math:`(B, 3, H, W)` uint8, channels R, G, B.

    Returns:
        :math:`(B, 3, H, W)` uint8: ``L · 255 / 100``, ``a + 128``, ``b + 128``.

    Examples:
        >>> opencv_rgb_to_lab(torch.tensor([255, 0, 0], dtype=torch.uint8).view(1, 3, 1, 1)).flatten().tolist()
        [136, 208, 195]
    """
    gamma, cube_root = _opencv_tables(image.device)
    linear = gamma[image.long()]  # (B, 3, H, W) in 0 .. 2040
    red, green, blue = linear.unbind(1)
    f_x, f_y, f_z = (cube_root[(red * row[0] + green * row[1] + blue * row[2] + (1 << 11)) >> 12]
                     for row in _OPENCV_XYZ)  # integers: exact

    def descale(value: Tensor) -> Tensor:
        return ((value + (1 << 14)) >> 15).clamp(0, 255)

    lightness = descale(296 * f_y - 1336934)
    red_green = descale(500 * (f_x - f_y) + 128 * 32768)
    yellow_blue = descale(200 * (f_y - f_z) + 128 * 32768)
    return torch.stack([lightness, red_green, yellow_blue], dim=1).to(torch.uint8)


def skimage_rgb_to_lab(image: Tensor) -> Tensor:
    """``skimage.color.rgb2lab(image)`` (D65, 2° observer) of uint8 images, float64.

    ``rgb2xyz``: ``v / 255``, the inverse sRGB gamma, ``xyz = M rgb``; ``xyz2lab``: divided by the white point,
    ``f(t) = cbrt(t)`` above 0.008856, else ``7.787 t + 16 / 116``; ``L = 116 f_y - 16``, ``a = 500 (f_x - f_y)``,
    ``b = 200 (f_y - f_z)``. The same operations in the same order (values may differ from numpy's in the last
    ulp: ``pow`` and ``cbrt`` are not numpy's).

    Args:
        image: :math:`(B, 3, H, W)` uint8.

    Returns:
        :math:`(B, 3, H, W)` float64 ``L, a, b``.

    Examples:
        >>> lab = skimage_rgb_to_lab(torch.tensor([255, 255, 255], dtype=torch.uint8).view(1, 3, 1, 1))
        >>> [round(v, 6) for v in lab.flatten().tolist()]
        [100.0, -0.002455, 0.004653]
    """
    rgb = _srgb_linear(torch.arange(256, dtype=torch.float64, device=image.device) / 255)[image.long()]
    red, green, blue = rgb.unbind(1)
    white = _SKIMAGE_WHITE
    channels = []
    for row, reference in zip(_SRGB_TO_XYZ, white):
        channel = (red * row[0] + green * row[1] + blue * row[2]) / reference
        channels.append(torch.where(channel > 0.008856, _cbrt(channel), 7.787 * channel + 16.0 / 116.0))
    f_x, f_y, f_z = channels
    return torch.stack([116.0 * f_y - 16.0, 500.0 * (f_x - f_y), 200.0 * (f_y - f_z)], dim=1)


def _polar_2pi(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """scikit-image's ``_cart2polar_2pi``: radius and an angle in [0, 2π)."""
    angle = torch.atan2(y, x)
    return torch.hypot(x, y), torch.where(angle < 0.0, angle + 2 * math.pi, angle)


def ciede2000(first: Tensor, second: Tensor) -> Tensor:
    """``skimage.color.deltaE_ciede2000(first, second)`` (kL = kC = kH = 1) of Lab images, float64.

    Args:
        first, second: :math:`(B, 3, H, W)` float64 Lab.

    Returns:
        :math:`(B, H, W)` float64 ΔE₀₀.

    Examples:
        >>> lab = torch.tensor([[50.0, 2.6772, -79.7751], [50.0, 0.0, -82.7485]], dtype=torch.float64)
        >>> round(ciede2000(lab[0].view(1, 3, 1, 1), lab[1].view(1, 3, 1, 1)).item(), 4)  # Sharma et al. pair 1
        2.0425
    """
    l1, a1, b1 = first.unbind(1)
    l2, a2, b2 = second.unbind(1)
    c_bar = 0.5 * (torch.hypot(a1, b1) + torch.hypot(a2, b2))
    c7 = c_bar**7
    scale = 1 + 0.5 * (1 - torch.sqrt(c7 / (c7 + 25**7)))
    c1, h1 = _polar_2pi(a1 * scale, b1)
    c2, h2 = _polar_2pi(a2 * scale, b2)
    l_bar = 0.5 * (l1 + l2)
    tmp = (l_bar - 50) ** 2
    l_term = (l2 - l1) / (1 + 0.015 * tmp / torch.sqrt(20 + tmp))
    c_bar = 0.5 * (c1 + c2)
    c_term = (c2 - c1) / (1 + 0.045 * c_bar)
    h_diff, h_sum, cc = h2 - h1, h1 + h2, c1 * c2
    d_h = torch.where(h_diff > math.pi, h_diff - 2 * math.pi,
                      torch.where(h_diff < -math.pi, h_diff + 2 * math.pi, h_diff))
    d_h = torch.where(cc == 0.0, torch.zeros_like(d_h), d_h)
    dh_term = 2 * torch.sqrt(cc) * torch.sin(d_h / 2)
    wrap = (cc != 0.0) & (h_diff.abs() > math.pi)
    h_bar = torch.where(wrap, torch.where(h_sum < 2 * math.pi, h_sum + 2 * math.pi, h_sum - 2 * math.pi), h_sum)
    h_bar = torch.where(cc == 0.0, h_bar * 2, h_bar) * 0.5
    t = (1 - 0.17 * torch.cos(h_bar - math.radians(30)) + 0.24 * torch.cos(2 * h_bar)
         + 0.32 * torch.cos(3 * h_bar + math.radians(6)) - 0.20 * torch.cos(4 * h_bar - math.radians(63)))
    h_term = dh_term / (1 + 0.015 * c_bar * t)
    c7 = c_bar**7
    rotation = 2 * torch.sqrt(c7 / (c7 + 25**7))
    d_theta = math.radians(30) * torch.exp(-(((torch.rad2deg(h_bar) - 275) / 25) ** 2))
    r_term = -torch.sin(2 * d_theta) * rotation * c_term * h_term
    squared = l_term**2 + c_term**2 + h_term**2 + r_term
    return torch.sqrt(squared.clamp(min=0))
