"""Weighted F-measure (Margolin, Zelnik-Manor, Tal, "How to evaluate foreground maps?", CVPR 2014).

Reference: PySODMetrics 1.6.2 ``WeightedFmeasure.cal_wfm`` (a line-for-line port of the authors' MATLAB
``WFb.m``); the MATLAB line sits beside each step below. Per image, on the prepared data (``pred`` float64 in
[0, 1], ``gt`` bool), then the mean over images:

- ``Dst, Idx = bwdist(GT)``: distance of every pixel to the nearest gt pixel and that pixel. Only what changes a
  bit of the result is computed (proofs in docs/weighted_f_measure.md): the squared distance ``D`` exactly up
  to 265² (``B`` is exactly 2.0 in float64 for every ``D >= 70 226``:
  :func:`nobg_metrics.ops.distance.bounded_nearest`), and the nearest gt pixel only for the background
  pixels the 7 x 7 Gaussian reads from a gt pixel (``D <= 18``), with scipy's choice among equidistant ones
  (:func:`nobg_metrics.ops.nearest_band.nearest_in_band`).
- ``EA = imfilter(Et, fspecial('gaussian', 7, 5))``: ``scipy.ndimage.convolve(mode="constant", cval=0)``,
  i.e. zero padding, "same" size; the kernel is separable, so two 1-D passes.
- ``beta2`` is the reference's ``beta`` argument, which enters as β²: ``(1 + β²) R P / (R + β² P + eps)``.

Degenerate gt: all background — ``empty_gt="reference"`` gives the reference's 0, ``"agreement"`` gives
``1 - mean(pred)`` (the soft pixel agreement with an empty mask: a perfect all-zero prediction scores 1).
All foreground — ``"reference"`` runs the formula (defined: no 0/0 once the gt is non-empty; because the
Gaussian is zero-padded an all-zero prediction still scores slightly above 0 there), ``"agreement"`` gives
``mean(pred)``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.ops import banded, host_reads
from nobg_metrics.ops.distance import bounded_nearest
from nobg_metrics.ops.gt_reuse import gt_only
from nobg_metrics.ops.histogram import NUM_LEVELS, lookup_levels
from nobg_metrics.ops.nearest_band import BandIndex, nearest_in_band
from nobg_metrics.ops.uint8_stats import count

__all__ = ["weighted_f_measure"]

EPS = 2.220446049250313e-16
"""``np.spacing(1)``, the reference's eps."""

_DECAY = math.log(0.5) / 5
"""``log(1 - 0.5) / 5`` of the background weight ``B = 2 - exp(_DECAY * Dst)``."""


def matlab_gaussian_1d(size: int = 7, sigma: float = 5.0) -> Tensor:
    """The 1-D factor of MATLAB ``fspecial('gaussian', size, sigma)``: the 2-D kernel is its outer product.

    ``fspecial`` builds ``h = exp(-(x² + y²) / (2σ²))``, zeroes entries below ``eps * max(h)`` (none for
    7 x 7, σ = 5) and divides by the sum; ``exp`` of a sum factorises, so ``h = u uᵀ`` with ``u`` the
    normalised 1-D Gaussian.

    Returns:
        :math:`(size,)` float64, sums to 1.

    Examples:
        >>> kernel = matlab_gaussian_1d()
        >>> round(float(kernel.sum()), 12), round(float(kernel[3]), 6)
        (1.0, 0.154388)
    """
    half = (size - 1) / 2
    x = torch.arange(size, dtype=torch.float64) - half
    u = torch.exp(-(x * x) / (2 * sigma * sigma))
    return u / u.sum()


def _gaussian_same(image: Tensor) -> Tensor:
    """``conv2(image, fspecial('gaussian', 7, 5), 'same')`` with zero padding.

    Two 7-tap passes as banded matrix products (:mod:`nobg_metrics.ops.banded`: float64 ``conv2d`` has no
    fast CPU kernel, and 7 shifted multiply-adds per axis cost ~3x the products).

    Args:
        image: :math:`(B, H, W)` float64.

    Returns:
        :math:`(B, H, W)` float64 (a view; on a thin image, a map filled strip by strip).
    """
    kernel = matlab_gaussian_1d().tolist()  # Python floats: no device sync, taps are constants
    size, height, width = image.shape
    parts = banded.strips(slice(0, height), slice(0, width), size, 3)  # 3: the kernel's half-size
    if len(parts) == 1:
        row_pass = banded.correlate_rows(banded.tiled(image, pad=3), kernel)
        return banded.correlate_columns(row_pass, kernel).valid()
    out = torch.empty_like(image)
    for rows, cols in parts:  # bounded buffers on any aspect ratio (a one-pixel-thin image pays no 32x layout)
        window = image[:, max(rows.start - 3, 0):rows.stop + 3, max(cols.start - 3, 0):cols.stop + 3]
        pads = (3 - (cols.start - max(cols.start - 3, 0)), 3 - (min(cols.stop + 3, width) - cols.stop),
                3 - (rows.start - max(rows.start - 3, 0)), 3 - (min(rows.stop + 3, height) - rows.stop))
        padded = torch.nn.functional.pad(window.unsqueeze(1), pads)[:, 0]  # zeros beyond the image only
        part = banded.correlate_rows(banded.tiled(padded), kernel)
        out[:, rows, cols] = banded.correlate_columns(part, kernel).valid()
    return out


SATURATION_RADIUS = 265
"""``B = 2 - exp(_DECAY * sqrt(D))`` is exactly 2.0 in float64 for every squared distance ``D > 265²``: the
distance transform is exact up to there (docs/weighted_f_measure.md#the-distances-saturate)."""

BAND_SQUARED = 18
"""``3² + 3²``: a background pixel the 7 x 7 Gaussian reads from a gt pixel is at most this far from the gt."""

_WEIGHT_TABLES: dict[torch.device, Tensor] = {}


def _background_weight_table(device: torch.device) -> Tensor:
    """``B(s) = 2 - exp(_DECAY * sqrt(s))`` for every integer squared distance ``s <= 266²``, float64.

    The same float64 ops the per-pixel formula would run, once per device (70 757 ``exp`` instead of one per
    pixel); the entries from ``s = 70 226`` on are exactly 2.0, and the distance transform returns
    ``min(D, 266²)``.
    """
    if device not in _WEIGHT_TABLES:
        size = (SATURATION_RADIUS + 1) ** 2 + 1
        squared = torch.arange(size, device=device, dtype=torch.float64)
        _WEIGHT_TABLES[device] = squared.sqrt_().mul_(_DECAY).exp_().neg_().add_(2)
    return _WEIGHT_TABLES[device]


def _absolute_error(batch: SegBatch) -> Tensor:
    """``E = |pred - gt|`` in float64: :math:`(B, H, W)`.

    uint8 predictions: each image's E takes one of 512 values (``pred`` off the gt, ``1 - pred`` on it), made
    once from the level table and read per pixel at ``level + 256 * gt`` — the same float64 ops as per pixel,
    one lookup instead of making ``pred`` and two passes.
    """
    gt = batch.gt
    if batch.is_uint8:
        values = batch.level_values  # (B, 256), as batch.pred holds them
        table = torch.cat([values, 1 - values], dim=1)  # (B, 512)
        return lookup_levels(table, batch.pred_raw.int().add_(gt, alpha=NUM_LEVELS))
    pred = batch.pred.double()
    error = torch.sub(1, pred)
    return torch.where(gt, error, pred, out=error)  # |pred - gt|, one buffer


class _GtTerms(NamedTuple):
    """What the weighted F-measure derives from the gt alone (kept across methods by :mod:`ops.gt_reuse`).

    Attributes:
        background_weight: :math:`(B, H, W)` float64 ``B = 2 - exp(log(0.5) / 5 * Dst)`` off the gt, 0 on it.
        band: the nearest gt pixel of every background pixel of ``box``'s crop that the Gaussian reads.
        box: the gt's bounding box with the kernel's 3-pixel margin.
        fg_count: :math:`(B,)` int64 gt pixels.
    """

    background_weight: Tensor
    band: BandIndex
    box: host_reads.Window
    fg_count: Tensor


def _gt_terms(gt: Tensor) -> _GtTerms:
    """:class:`_GtTerms` of a :math:`(B, H, W)` bool gt."""
    # [Dst, IDXT] = bwdist(dGT): min(D, 266²) of the squared distance D (B saturates beyond 265²), and the column
    # of the nearest gt pixel (the row follows from D where the index is needed)
    nearest = bounded_nearest(gt, SATURATION_RADIUS)
    squared = nearest.squared
    # B(~GT) = 2 - 1 * exp(log(1 - 0.5) / 5 .* Dst(~GT)); kept off the gt only (0 on it: FPw sums Ew(~GT))
    table = _background_weight_table(gt.device)
    weight = table.index_select(0, squared.view(-1)).view(squared.shape).masked_fill_(gt, 0.0)
    # EA is read on the gt only, so Et is needed within 3 pixels of it: the gt's box plus a 3-pixel margin,
    # and there only on the band (IDXT of the background pixels with D <= 18)
    box = host_reads.window(gt, 3)  # 3: the half-size of the 7 x 7 kernel
    band = nearest_in_band(gt, nearest, BAND_SQUARED, box.rows, box.cols)
    return _GtTerms(weight, band, box, count(gt.view(torch.uint8).flatten(1)))


def _weighted_f_per_image(batch: SegBatch, beta2: float, empty_gt: EmptyGt) -> Tensor:
    """Per-image weighted F-measure.

    Args:
        batch: equal-size images.
        beta2: β².
        empty_gt: policy for all-background / all-foreground gts.

    Returns:
        :math:`(B,)` float64.
    """
    gt = batch.gt
    terms = gt_only("weighted_f", gt, lambda: _gt_terms(gt))
    box = terms.box
    # E = abs(FG - dGT);  Et(~GT) = Et(IDXT(~GT))  (on the band; gt pixels are their own nearest pixel)
    error = _absolute_error(batch)
    # EA = imfilter(Et, K);  MIN_E_EA(GT & EA < E) = EA(GT & EA < E);  on the gt Ew = MIN_E_EA (B = 1).
    error_nearest = terms.band.spread(error, box.rows, box.cols)
    blurred = _gaussian_same(error_nearest)[:, box.inner_rows, box.inner_cols]  # zero padding at the border
    inner = box.inner
    gt_inner = gt[inner]  # every gt pixel lies in the box
    on_gt = torch.minimum(error[inner], blurred)
    fg_sum = torch.where(gt_inner, on_gt, 0.0).sum(dim=(-2, -1))  # sum(Ew(GT)) (B = 1 there)
    bg_sum = torch.mul(terms.background_weight, error).sum(dim=(-2, -1))  # sum(Ew(~GT)), Ew = E .* B there
    fg_count = terms.fg_count
    # TPw = sum(dGT(:)) - sum(sum(Ew(GT)));  FPw = sum(sum(Ew(~GT)))
    tpw = fg_count.double() - fg_sum
    fpw = bg_sum
    # R = 1 - mean2(Ew(GT));  P = TPw ./ (eps + TPw + FPw);  Q = (1 + Beta^2) * R * P ./ (eps + R + Beta^2 * P)
    recall = 1 - fg_sum / fg_count.clamp(min=1)
    precision = tpw / (tpw + fpw + EPS)
    value = (1 + beta2) * recall * precision / (recall + beta2 * precision + EPS)
    zero = torch.zeros((), dtype=torch.float64, device=gt.device)
    empty = fg_count == 0
    if empty_gt == "reference":
        return torch.where(empty, zero, value)
    mean_pred = batch.pred.double().mean(dim=(-2, -1))
    full = fg_count == batch.num_pixels
    return torch.where(empty, 1 - mean_pred, torch.where(full, mean_pred, value))


def _check_weighted_f_args(beta2: float, empty_gt: EmptyGt) -> None:
    check_number("beta2", beta2, low=0.0)
    check_option("empty_gt", empty_gt, EmptyGt)


def _weighted_f_update(pred: InputMaps, gt: InputMaps, beta2: float, normalize: bool, empty_gt: EmptyGt,
                       validate_args: bool) -> tuple[Tensor, Tensor]:
    """Sum of per-image weighted F and the number of images of a batch: ``(float64 scalar, int64 scalar)``."""
    batches = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
    return sum_per_image(lambda batch: _weighted_f_per_image(batch, beta2, empty_gt), batches)


def _weighted_f_compute(total: Tensor, count: Tensor) -> Tensor:
    """Dataset weighted F: the mean of per-image values."""
    return mean_over_images(total, count)


def weighted_f_measure(pred: InputMaps, gt: InputMaps, beta2: float = 1.0, *, normalize: bool = False,
                       empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Weighted F-measure :math:`F^w_\beta = \frac{(1+\beta^2) R^w P^w}{\beta^2 P^w + R^w}` per image, averaged.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        beta2: β² (PySODMetrics' ``beta``; 1 in the paper and the reference).
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"agreement"`` (``1 - mean(pred)`` for an empty gt, ``mean(pred)`` for a full one) or
            ``"reference"`` (0 for an empty gt, the formula for a full one).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor (higher is better).

    Examples:
        >>> gt = torch.zeros(1, 8, 10, dtype=torch.bool)
        >>> gt[0, 2:6, 3:8] = True
        >>> weighted_f_measure(gt.double(), gt)
        tensor(1., dtype=torch.float64)
        >>> weighted_f_measure(torch.full((1, 8, 10), 0.5, dtype=torch.float64), gt)
        tensor(0.3215, dtype=torch.float64)
    """
    _check_weighted_f_args(beta2, empty_gt)
    return _weighted_f_compute(*_weighted_f_update(pred, gt, beta2, normalize, empty_gt, validate_args))
