"""The Gaussian context filters of the context measures Cm and CCm (Wang et al. 2025; PySODMetrics 1.6.2
``ContextMeasure``): the per-image kernel from the gt's coordinate covariance, and OpenCV's ``filter2D``
(correlation, reflect-101 border) of the prediction and the gt with it, by float32 FFTs (:data:`FFT_DTYPE`; float64
on request).

What the measures need of the two filters (pred >= 0, ``K`` each image's kernel, ``ext`` the reflect-101
extension, ``zero`` the zero extension)::

    forward sum  Σ_i pred_i · filter2D(gt)_i = Σ_{u in ext domain} ext(gt)_u · (K ⋆ zero(pred))_u      (adjoint)
    reverse map  R = filter2D(pred) = K ⋆ ext(pred)

(the kernel is centrally symmetric, ``K[-a, -b] = K[a, b]`` exactly, so correlating with it is convolving with it).
:func:`context_filters` gets both from **one real FFT pair** of the zero-padded prediction: ``M = K ⋆ zero(pred)``
on the image grown by the kernel half-size ρ on each side gives the forward sum against the reflect-101 extended gt,
and equals ``R`` on every pixel at least ρ from the border; ``R`` on the four border bands comes from small FFTs of
reflect-101 slabs (3ρ wide). Small images (a side ``<= 2ρ``) take :func:`correlate_reflect_101`, which filters the
two maps of each image directly (one complex FFT of the reflect-padded ``gt + i·pred``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

EPS = torch.finfo(torch.float64).eps
"""``np.spacing(1)``, the reference's epsilon."""

FFT_DTYPE = torch.float32
"""The filters' FFTs run in float32, as the reference's forward filter (``filter2D(gt.astype(float32), CV_32F)``, a
float32 DFT): relative rounding ~1e-7 of the filtered maps, Cm within 1e-6 of the reference (docs/context_measure.md
"Parity"); inputs, kernels and every sum stay float64."""

_SINGULAR = 1e-12
"""A scaled covariance with ``det <= _SINGULAR * Σ'_rr Σ'_cc`` is singular (collinear gt pixels)."""


def kernel_grid_radius(alpha: float) -> int:
    """Half-size of the fixed kernel grid: every per-image kernel (``round(3 α σ_x / σ) <= round(3 α)``, 1 for the
    degenerate gt) fits, with one spare tap against a ratio rounded above 1.

    Examples:
        >>> kernel_grid_radius(6.0)
        19
    """
    return max(1, round(3 * alpha) + 1)


def _fft_size(length: int) -> int:
    """The smallest 7-smooth integer ``>= length`` (fast FFT sizes for pocketfft and cuFFT)."""
    size = length
    while True:
        rest = size
        for prime in (2, 3, 5, 7):
            while rest % prime == 0:
                rest //= prime
        if rest == 1:
            return size
        size += 1


def _gt_covariance(gt: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``np.cov(argwhere(gt), rowvar=False)`` per image from exact integer marginals: the :math:`(B,)` float64
    entries ``(Σ_rr, Σ_rc, Σ_cc)`` and the :math:`(B,)` float64 gt pixel counts.

    Centred sums as numpy's (deviations from the float64 mean, then ``* (1 / (n - 1))``), from per-row and per-column
    counts and the per-row sums of column indices (integers below 2^53: exact in float64 in any order):
    ``Σ (r - m_r)(c - m_c) = Σ_r (r - m_r)(S_r - m_c n_r)``.
    """
    _, height, width = gt.shape
    # a float32 0 / 1 map gives exact marginals while every partial sum is an integer below 2^24
    exact32 = gt.dtype == torch.float32 and width * max(width - 1, 1) // 2 < 1 << 24 and max(height, width) < 1 << 24
    mask = gt if exact32 else gt.double()  # no copy for a float64 (or small float32) 0 / 1 map
    rows = torch.arange(height, device=gt.device, dtype=torch.float64)
    cols = torch.arange(width, device=gt.device, dtype=torch.float64)
    per_row, per_col = mask.sum(dim=2).double(), mask.sum(dim=1).double()  # (B, H), (B, W)
    row_col_sums = (mask @ cols.to(mask.dtype)).double()  # S_r = Σ_c gt[r, c] c
    count = per_row.sum(dim=1)
    n = count.clamp(min=1)
    mean_r, mean_c = (per_row * rows).sum(dim=1) / n, (per_col * cols).sum(dim=1) / n
    dev_r, dev_c = rows - mean_r[:, None], cols - mean_c[:, None]
    scale = 1 / (n - 1).clamp(min=1)
    cov_rr = (per_row * dev_r**2).sum(dim=1) * scale
    cov_cc = (per_col * dev_c**2).sum(dim=1) * scale
    cov_rc = (dev_r * (row_col_sums - mean_c[:, None] * per_row)).sum(dim=1) * scale
    return cov_rr, cov_rc, cov_cc, count


def context_kernels(gt: Tensor, alpha: float, radius: int) -> Tensor:
    """The reference's per-image Gaussian kernels on a :math:`(B, 2r + 1, 2r + 1)` float64 grid (zero outside each
    kernel's ``(2 x_dis + 1) x (2 y_dis + 1)``), rows = image rows.

    Examples:
        >>> gt = torch.zeros(1, 9, 9, dtype=torch.bool); gt[0, 4, 4] = True  # one pixel: Σ' = diag(0.25, 0.25)
        >>> kernel = context_kernels(gt, 6.0, 2)[0]
        >>> round(kernel[2, 2].item(), 6), kernel[0].abs().sum().item(), round(kernel.sum().item(), 12)
        (0.619347, 0.0, 1.0)
    """
    cov_rr, cov_rc, cov_cc, count = _gt_covariance(gt)
    # if cov_matrix[0, 0] == 0: cov_matrix[0, 0] = EPS  (and [1, 1])
    cov_rr = torch.where(cov_rr == 0, torch.full_like(cov_rr, EPS), cov_rr)
    cov_cc = torch.where(cov_cc == 0, torch.full_like(cov_cc, EPS), cov_cc)
    sigma_x, sigma_y, total = cov_rr.sqrt(), cov_cc.sqrt(), (cov_rr + cov_cc).sqrt()
    # std_cov_matrix = alpha**2 * cov_matrix / (total_sigma**2);  x_dis = round(3 * (alpha * sigma_x / total_sigma))
    square = total**2
    a, b, d = alpha**2 * cov_rr / square, alpha**2 * cov_rc / square, alpha**2 * cov_cc / square
    x_dis, y_dis = torch.round(3 * (alpha * sigma_x / total)), torch.round(3 * (alpha * sigma_y / total))
    # <= 1 gt pixel: return np.diag([0.25, 0.25]), 1, 1. Collinear gt pixels (a singular covariance, to rounding):
    # the reference raises LinAlgError (or inverts a rounding residue); they get the same fallback here.
    few = (count <= 1) | (a * d - b * b <= _SINGULAR * a * d)
    a, d = torch.where(few, 0.25, a), torch.where(few, 0.25, d)
    b = torch.where(few, 0.0, b)
    x_dis, y_dis = torch.where(few, 1.0, x_dis), torch.where(few, 1.0, y_dis)
    det = a * d - b * b
    inv_rr, inv_rc, inv_cc = (d / det)[:, None, None], (-b / det)[:, None, None], (a / det)[:, None, None]
    offsets = torch.arange(-radius, radius + 1, device=gt.device, dtype=torch.float64)
    x, y = offsets[:, None], offsets[None, :]
    # exp_term = einsum("...i,ij,...j->...", Z, inv_sigma, Z);  exp(-0.5 * exp_term) / (2 * pi * sqrt(det_sigma))
    quadratic = (x * inv_rr + y * inv_rc) * x + (x * inv_rc + y * inv_cc) * y
    kernel = torch.exp(-0.5 * quadratic) / (2 * math.pi * det.sqrt())[:, None, None]
    inside = (x.abs() <= x_dis[:, None, None]) & (y.abs() <= y_dis[:, None, None])
    kernel = torch.where(inside, kernel, torch.zeros_like(kernel))
    return kernel / kernel.sum(dim=(1, 2), keepdim=True)


def _reflect_positions(positions: Tensor, length: int) -> Tensor:
    """Source index of each position (any integers) under OpenCV's ``BORDER_REFLECT_101`` of a side of ``length``
    (``gfedcb|abcdefgh|gfedcba``, reflected again as often as needed)."""
    if length == 1:
        return torch.zeros_like(positions)
    period = 2 * (length - 1)
    folded = positions.remainder(period)
    return torch.where(folded >= length, period - folded, folded)


def _reflect_101(length: int, pad: int, device: torch.device) -> Tensor:
    """Source index of each of ``length + 2 pad`` positions under OpenCV's ``BORDER_REFLECT_101`` (any ``pad``)."""
    return _reflect_positions(torch.arange(-pad, length + pad, device=device), length)


STRIP_ELEMENTS = (1 << 16, 1 << 19)
"""Bounds on the padded grid elements (over the batch) one FFT of :func:`correlate_reflect_101` takes: a batch
whose reflect-padded grid ``B (H + 2r) (W + 2r)`` exceeds ``max(2 B H W, low)`` (or ``high``) is filtered in strips
along its longer side. A thin image (a side ``<= 2r``) grows by ``2r`` pixels across: a 1 x 10^6 image would be a
39 x 10^6 complex grid (and as large a kernel spectrum: 3.7 GB); in strips its buffers stay within twice its
pixels, and its time linear. Images whose grid fits are one strip (the same FFT, the same bits)."""


def _strip_starts(length: int, across: int, radius: int, batch: int) -> tuple[int, int]:
    """``(step, fft_length)`` of the strips along a side of ``length`` outputs whose padded grid is ``across`` wide:
    each strip holds ``step`` outputs (the whole side when the grid fits :data:`STRIP_ELEMENTS`)."""
    low, high = STRIP_ELEMENTS
    budget = min(max(2 * batch * length * max(1, across - 2 * radius), low), high)
    if batch * across * (length + 2 * radius) <= budget:
        return length, _fft_size(length + 2 * radius)
    step = max(1, budget // (batch * across) - 2 * radius)
    return step, _fft_size(step + 2 * radius)


def correlate_reflect_101(first: Tensor, second: Tensor, kernels: Tensor) -> tuple[Tensor, Tensor]:
    """``cv2.filter2D(map, -1, kernel)`` (correlation, reflect-101 border, anchor at the centre) of two maps per image,
    in float64 by one complex FFT: ``first + i second`` (the kernel is real, so the two correlations are the real and
    imaginary parts). A grid larger than :data:`STRIP_ELEMENTS` allows is filtered in strips along the longer side
    (each strip reads its outputs' windows, reflect-101 indexed: the same correlation).

    Args:
        first, second: :math:`(B, H, W)` float64, filtered by each image's kernel.
        kernels: :math:`(B, 2r + 1, 2r + 1)` float64.

    Returns:
        the two :math:`(B, H, W)` float64 correlations.

    Examples:
        >>> image = torch.arange(12, dtype=torch.float64).view(1, 3, 4)
        >>> box = torch.full((1, 3, 3), 1 / 9, dtype=torch.float64)
        >>> [round(v, 6) for v in correlate_reflect_101(image, image, box)[0][0, 0].tolist()]  # cv2.filter2D's
        [3.333333, 3.666667, 4.666667, 5.0]
    """
    batch, height, width = first.shape
    radius = kernels.shape[-1] // 2
    step, fft_cols = _strip_starts(max(height, width), min(height, width) + 2 * radius, radius, batch)
    if step >= max(height, width):
        return _correlate_whole(first, second, kernels)
    if height > width:  # strips of columns of the transposed maps: correlating with K on them is K^T on these
        relevance, smoothed = correlate_reflect_101(first.transpose(1, 2), second.transpose(1, 2),
                                                    kernels.transpose(1, 2))
        return relevance.transpose(1, 2), smoothed.transpose(1, 2)
    fft_rows = _fft_size(height + 2 * radius)
    # out[i, j] = Σ_ab K[a, b] padded[i + a, j + b]: no wrap-around for i < H and j inside a strip
    kernel_spectrum = torch.fft.fft(torch.fft.fft(kernels, n=fft_cols, dim=-1), n=fft_rows, dim=-2).conj()
    device = first.device
    # both maps as one complex map, reflect-101 padded once along the rows: each strip is a slice of it
    maps = torch.complex(first, second).index_select(2, _reflect_101(width, radius, device))
    rows = _reflect_101(height, radius, device)  # every strip takes the whole padded height
    outputs = torch.empty((batch, height, width), dtype=torch.complex128, device=device)
    for start in range(0, width, step):  # a bounded number of vectorised strips: W / step
        stop = min(width, start + step)
        padded = maps[:, :, start:stop + 2 * radius].index_select(1, rows)
        spectrum = torch.fft.fft2(padded, s=(fft_rows, fft_cols))
        del padded
        out = torch.fft.ifft2(spectrum.mul_(kernel_spectrum), s=(fft_rows, fft_cols))
        del spectrum
        outputs[:, :, start:stop] = out[:, :height, : stop - start]
    return outputs.real, outputs.imag


def _correlate_whole(first: Tensor, second: Tensor, kernels: Tensor) -> tuple[Tensor, Tensor]:
    """:func:`correlate_reflect_101` in one FFT of the whole reflect-padded grid."""
    _, height, width = first.shape
    radius = kernels.shape[-1] // 2
    maps = torch.stack([first, second], dim=1)
    if radius < height and radius < width:  # torch's "reflect" is reflect-101 (the edge pixel not repeated)
        maps = torch.nn.functional.pad(maps, (radius,) * 4, mode="reflect")
    else:  # kernels wider than the image: reflected again, as OpenCV's borderInterpolate does
        maps = maps.index_select(2, _reflect_101(height, radius, first.device)).index_select(
            3, _reflect_101(width, radius, first.device))
    padded = torch.complex(maps[:, 0], maps[:, 1])
    fft_rows, fft_cols = _fft_size(height + 2 * radius), _fft_size(width + 2 * radius)
    # out[i, j] = Σ_ab K[a, b] padded[i + a, j + b]: no wrap-around for i < H, j < W
    spectrum = torch.fft.fft2(padded, s=(fft_rows, fft_cols))
    kernel_spectrum = torch.fft.fft(torch.fft.fft(kernels, n=fft_cols, dim=-1), n=fft_rows, dim=-2)  # 2r + 1 rows first
    out = torch.fft.ifft2(spectrum * kernel_spectrum.conj(), s=(fft_rows, fft_cols))[:, :height, :width]
    return out.real, out.imag


def _centred_spectra(kernels: Tensor, rows: int, cols: int, dtype: torch.dtype) -> Tensor:
    """The DFT of each kernel centred at the origin (``K[a, b]`` at ``(a mod rows, b mod cols)``) on the
    ``(rows, cols // 2 + 1)`` half grid, each value twice (``(B, rows, 2 (cols // 2 + 1))`` in ``dtype``: the factor
    of the real and imaginary parts of ``view_as_real(spectrum)``, one contiguous product; the angles and the
    column sums in float64, the last product in ``dtype``). Real, as the kernel is centrally symmetric, and row
    ``-a`` gives what row ``a`` gives::

        F = Σ_ab K[a, b] cos(θ a + φ b) = Σ_(a >= 0) w_a (cos(θ a) Σ_b K[a, b] cos(φ b) - sin(θ a) Σ_b K[a, b] sin(φ b))

    (``w_0 = 1``, else 2): two small products and one ``(rows, 2 (ρ + 1)) @ (2 (ρ + 1), cols // 2 + 1)`` matrix
    product, the angles from exact integer residues ``k a mod n``.
    """
    radius = kernels.shape[-1] // 2
    device = kernels.device
    taps = torch.arange(-radius, radius + 1, device=device)

    def cos_sin(length: int, count: int, offsets: Tensor) -> tuple[Tensor, Tensor]:
        residue = (torch.arange(count, device=device)[:, None] * offsets).remainder(length)
        angle = residue.double() * (2 * math.pi / length)
        return angle.cos(), angle.sin()

    cos_rows, sin_rows = cos_sin(rows, rows, taps[radius:])  # (rows, ρ + 1)
    cos_cols, sin_cols = cos_sin(cols, cols // 2 + 1, taps)  # (cols // 2 + 1, 2ρ + 1)
    half = kernels[:, radius:] * torch.full((radius + 1, 1), 2.0, dtype=kernels.dtype, device=device).index_fill(
        0, torch.zeros(1, dtype=torch.int64, device=device), 1.0)  # w_a K[a, b], a = 0 .. ρ
    by_cols = torch.cat([half @ cos_cols.T, half @ sin_cols.T], dim=-2)  # (B, 2 (ρ + 1), cols // 2 + 1)
    twice = by_cols.to(dtype).repeat_interleave(2, dim=-1)  # (B, 2 (ρ + 1), 2 (cols // 2 + 1)): re, im factors
    return torch.cat([cos_rows, -sin_rows], dim=-1).to(dtype) @ twice


def _valid_correlation(maps: Tensor, kernels: Tensor, fft_dtype: torch.dtype) -> Tensor:
    """``out[..., i, j] = Σ_ab K[a, b] maps[..., i + ρ + a, j + ρ + b]`` where the kernel lies inside the maps, by a
    real FFT (in ``fft_dtype``) of the maps' own (7-smooth) size:
    :math:`(B, S, L_1, L_2)` -> :math:`(B, S, L_1 - 2ρ, L_2 - 2ρ)` float64. ``K`` is centrally symmetric, so this is
    the valid part of the convolution with ``K`` at the origin."""
    length1, length2 = maps.shape[-2:]
    two = kernels.shape[-1] - 1
    rows, cols = _fft_size(length1), _fft_size(length2)
    kernel_spectra = torch.fft.fft(torch.fft.rfft(kernels.to(fft_dtype), n=cols, dim=-1), n=rows, dim=-2)  # 2ρ + 1 rows
    spectrum = torch.fft.rfft2(maps.to(fft_dtype), s=(rows, cols))
    spectrum.mul_(kernel_spectra[:, None])  # a local tensor
    return torch.fft.irfft2(spectrum, s=(rows, cols))[..., two:length1, two:length2]


def masked_sum(values: Tensor, mask: Tensor) -> Tensor:
    """``Σ values · mask`` per image of :math:`(B, H, W)` maps (``mask`` 0 / 1 of ``values``' dtype; ``values`` may be
    a strided view): float32 row sums (pairwise: ~1e-9 relative), added in float64."""
    return (values * mask).sum(dim=-1).double().sum(dim=-1)


def context_filters(pred: Tensor, target: Tensor, kernels: Tensor, *, levels: tuple[Tensor, Tensor] | None = None,
                    fft_dtype: torch.dtype = FFT_DTYPE) -> tuple[Tensor, Tensor]:
    """The two filters of the context measure per image: ``Σ pred · filter2D(gt, K)`` and ``filter2D(pred, K)``
    (OpenCV's correlation, reflect-101 border), by one real FFT pair (see the module notes).

    Args:
        pred: :math:`(B, H, W)` float64, ``>= 0``; or uint8 levels with ``levels``.
        levels: ``(scale, origin)``, :math:`(B,)` float64 (``origin`` an integer level): ``pred`` holds uint8
            levels ``l`` standing for ``(l - origin) · scale`` (the uint8 protocol's values are affine in the level;
            the origin level is exactly 0), converted straight into the FFT's grid (no float64 map).
        target: :math:`(B, H, W)` the gt as 0 / 1, float32 or float64.
        kernels: :math:`(B, 2ρ + 1, 2ρ + 1)` float64, centrally symmetric (:func:`context_kernels`).
        fft_dtype: the FFTs' real dtype (:data:`FFT_DTYPE`, float32; float64 gives the exact filters to ~1e-15).

    Returns:
        the :math:`(B,)` float64 forward sums and the :math:`(B, H, W)` filtered predictions in ``fft_dtype`` (float64
        for images with a side ``<= 2ρ``), possibly a strided view of a local tensor (the caller may write it).

    Examples:
        >>> target = torch.zeros(1, 8, 9, dtype=torch.float64); target[0, 2:6, 3:7] = 1
        >>> forward, smoothed = context_filters(target * 0.5, target, torch.full((1, 3, 3), 1 / 9, dtype=torch.float64))
        >>> round(forward.item(), 6), round(smoothed[0, 1, 3].item(), 6)  # Σ pred · box(gt); box(pred) at (1, 3)
        (5.555556, 0.111111)
    """
    batch, height, width = pred.shape
    radius = kernels.shape[-1] // 2

    def values(maps: Tensor, dtype: torch.dtype) -> Tensor:  # the prediction's values of (a selection of) ``pred``
        if levels is None:
            return maps.to(dtype)
        scale, origin = (v.to(dtype).view(-1, *[1] * (maps.ndim - 1)) for v in levels)
        return (maps.to(dtype) - origin) * scale

    if height <= 2 * radius or width <= 2 * radius:  # the bands would cover the image: filter both maps directly
        pred = values(pred, torch.float64)
        relevance, smoothed = correlate_reflect_101(target.double(), pred, kernels)
        return (relevance * pred).sum(dim=(-2, -1)), smoothed
    device, two = pred.device, 2 * radius
    # M = K ⋆ zero(pred) on [-ρ, H + ρ) x [-ρ, W + ρ): pred at (ρ, ρ) of a zero grid >= H + 2ρ, convolved with the
    # centred kernel (no wrap-around reaches the prediction); only the margins are zeroed
    rows, cols = _fft_size(height + two), _fft_size(width + two)
    grid = pred.new_empty((batch, rows, cols), dtype=fft_dtype)
    for margin in (grid[:, :radius], grid[:, radius + height :], grid[:, radius : radius + height, :radius],
                   grid[:, radius : radius + height, radius + width :]):
        margin.zero_()
    inside = grid[:, radius : radius + height, radius : radius + width]
    inside.copy_(pred)
    if levels is not None:  # (level - origin) · scale, in place (the subtraction is exact)
        scale, origin = (v.to(fft_dtype)[:, None, None] for v in levels)
        inside.sub_(origin).mul_(scale)
    spectrum = torch.fft.rfft2(grid)
    del grid, inside
    torch.view_as_real(spectrum).flatten(-2).mul_(_centred_spectra(kernels, rows, cols, fft_dtype))  # a local
    zero_filtered = torch.fft.irfft2(spectrum, s=(rows, cols))
    del spectrum
    smoothed = zero_filtered[:, radius : radius + height, radius : radius + width]
    # forward: Σ_i pred_i Σ_ab K_ab ext(gt)_(i + a, j + b) = Σ_u ext(gt)_u M_u (the adjoint of the padded correlation):
    # the interior, the ring's rows (reflected rows ρ .. 1 and H - 2 .. H - 1 - ρ) and columns
    row_ring, col_ring = (torch.cat([torch.arange(radius, device=device),
                                     torch.arange(length + radius, length + two, device=device)])
                          for length in (height, width))  # grid indices of [-ρ, 0) and [L, L + ρ)
    columns = torch.arange(-radius, width + radius, device=device)
    gt_rows = target[:, _reflect_positions(row_ring - radius, height)][..., _reflect_positions(columns, width)]
    gt_cols = target[:, :, _reflect_positions(col_ring - radius, width)]
    ring_rows = zero_filtered[:, row_ring, : width + two]
    ring_cols = zero_filtered[:, radius : radius + height, col_ring]
    mask = target.to(fft_dtype)  # no copy when the caller passes the FFT dtype
    forward = (masked_sum(smoothed, mask) + masked_sum(ring_rows, gt_rows.to(fft_dtype))
               + masked_sum(ring_cols, gt_cols.to(fft_dtype)))
    # reverse: M on the pixels >= ρ from the border; the four bands from reflect-101 slabs 3ρ wide, written into
    # ``smoothed`` (a view of the local ``zero_filtered``), replacing the zero-extension values there
    slab = torch.arange(-radius, two, device=device)  # the inputs of band rows 0 .. ρ - 1
    across = _reflect_positions(torch.stack([slab, slab + height - radius]), height)  # top, bottom
    top_bottom = _valid_correlation(values(pred[:, across][..., _reflect_positions(columns, width)], fft_dtype),
                                    kernels, fft_dtype)
    smoothed[:, :radius], smoothed[:, height - radius :] = top_bottom[:, 0], top_bottom[:, 1]
    across = _reflect_positions(torch.stack([slab, slab + width - radius]), width)  # left, right: rows ρ .. H - ρ - 1
    left_right = _valid_correlation(values(pred[:, :, across].movedim(2, 1), fft_dtype), kernels, fft_dtype)
    smoothed[:, radius : height - radius, :radius] = left_right[:, 0]
    smoothed[:, radius : height - radius, width - radius :] = left_right[:, 1]
    return forward, smoothed
