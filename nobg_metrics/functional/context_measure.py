"""Context measure Cm (Wang, Ji, Shao, Cheng, Fan, "Context-measure: Contextualizing Metric for Camouflage",
arXiv:2512.07076, 2025) as PySODMetrics 1.6.2 ``ContextMeasure`` (β² = 1, α = 6), batched over images.

Reference (``py_sod_metrics/context_measure.py``, ``ContextMeasure.compute`` with ``cd = 0``), per image, pred float
in [0, 1], gt 0/1::

    Σ        = np.cov(argwhere(gt), rowvar=False), a zero diagonal entry replaced by eps   (<= 1 gt pixel: below)
    σ_x, σ_y = sqrt(Σ00), sqrt(Σ11) (rows, columns);   σ = sqrt(Σ00 + Σ11)
    Σ'       = α² Σ / σ²;   half-sizes x_dis = round(3 α σ_x / σ), y_dis = round(3 α σ_y / σ)
    K        = exp(-½ zᵀ Σ'⁻¹ z) / (2π sqrt(det Σ')) on z in [-x_dis, x_dis] x [-y_dis, y_dis], divided by its sum
    forward  = [pred > 0] · filter2D(gt, K);            mF = Σ forward · pred / (Σ pred + eps)
    reverse  = e / (e - 1) · gt · (1 - exp(-filter2D(pred, K)));   wR = Σ reverse · gt / (Σ gt + eps)
    Cm       = (1 + β²) mF wR / (β² mF + wR + eps)

With at most one gt pixel the reference uses Σ' = diag(0.25, 0.25) and half-sizes 1 (a 3x3 kernel). ``filter2D`` is
OpenCV's correlation with the reflect-101 border (``gfedcb|abcdefgh|gfedcba``, reflected again for kernels wider than
the image); the forward filter runs in float32 (``CV_32F``, the kernel rounded to float32), the reverse one in
float64; both switch to a DFT from 130 (float32) / 50 (float64) kernel taps on, which is every kernel but thin
ones at α = 6 (a round gt gives 27 x 27).

Here every filter is one float64 FFT correlation per image of the reflect-101 padded map with its own kernel, on a
grid of half-size ``round(3 α) + 1`` for every image (the largest a kernel can be: fixed shapes, no host read).
The only difference from the reference is its float32 forward filter (relative rounding ~6e-8, plus its DFT's):
Cm agrees to ~1e-7 (measured worst 3e-7, tests use 1e-6), never bit for bit.

Degenerate gt: all background — the reference scores 0 whatever the prediction (``empty_gt="reference"``);
``"agreement"`` gives ``1 - mean(pred)``, the soft pixel agreement (a perfect all-zero prediction scores 1). All
foreground — ``"reference"`` runs the formula; ``"agreement"`` gives ``mean(pred)`` (as the weighted F-measure).

The camouflage variant CCm (``CamouflageContextMeasure``: camouflage degree from the RGB image, Lab patches, a 1-NN
search, CIEDE2000) is not implemented.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, SegBatch, check_number, check_option, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image

EPS = torch.finfo(torch.float64).eps
"""``np.spacing(1)``, the reference's epsilon."""

_E_FACTOR = math.e / (math.e - 1)
_SINGULAR = 1e-12
"""A scaled covariance with ``det <= _SINGULAR * Σ'_rr Σ'_cc`` is singular (collinear gt pixels)."""


def kernel_grid_radius(alpha: float) -> int:
    """Half-size of the fixed kernel grid: every per-image kernel (``round(3 α σ_x / σ) <= round(3 α)``, 1 for the
    degenerate gt) fits, with one spare tap against a ratio rounded above 1.

    Example:
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
    entries ``(Σ_rr, Σ_rc, Σ_cc)`` and the :math:`(B,)` int64 gt pixel counts.

    Centred sums as numpy's (deviations from the float64 mean, then ``* (1 / (n - 1))``), from per-row and per-column
    counts and the per-row sums of column indices (all exact): ``Σ (r - m_r)(c - m_c) = Σ_r (r - m_r)(S_r - m_c n_r)``.
    """
    _, height, width = gt.shape
    mask = gt.to(torch.int64)
    per_row, per_col = mask.sum(dim=2).double(), mask.sum(dim=1).double()  # (B, H), (B, W): exact
    row_col_sums = (mask * torch.arange(width, device=gt.device)).sum(dim=2).double()  # S_r = Σ_c gt[r, c] c
    rows = torch.arange(height, device=gt.device, dtype=torch.float64)
    cols = torch.arange(width, device=gt.device, dtype=torch.float64)
    count = mask.flatten(1).sum(dim=1)
    n = count.double().clamp(min=1)
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

    Example:
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


def _reflect_101(length: int, pad: int, device: torch.device) -> Tensor:
    """Source index of each of ``length + 2 pad`` positions under OpenCV's ``BORDER_REFLECT_101`` (any ``pad``)."""
    positions = torch.arange(-pad, length + pad, device=device)
    if length == 1:
        return torch.zeros_like(positions)
    period = 2 * (length - 1)
    folded = positions.remainder(period)
    return torch.where(folded >= length, period - folded, folded)


def correlate_reflect_101(first: Tensor, second: Tensor, kernels: Tensor) -> tuple[Tensor, Tensor]:
    """``cv2.filter2D(map, -1, kernel)`` (correlation, reflect-101 border, anchor at the centre) of two maps per image,
    in float64 by one complex FFT: ``first + i second`` (the kernel is real, so the two correlations are the real and
    imaginary parts).

    Args:
        first, second: :math:`(B, H, W)` float64, filtered by each image's kernel.
        kernels: :math:`(B, 2r + 1, 2r + 1)` float64.

    Returns:
        the two :math:`(B, H, W)` float64 correlations.

    Example:
        >>> image = torch.arange(12, dtype=torch.float64).view(1, 3, 4)
        >>> box = torch.full((1, 3, 3), 1 / 9, dtype=torch.float64)
        >>> [round(v, 6) for v in correlate_reflect_101(image, image, box)[0][0, 0].tolist()]  # cv2.filter2D's
        [3.333333, 3.666667, 4.666667, 5.0]
    """
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


def _context_measure_per_image(batch: SegBatch, beta2: float, alpha: float, empty_gt: EmptyGt) -> Tensor:
    """:math:`(B,)` float64 Cm of one equal-size group."""
    gt = batch.gt
    pred = batch.pred.double()
    target = gt.double()
    kernels = context_kernels(gt, alpha, kernel_grid_radius(alpha))
    relevance, smoothed = correlate_reflect_101(target, pred, kernels)
    # forward = x_binary * global_relevance_matrix;  mforward = sum(forward * pred) / (sum(pred) + EPS)
    pred_sum = pred.sum(dim=(-2, -1))
    forward = torch.where(pred > 0, relevance, torch.zeros_like(relevance))
    m_forward = (forward * pred).sum(dim=(-2, -1)) / (pred_sum + EPS)
    # reverse = e / (e - 1) * Y * (1 - exp(-filter2D(X, K)));  wreverse = sum(reverse * (gt + cd)) / (...), cd = 0
    reverse = _E_FACTOR * target * (1 - torch.exp(-1 * smoothed))
    gt_sum = target.sum(dim=(-2, -1))
    w_reverse = (reverse * target).sum(dim=(-2, -1)) / (gt_sum + EPS)
    value = (1 + beta2) * m_forward * w_reverse / (beta2 * m_forward + w_reverse + EPS)
    if empty_gt == "reference":
        return value
    mean_pred = pred_sum / batch.num_pixels
    return torch.where(gt_sum == 0, 1 - mean_pred, torch.where(gt_sum == batch.num_pixels, mean_pred, value))


def _check_context_measure_args(beta2: float, alpha: float, empty_gt: EmptyGt) -> None:
    check_number("beta2", beta2, low=0.0)
    check_number("alpha", alpha, low=0.0, low_open=True, high=64.0)
    check_option("empty_gt", empty_gt, EmptyGt)


def _context_measure_update(pred: InputMaps, gt: InputMaps, beta2: float, alpha: float, normalize: bool,
                            empty_gt: EmptyGt, validate_args: bool) -> tuple[Tensor, Tensor]:
    """Sum of per-image Cm and the number of images of a batch: ``(float64 scalar, int64 scalar)``."""
    batches = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
    return sum_per_image(lambda batch: _context_measure_per_image(batch, beta2, alpha, empty_gt), batches)


def context_measure(pred: InputMaps, gt: InputMaps, *, beta2: float = 1.0, alpha: float = 6.0,
                    normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Context measure :math:`C_m = (1 + \beta^2) m_F w_R / (\beta^2 m_F + w_R)` with gt-shaped Gaussian context
    kernels, per image, averaged over images (see the module notes for the definition).

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        beta2: β², the weight of the forward inference (the reference's ``beta2``).
        alpha: the spatial context scale α (kernel half-sizes up to ``round(3 α)``), in (0, 64].
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"reference"`` (an empty gt scores 0) or ``"agreement"`` (``1 - mean(pred)`` / ``mean(pred)``
            for an all-background / all-foreground gt).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Example:
        >>> gt = torch.zeros(12, 16, dtype=torch.bool); gt[3:9, 4:11] = True
        >>> round(context_measure(gt.float(), gt).item(), 4), round(context_measure(gt.float() * 0.5, gt).item(), 4)
        (0.3583, 0.2629)
    """
    _check_context_measure_args(beta2, alpha, empty_gt)
    return mean_over_images(*_context_measure_update(pred, gt, beta2, alpha, normalize, empty_gt, validate_args))
