"""Gradient error of alpha mattes, as the Deep Image Matting evaluation computes it (and ZIM's Sobel variant).

Reference (DIM MATLAB evaluation, Xu et al. 2017, ``compute_gradient_loss.m``; Rhemann et al. 2009)::

    pred = mat2gray(pred);  target = mat2gray(target);          % per-image min-max, double
    [pred_x, pred_y] = gaussgradient(pred, 1.4);               % nobg_metrics.ops.filters
    [target_x, target_y] = gaussgradient(target, 1.4);
    pred_amp = sqrt(pred_x.^2 + pred_y.^2);  target_amp = sqrt(target_x.^2 + target_y.^2);
    error_map = (single(pred_amp) - single(target_amp)).^2;
    loss = sum(sum(error_map .* single(trimap == 128)));       % papers print loss / 1000

``mat2gray(A)`` = ``imlincomb(1/(max-min), A, -min/(max-min))`` clipped to [0, 1]; a constant map is
returned as is (clipped to [0, 1]) and has zero gradient either way. Filtering is in float64 (MATLAB's
``mat2gray`` returns double); the magnitudes are rounded to float32 and the squared differences summed
in float64 (MATLAB sums in single: its own rounding, ~1e-7 relative, is not reproduced). ``uint8``
inputs are normalised from their integer levels, exactly as ``mat2gray`` of the PNG bytes (one 256-entry
table per image). The kernel's ``1/norm`` is applied to the derivative factor (~1e-16 relative).

Cost on CPU: each map is filtered only on the box of its non-constant 9 x 9 windows (elsewhere its
gradient is 0: a binary gt, a saturated prediction) and, with a trimap, only around the unknown region.

``kernel="sobel"`` is ZIM's variant (Kim et al. 2024), a different metric: raw mattes (no
``mat2gray``), 3x3 Sobel magnitudes with zero padding, and the **mean** over the region of the absolute
(L1) difference of magnitudes; an empty region scores 0.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_option
from nobg_metrics._matting_inputs import MatteBatch
from nobg_metrics.functional._per_image import mean_over_images
from nobg_metrics.functional.matting.sad_mse import matting_update, region_size, region_sum
from nobg_metrics.ops import banded, host_reads
from nobg_metrics.ops.arith import divide
from nobg_metrics.ops.filters import (
    gaussgradient_kernels,
    gaussian_gradient_tiled,
    sobel_magnitude,
)
from nobg_metrics.ops.histogram import NUM_LEVELS

__all__ = ["gradient_error"]

GradientKernel = Literal["gaussian", "sobel"]
"""``gaussian``: DIM's gaussgradient(1.4) error (default); ``sobel``: ZIM's Sobel L1 variant."""

DIM_SIGMA = 1.4
"""The Gaussian-derivative sigma of ``compute_gradient_loss.m``."""

DIM_HALF_SIZE = len(gaussgradient_kernels(DIM_SIGMA)[0]) // 2
"""``halfsize`` of ``gaussgradient(IM, 1.4)``: 4 (a 9 x 9 kernel)."""


def mat2gray(image: Tensor, *, out: Tensor | None = None) -> Tensor:
    """MATLAB ``mat2gray`` per image: ``A / (max-min) - min / (max-min)``, clipped to [0, 1], float64.

    A constant image is returned unchanged (then clipped), as MATLAB does.

    Args:
        image: :math:`(B, H, W)` float.
        out: optional :math:`(B, H, W)` float64 buffer for the result (may be ``image`` itself).

    Returns:
        :math:`(B, H, W)` float64.

    Examples:
        >>> mat2gray(torch.tensor([[[0.2, 0.6, 0.4]], [[0.3, 0.3, 0.3]]]))
        tensor([[[0.0000, 1.0000, 0.5000]],
        <BLANKLINE>
                [[0.3000, 0.3000, 0.3000]]], dtype=torch.float64)
    """
    scaled = image.to(torch.float64, copy=True) if out is None else out.copy_(image)  # never the caller's tensor
    low = scaled.amin(dim=(-2, -1), keepdim=True)
    high = scaled.amax(dim=(-2, -1), keepdim=True)
    return _stretch(scaled, low, high)


def _stretch(scaled: Tensor, low: Tensor, high: Tensor) -> Tensor:
    """``mat2gray``'s arithmetic on ``scaled`` in place, given each image's ``low`` and ``high`` (broadcast)."""
    constant = high == low
    delta = 1.0 / torch.where(constant, torch.ones_like(high), high - low)
    # imlincomb(delta, A, -limits(1)*delta, 'double'): A * delta, then + (-min * delta); a constant image
    # gets delta = 1 and offset 0, i.e. itself (in place: no second full-size buffer)
    offset = torch.where(constant, torch.zeros_like(low), -low * delta)
    return scaled.mul_(delta).add_(offset).clamp_(0.0, 1.0)


def _mat2gray_tables(levels: Tensor) -> Tensor:
    """``mat2gray(double(levels) / 255)`` of every uint8 level, per image: :math:`(B, 256)` float64.

    Every pixel of an image holds one of 256 levels, so ``mat2gray`` runs once per image on the 256 values
    (the same float64 ops, hence the same numbers; ``min`` and ``max`` over the whole image, as the
    reference's) and a map becomes one table lookup.

    Args:
        levels: :math:`(B, H, W)` uint8.
    """
    batch = levels.shape[0]
    values = divide(torch.arange(NUM_LEVELS, device=levels.device, dtype=torch.float64), 255)
    low = values.index_select(0, levels.amin(dim=(-2, -1)).int())[:, None]  # any strides: inputs may be views
    high = values.index_select(0, levels.amax(dim=(-2, -1)).int())[:, None]
    return _stretch(values.expand(batch, -1).clone(), low, high)


def _varying_window(padded: Tensor, half: int, engine: host_reads.Engine = "auto") -> tuple[slice, slice]:
    """Rows and columns of the outputs whose ``2 half + 1`` window is not constant (the gradient is 0
    elsewhere): a box in output coordinates of a (B, R + 2 half, C + 2 half) padded map. Only with the
    ``"data_sized"`` engine (host reads; by default on CPU); ``"fixed"``: every output."""
    rows, cols = padded.shape[1] - 2 * half, padded.shape[2] - 2 * half
    if host_reads.resolve_engine(engine, padded) == "fixed":
        return slice(0, rows), slice(0, cols)
    change = torch.zeros(padded.shape, dtype=torch.bool, device=padded.device)
    torch.ne(padded[:, 1:], padded[:, :-1], out=change[:, :-1])  # q differs from the pixel below
    change[:, :, :-1] |= padded[:, :, 1:] != padded[:, :, :-1]  # ... or from the one to its right
    box = host_reads.window(change, 0)
    if box.rows.start == box.rows.stop:
        return slice(0, 0), slice(0, 0)
    # output p reads padded p .. p + 2 half: it sees a change at q only if q - 2 half <= p <= q
    return (slice(max(0, box.rows.start - 2 * half), min(rows, box.rows.stop)),
            slice(max(0, box.cols.start - 2 * half), min(cols, box.cols.stop)))


def _gradient_magnitude(padded: Tensor, tables: Tensor | None, engine: host_reads.Engine = "auto") -> Tensor:
    """``single(sqrt(gx^2 + gy^2))`` of ``gaussgradient(., 1.4)``: :math:`(B, R, C)` float32.

    Args:
        padded: :math:`(B, R + 8, C + 8)` the replicate-padded map: uint8 levels (read through ``tables``)
            or float64 values.
        tables: :math:`(B, 256)` ``mat2gray`` tables for uint8 levels, else ``None``.
        engine: ``"data_sized"`` (default on CPU) filters the box where the map varies, ``"fixed"`` the whole map.

    On CPU the filters run only where the map varies (a binary mask or a saturated prediction is constant
    over most of the image, where the gradient is exactly 0 up to ~1e-17 of rounding).
    """
    half = DIM_HALF_SIZE
    size, rows, cols = padded.shape[0], padded.shape[1] - 2 * half, padded.shape[2] - 2 * half
    out_rows, out_cols = _varying_window(padded, half, engine)
    magnitude = torch.zeros((size, rows, cols), dtype=torch.float32, device=padded.device)
    if out_rows.start == out_rows.stop:
        return magnitude
    for rows_part, cols_part in banded.strips(out_rows, out_cols, size, half):  # bounded buffers, any shape
        window = padded[:, rows_part.start:rows_part.stop + 2 * half, cols_part.start:cols_part.stop + 2 * half]
        values = _tiled_values(tables, window) if tables is not None else banded.tiled(window)
        gx, gy = gaussian_gradient_tiled(values, DIM_SIGMA)
        magnitude[:, rows_part, cols_part] = gx.square_().add_(gy.square_()).sqrt_()
    return magnitude


def _tiled_values(tables: Tensor, levels: Tensor) -> banded.Tiled:
    """uint8 ``levels`` :math:`(B, R, C)` read through each image's ``tables`` (:math:`(B, 256)`), straight into
    the tile layout of the filters: the bytes are laid out first (1 byte a pixel), then one lookup fills the
    float64 buffer (the zero bytes around the map read as level 0: finite, as the layout needs)."""
    layout = banded.tiled(levels)
    index = layout.buffer.int()
    if layout.batch > 1:  # rows of image b read table b (the spare rows at the end: the last image's)
        row = torch.arange(index.shape[0], device=index.device, dtype=torch.int32)
        image = torch.div(row, layout.rows, rounding_mode="floor").clamp_(max=layout.batch - 1)
        index += (image * NUM_LEVELS)[:, None]
    values = tables.reshape(-1).index_select(0, index.view(-1)).view(index.shape)
    return banded.Tiled(values, layout.batch, layout.height, layout.width)


def _replicate_pad(image: Tensor, rows: slice, cols: slice, half: int) -> Tensor:
    """The crop ``[rows, cols]`` of a (B, H, W) image grown by ``half`` on every side: image pixels where the
    image has them, its border pixels replicated beyond (any dtype; ``F.pad`` has no uint8 replicate)."""
    _, height, width = image.shape
    top, bottom = rows.start - half, rows.stop + half
    left, right = cols.start - half, cols.stop + half
    crop = image[:, max(top, 0):min(bottom, height), max(left, 0):min(right, width)]
    crop = torch.cat([crop[:, :1].expand(-1, max(0, -top), -1), crop,
                      crop[:, -1:].expand(-1, max(0, bottom - height), -1)], dim=1)
    return torch.cat([crop[:, :, :1].expand(-1, -1, max(0, -left)), crop,
                      crop[:, :, -1:].expand(-1, -1, max(0, right - width))], dim=2)


def _as_float64(source: Tensor) -> Tensor:
    """A matte as float64: ``uint8`` from its integer levels (``double(x) / 255``), others as given."""
    return divide(source.double(), 255) if source.dtype == torch.uint8 else source.double()


def _gradient_per_image(batch: MatteBatch, engine: host_reads.Engine = "auto") -> Tensor:
    """Per-image DIM gradient error (raw, not /1000): :math:`(B,)` float64.

    With a trimap only the unknown region is scored, so with the ``"data_sized"`` engine (by default on CPU) the
    filters run on its box plus the kernel's half-size (exact there: beyond it the crop stops at the image border,
    which the filter pads itself); ``"fixed"`` filters the whole image.
    """
    size, height, width = batch.pred_source.shape
    region = batch.region
    rows, cols = slice(0, height), slice(0, width)
    if region is not None and host_reads.resolve_engine(engine, region) == "data_sized":
        box = host_reads.window(region, DIM_HALF_SIZE)
        if box.rows.start == box.rows.stop:  # no unknown pixel in the batch: every image scores 0
            return torch.zeros(size, dtype=torch.float64, device=batch.device)
        rows, cols, region = box.rows, box.cols, region[box.crop]
    amplitudes = []
    for source in (batch.pred_source, batch.gt_source):
        if batch.levels is not None:  # uint8: mat2gray through a per-image 256-entry table, padding by copies
            tables, padded = _mat2gray_tables(source), _replicate_pad(source, rows, cols, DIM_HALF_SIZE)
        else:  # min and max over the whole image, as the reference's
            tables = None
            crop = mat2gray(_as_float64(source))[:, rows, cols].unsqueeze(1)
            padded = torch.nn.functional.pad(crop, (DIM_HALF_SIZE,) * 4, mode="replicate")[:, 0]
        amplitudes.append(_gradient_magnitude(padded, tables, engine))
    pred_amp, gt_amp = amplitudes
    return region_sum(pred_amp.sub_(gt_amp).square_(), region)


def _sobel_per_image(batch: MatteBatch) -> Tensor:
    """Per-image ZIM Sobel gradient error: mean over the region of ``|sobel(pred)| - |sobel(gt)|``, :math:`(B,)`."""
    magnitudes = sobel_magnitude(torch.cat([_as_float64(batch.pred_source), _as_float64(batch.gt_source)]))
    pred_amp, gt_amp = magnitudes.chunk(2)
    total = region_sum((pred_amp - gt_amp).abs(), batch.region)
    size = region_size(batch)
    return torch.where(size > 0, total / size.clamp_min(1), torch.zeros_like(total))


def _gradient_update(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None, kernel: str, clamp_to_trimap: bool,
                     validate_args: bool, engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor]:
    """Sum of per-image gradient errors and the image count: ``(float64 scalar, int64 scalar)``."""
    per_image = partial(_gradient_per_image, engine=engine) if kernel == "gaussian" else _sobel_per_image
    return matting_update(per_image, pred, gt, trimap, clamp_to_trimap, validate_args)


def gradient_error(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None, *,
                   kernel: GradientKernel = "gaussian", clamp_to_trimap: bool = False,
                   validate_args: bool = True, engine: host_reads.Engine = "auto") -> Tensor:
    r"""Gradient error per image (raw: papers print it /1000), averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; a matte (not binarised).
        trimap: optional, same layout; only the unknown region (128 / 0.5) is scored, else the whole image.
        kernel: ``"gaussian"`` (DIM, default) or ``"sobel"`` (ZIM's variant: mean L1 of Sobel magnitudes).
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        validate_args: run the checks that force a device sync.
        engine: ``"data_sized"`` filters only the box of the trimap's unknown region and of the windows where the
            maps vary (host reads), ``"fixed"`` the whole image (no host read); ``"auto"`` (default) is
            ``"data_sized"`` on CPU and ``"fixed"`` elsewhere. Same values.

    Returns:
        scalar float64 tensor (lower is better). An image whose region is empty (a trimap without unknown
        pixels) scores 0; ``sobel`` divides by the region size only when it is not empty.

    Examples:
        >>> gt = torch.zeros(8, 10); gt[2:6, 3:8] = 1.0
        >>> round(float(gradient_error(gt, gt)), 6)
        0.0
        >>> round(float(gradient_error(gt.roll(1, 1), gt)), 4)
        20.2133
    """
    check_option("kernel", kernel, GradientKernel)
    check_option("engine", engine, host_reads.Engine)
    return mean_over_images(*_gradient_update(pred, gt, trimap, kernel, clamp_to_trimap, validate_args, engine))

