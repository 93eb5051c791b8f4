"""The P3M / AM-2k / AIM-500 gradient error: ``scipy.ndimage.gaussian_filter(sigma=1.4, order=1)`` magnitudes.

Reference (``compute_gradient_whole_image`` in ``core/evaluate.py`` of JizhiziLi/P3M, GFM and AIM)::

    pd_x = gaussian_filter(pd, sigma=1.4, order=[1, 0], output=np.float32)   # and pd_y: order=[0, 1]
    gt_x = gaussian_filter(gt, sigma=1.4, order=[1, 0], output=np.float32)   # and gt_y
    pd_mag = np.sqrt(pd_x**2 + pd_y**2);  gt_mag = np.sqrt(gt_x**2 + gt_y**2)
    loss = np.sum(np.square(pd_mag - gt_mag)) / 10                          # we return the sum (raw)

No ``mat2gray``, no kernel normalisation, the whole image, a different scale from DIM's ``gaussgradient``
(``functional/matting/gradient.py``). What scipy does, reproduced operation for operation (so every float32 value
is the reference's bit for bit):

- **kernels** (``_gaussian_kernel1d``): ``radius = int(4.0 * 1.4 + 0.5) = 6``; ``phi(x) = exp(-0.5 / sigma²
  * x²)`` for x = -6..6, divided by ``phi.sum()`` (numpy's pairwise order for 13 values); order 1 multiplies
  by ``x * (-1 / sigma²)``. ``correlate1d`` gets the kernel reversed.
- **separable passes**: axis 0 then axis 1, each one ``correlate1d`` whose result is stored in the float32
  ``output`` (the second pass reads the rounded first one); every line is read in float64.
- **correlation order** (``NI_Correlate1D``, odd symmetric / antisymmetric kernels):
  ``out = x[i] * w[0]``, then for ``j = 6, 5, ..., 1``: ``out += (x[i-j] ± x[i+j]) * w[j]`` — each
  product and sum rounded in float64, no fused multiply-add.
- **boundary** ``mode="reflect"`` (``d c b a | a b c d | d c b a``, repeated for lines shorter than 6).
- **sum**: the float32 error map summed by numpy's pairwise summation in float32
  (:func:`nobg_metrics.ops.numpy_sum.pairwise_sum`); the scripts then print that float32 sum ``/ 10``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_option
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.matting.p3m import P3MBatch, prepare_p3m
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.arith import any_along
from nobg_metrics.ops.numpy_sum import pairwise_sum

__all__ = ["p3m_gradient_error"]

P3M_SIGMA = 1.4
"""``sigma`` of the reference's ``gaussian_filter``."""

P3M_RADIUS = int(4.0 * P3M_SIGMA + 0.5)
"""``int(truncate * sigma + 0.5)`` with scipy's default ``truncate = 4.0``: 6 (13 taps)."""


def _numpy_sum_13(values: list[float]) -> float:
    """``np.sum`` of 13 float64 values: eight lanes, their pairwise tree, then the 5 last in order."""
    r = values[:8]
    total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    for value in values[8:]:
        total += value
    return total


def scipy_gaussian_taps(sigma: float = P3M_SIGMA, radius: int = P3M_RADIUS) -> tuple[list[float], list[float]]:
    """scipy's ``_gaussian_kernel1d(sigma, 0, radius)`` and ``(sigma, 1, radius)`` as Python floats (x = -r..r).

    Examples:
        >>> smooth, derivative = scipy_gaussian_taps()
        >>> len(smooth), smooth[6] == smooth[6], derivative[6]
        (13, True, -0.0)
    """
    if radius != 6:
        raise ValueError(f"`radius` must be 6 (the reference's), got {radius}")
    sigma2 = sigma * sigma
    factor = -0.5 / sigma2
    phi = [math.exp(factor * (x * x)) for x in range(-radius, radius + 1)]  # -0.5 / sigma2 * x ** 2
    total = _numpy_sum_13(phi)
    phi = [value / total for value in phi]
    slope = 1.0 / -sigma2  # q = Q_deriv.dot([1, 0]) = [0, -1/sigma2]; (x ** [0, 1]).dot(q) = x * q[1] (+ 0)
    return phi, [(x * slope) * value for x, value in zip(range(-radius, radius + 1), phi)]


def reflect_indices(size: int, start: int, stop: int, device: torch.device) -> Tensor:
    """Source index of positions ``start .. stop - 1`` of a line of ``size`` under ``mode="reflect"``:
    :math:`(stop - start,)` int64 (period ``2 size``: ``d c b a | a b c d | d c b a``).

    Examples:
        >>> reflect_indices(3, -4, 7, torch.device("cpu")).tolist()
        [2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0]
    """
    position = torch.arange(start, stop, device=device).remainder(2 * size)
    return torch.where(position >= size, 2 * size - 1 - position, position)


def _correlate(flat: Tensor, taps: list[float], stride: int, antisymmetric: bool, exact_addcmul: bool) -> Tensor:
    """``correlate1d`` with ``taps`` reversed, in scipy's order, along the axis whose neighbours lie ``stride``
    apart in the 1-D float64 buffer ``flat``: output ``k`` is centred on ``flat[k + 6 stride]``. The result has
    ``flat``'s length; its last 12 ``stride`` entries are 0 and the outputs whose window crosses a row or image
    end are garbage, cut by the caller.

    ``taps`` are the kernel at x = -6..6; the reversed kernel's weight at offset -j is ``taps[6 + j]``. Every
    operation runs on contiguous 1-D slices (a 2-D strided slice costs ~2x on CPU).
    """
    length = flat.numel() - 2 * P3M_RADIUS * stride
    result = torch.empty_like(flat)
    result[length:].zero_()
    out = torch.mul(flat[P3M_RADIUS * stride:P3M_RADIUS * stride + length], taps[P3M_RADIUS], out=result[:length])
    one = torch.ones((), dtype=flat.dtype, device=flat.device)
    pair = torch.empty_like(out)
    for j in range(P3M_RADIUS, 0, -1):
        left = flat[(P3M_RADIUS - j) * stride:(P3M_RADIUS - j) * stride + length]
        right = flat[(P3M_RADIUS + j) * stride:(P3M_RADIUS + j) * stride + length]
        torch.sub(left, right, out=pair) if antisymmetric else torch.add(left, right, out=pair)
        if exact_addcmul:  # CPU: out + (pair * w) * 1, two roundings (tested bit for bit against mul, add)
            out.addcmul_(pair, one, value=taps[P3M_RADIUS + j])
        else:  # a device kernel may fuse a multiply-add: two separate kernels round as scipy does
            out.add_(pair.mul_(taps[P3M_RADIUS + j]))
    return result


CPU_STRIP_ELEMENTS = 1 << 17
"""On CPU the filters run on strips of rows of about this many padded pixels (256 KiB of float64): each of a
pass's 13 operations then works in the L2 cache (measured 2026-12-01, one thread, two 1024² maps: 297 ms for
whole images, see docs/matting_protocols.md for the strip timing). Other devices filter whole batches."""


def _filter_padded(padded: Tensor, orders: tuple[int, int], exact_addcmul: bool) -> Tensor:
    """The two passes of :func:`gaussian_filter_float32` on a map already reflect-padded by 6 on every side:
    :math:`(B, R + 12, C + 12)` float64, contiguous -> :math:`(B, R, C)` float32."""
    smooth, derivative = scipy_gaussian_taps()
    count, rows, width = padded.shape
    margin = 2 * P3M_RADIUS
    first = _correlate(padded.view(-1), derivative if orders[0] else smooth, width, orders[0] == 1, exact_addcmul)
    # scipy stores the axis-0 pass in the float32 output; rows R .. R + 11 of each image are garbage
    first = first.view(count, rows, width)[:, :rows - margin].float().double()
    second = _correlate(first.view(-1), derivative if orders[1] else smooth, 1, orders[1] == 1, exact_addcmul)
    return second.view(count, rows - margin, width)[:, :, :width - margin].float()


def _reflect_padded(maps: list[Tensor], rows: tuple[int, int] | None = None,
                    cols: tuple[int, int] | None = None) -> Tensor:
    """The maps stacked and grown by 6 on every side under ``mode="reflect"``: :math:`(B_1 + B_2 + ..., H + 12,
    W + 12)` float64 (uint8 maps as ``k / 255`` in place); with ``rows`` / ``cols`` ``(start, stop)`` only the
    padded window of those output rows and columns, :math:`(B, r + 12, c + 12)` (a strip, read straight from the
    maps: the same values as the whole padded map's)."""
    _, height, width = maps[0].shape
    device = maps[0].device
    count = sum(m.shape[0] for m in maps)
    r = P3M_RADIUS
    row_start, row_stop = rows if rows is not None else (0, height)
    col_start, col_stop = cols if cols is not None else (0, width)
    row_index = reflect_indices(height, row_start - r, row_stop + r, device)
    col_index = reflect_indices(width, col_start - r, col_stop + r, device)
    padded = torch.empty((count, row_stop - row_start + 2 * r, col_stop - col_start + 2 * r), dtype=torch.float64,
                         device=device)
    start = 0
    for matte in maps:  # two maps (pred, gt): a bounded loop
        window = padded[start:start + matte.shape[0]]
        window.copy_(matte.index_select(1, row_index).index_select(2, col_index))
        if matte.dtype == torch.uint8:
            window.div_(torch.full((), 255.0, dtype=torch.float64, device=device))
        start += matte.shape[0]
    return padded


def _windows(count: int, height: int, width: int, device: torch.device) -> list[tuple[tuple[int, int],
                                                                                        tuple[int, int]]]:
    """Output ``(rows, cols)`` ranges of the CPU strips (the whole image elsewhere): strips of whole rows of about
    :data:`CPU_STRIP_ELEMENTS` padded pixels, and, where even 8 whole rows are far more (a wide, thin image: a
    1 x 10^6 one would pad to a 13 x 10^6 strip), tiles of up to 64 rows across the columns."""
    if not host_reads.free_on(torch.empty(0, device=device)):  # CPU memory, not host reads: shapes only
        return [((0, height), (0, width))]
    pad = 2 * P3M_RADIUS
    rows = max(8, CPU_STRIP_ELEMENTS // (count * (width + pad)) - pad)
    if count * (min(rows, height) + pad) * (width + pad) <= 2 * CPU_STRIP_ELEMENTS:
        return [((start, min(height, start + rows)), (0, width)) for start in range(0, height, rows)]
    rows = min(height, 64)
    cols = max(8, CPU_STRIP_ELEMENTS // (count * (rows + pad)) - pad)
    return [((row, min(height, row + rows)), (col, min(width, col + cols)))
            for row in range(0, height, rows) for col in range(0, width, cols)]


def _varying_columns(strip: Tensor) -> tuple[int, int]:
    """Output columns ``[a, b)`` of a padded strip whose 13 x 13 window is not constant (host reads: CPU only).

    Output column c reads padded columns c .. c + 12; a change between padded columns x and x + 1 (or between two
    rows at column x) lies in that window only if ``x - 12 <= c <= x``. Where every window is constant both
    Gaussian derivatives are exactly (±)0, so the magnitude is 0.
    """
    width = strip.shape[2] - 2 * P3M_RADIUS
    columns = any_along(strip[:, 1:] != strip[:, :-1], (0, 1))  # (W + 12,): a vertical change at column x
    across = any_along(strip[:, :, 1:] != strip[:, :, :-1], (0, 1))  # (W + 11,): between x and x + 1
    columns[:-1] |= across
    where = torch.nonzero(columns).flatten()
    if where.numel() == 0:
        return 0, 0
    return max(0, int(where[0]) - 2 * P3M_RADIUS), min(width, int(where[-1]) + 1)


def _filtered_strips(maps: list[Tensor], orders: tuple[tuple[int, int], ...],
                     engine: host_reads.Engine = "auto") -> Tensor:
    """Each ``orders`` filter of the stacked ``maps`` (:math:`(B_i, H, W)`), strip by strip on CPU (each strip
    reflect-padded from the maps themselves: memory bounded on any aspect ratio), combined as one float32 map: one
    filter is returned as is, two as ``sqrt(a^2 + b^2)``. :math:`(B, H, W)` float32, written into one buffer.

    With the ``"data_sized"`` engine (by default on CPU), when every filter takes a derivative, each strip is
    filtered only on the columns whose window varies (host reads; a binary or saturated matte is constant over most
    of the frame; elsewhere the derivatives are 0): the same operations on the same inputs for every value computed.
    """
    count, (height, width) = sum(m.shape[0] for m in maps), maps[0].shape[1:]
    device = maps[0].device
    exact_addcmul = host_reads.free_on(maps[0])  # how the device's kernels round (not a host read): CPU's addcmul
    boxed = host_reads.resolve_engine(engine, maps[0]) == "data_sized" and all(1 in order for order in orders)
    result = (torch.zeros if boxed else torch.empty)((count, height, width), dtype=torch.float32, device=device)
    for (row_start, row_stop), (col_start, col_stop) in _windows(count, height, width, device):  # CPU: strips
        strip = _reflect_padded(maps, (row_start, row_stop), (col_start, col_stop))
        first_column, last_column = _varying_columns(strip) if boxed else (0, col_stop - col_start)
        if first_column == last_column:
            continue  # every window constant: the zeros stay
        strip = strip[:, :, first_column:last_column + 2 * P3M_RADIUS].contiguous()
        target = result[:, row_start:row_stop, col_start + first_column:col_start + last_column]
        first = _filter_padded(strip, orders[0], exact_addcmul)
        if len(orders) == 1:
            target.copy_(first)
            continue
        second = _filter_padded(strip, orders[1], exact_addcmul)
        # float32 x^2 + y^2 as numpy; its float32 sqrt through float64 (correctly rounded, as numpy's: torch
        # 2.13's vectorised float32 sqrt on CPU is off by an ulp in ~18 % of values; the float64 one rounds
        # back exactly, sqrt of a float32 having 2p + 2 bits of margin)
        target.copy_(first.square_().add_(second.square_()).double().sqrt_())
    return result


def gaussian_filter_float32(values: Tensor, orders: tuple[int, int]) -> Tensor:
    """``scipy.ndimage.gaussian_filter(values, 1.4, order=orders, output=np.float32)`` per image.

    Args:
        values: :math:`(B, H, W)` float (float32 maps are read exactly as float64, as scipy's line buffers do).
        orders: derivative order along rows (axis 0) and columns (axis 1), each 0 or 1.

    Returns:
        :math:`(B, H, W)` float32, bit for bit scipy's.

    Examples:
        >>> # +0.05 per column (the truncated kernel: 0.049997)
        >>> ramp = torch.arange(20.0, dtype=torch.float64).repeat(7, 1)[None] / 20
        >>> round(float(gaussian_filter_float32(ramp, (0, 1))[0, 3, 10]), 6)
        0.049997
    """
    return _filtered_strips([values.double()], (orders,))


def p3m_gradient_magnitude(values: Tensor) -> Tensor:
    """``np.sqrt(x**2 + y**2)`` of the two float32 Gaussian derivatives: :math:`(B, H, W)` float32.

    Examples:
        >>> step = torch.zeros(1, 5, 20, dtype=torch.float64); step[..., 10:] = 1.0
        >>> round(float(p3m_gradient_magnitude(step)[0, 2, 10]), 6)
        0.27251
    """
    return _filtered_strips([values], ((1, 0), (0, 1)))


def _p3m_gradient_per_image(batch: P3MBatch, engine: host_reads.Engine = "auto") -> Tensor:
    """Per-image raw P3M gradient error (the float32 sum, before the reference's ``/ 10``): :math:`(B,)` float64.

    pred and gt are filtered as one batch; the float32 error map is summed in numpy's pairwise order.
    """
    count = batch.pred_source.shape[0]
    both = ((1, 0), (0, 1))
    if host_reads.resolve_engine(engine, batch.pred_source) == "data_sized":  # each map boxed on its varying columns
        error = (_filtered_strips([batch.pred_source], both, engine)
                 .sub_(_filtered_strips([batch.gt_source], both, engine)).square_())
    else:  # one batch of pred and gt: half the kernel launches
        magnitude = _filtered_strips([batch.pred_source, batch.gt_source], both, engine)
        error = magnitude[:count].sub_(magnitude[count:]).square_()
    return pairwise_sum(error.reshape(count, -1)).double()


def _p3m_gradient_update(pred: InputMaps, gt: InputMaps, validate_args: bool, trimap: InputMaps | None = None,
                         engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor]:
    """Sum of per-image raw gradient errors and the image count: ``(float64 scalar, int64 scalar)``; ``trimap`` is
    checked as every matting metric checks it, then ignored."""
    return sum_per_image(lambda batch: _p3m_gradient_per_image(batch, engine),
                         prepare_p3m(pred, gt, trimap, validate_args=validate_args))


def p3m_gradient_error(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None, *,
                       validate_args: bool = True, engine: host_reads.Engine = "auto") -> Tensor:
    r"""P3M gradient error per image over the whole image (raw: the scripts print it / 10), averaged.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; a matte.
        trimap: optional, same layout; checked as every matting metric's (:func:`nobg_metrics._inputs.prepare`), then
            ignored (the protocol scores the whole image), so one call serves a collection.
        validate_args: run the checks that force a device sync.
        engine: ``"data_sized"`` filters each map only on the columns where its windows vary (host reads),
            ``"fixed"`` the whole image (no host read); ``"auto"`` (default) is ``"data_sized"`` on CPU and
            ``"fixed"`` elsewhere. Same values.

    Returns:
        scalar float64 tensor (lower is better).

    Examples:
        >>> gt = torch.zeros(8, 10, dtype=torch.float64); gt[2:6, 3:8] = 1.0
        >>> float(p3m_gradient_error(gt, gt)), round(float(p3m_gradient_error(gt.roll(1, 1), gt)), 4)
        (0.0, 0.1719)
    """
    check_option("engine", engine, host_reads.Engine)
    return mean_over_images(*_p3m_gradient_update(pred, gt, validate_args, trimap, engine))
