"""Multi-scale IoU (Ahmadzadeh et al., "Multiscale IOU: A Metric for Evaluation of Salient Object Detection with
Fine Structures", ICIP 2021) as PySODMetrics 1.6.2 ``MSIoU``, every threshold of the dynamic curve in one pass.

Reference (``py_sod_metrics/multiscale_iou.py``), per image, for a bool mask ``m`` and the bool gt::

    edge(m)  = hypot(ndimage.sobel(m, 0, mode="constant"), ndimage.sobel(m, 1, mode="constant")) > 0
    shrink(e, c): zero-pad at the top and left to multiples of c, any-pool c x c;   c = 2^0 ... 2^9
    ratio_c  = (|shrink(edge(m)) & shrink(edge(gt))| + 1) / (|shrink(edge(gt))| + 1)
    score(m) = np.trapz(ratio_0 ... ratio_9, dx=1/9)

``curve`` (the reference's ``dynamic``): ``score(u8 >= t)`` for the 257 thresholds ``t = 0 ... 256`` (ascending;
``u8 = floor(255 pred)``, numpy's ``astype(uint8)``; ``t = 256`` is the empty mask); ``adaptive``:
``score(pred >= min(2 mean(pred), 1))``; ``binary``: ``score(pred > threshold)``. The dataset value is the mean
over images (of the curve, then its ``max`` or ``mean``).

What the reference computes, exactly (tested against it):

- ``sobel`` of a bool array writes each pass into a bool array byte by byte: the derivative ``-1`` is stored as the
  byte 255 and the ``[1, 2, 1]`` smoothing sums those bytes modulo 256 (x86-64's conversion of a double to a byte),
  which is zero exactly where the integer Sobel response is zero. So the edge map is the integer Sobel's
  ``Sx != 0 or Sy != 0``, with its cancellations (``1 - 2 + 1 = 0``), zero outside the image::

      Sx[i, j] = T[i+1, j] - T[i-1, j],   T[r, j] = m[r, j-1] + 2 m[r, j] + m[r, j+1]   (Sy with columns)

- The edge maps are float16 (``hypot`` of bools), so ``|shrink(edge(gt))|`` is a float16 sum: the count rounded
  to float16 (exact up to 2048, ``inf`` from 65520 on, where the ratio becomes 0), then ``+ 1`` in float16. The
  numerator is an exact int64 count.
- ``np.trapz``: the nine terms ``(dx * (y[k+1] + y[k])) / 2.0``, summed in numpy's pairwise order.

Every threshold at once, without 257 edge maps (docs/msiou.md has the derivation): with levels ``u`` (``-1``
outside the image) and a row triple ``(l, c, r)``, ``[l >= t] + 2 [c >= t] + [r >= t] = #{m : q_m >= t}`` for
the four sorted values ``q = (max(l, c, r), max(c, min(l, r)), min(c, max(l, r)), min(l, c, r))``. Two such counts
differ exactly where one of the ``[q_m >= t]`` does, so ``Sx(t) != 0`` on the union of four intervals
``(min, max]`` of the ``q_m`` above and below the pixel; ``Sy`` likewise. Within a cell, the triples of one
column and one row parity form a chain (consecutive ones are paired by a pixel of the cell), and a chain's
intervals union to ``(min, max]`` over its triples: a cell of size ``c`` is an edge at ``t`` where one of its
``16 c`` chain intervals holds ``t``, and the chains of scale ``2c`` are min / max over pairs of those of scale
``c`` (the grids are nested, all anchored at the bottom-right corner). Per scale, the gt-edge cells' intervals are
unioned (sorted and clipped into disjoint pieces, or a coverage histogram for many) and histogrammed: for every
threshold, the number of gt-edge cells where the prediction has an edge.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.sod.confusion import TIE, reference_mean
from nobg_metrics.functional.sod.msiou_chains import CELL_SIZES, NUM_SCALES, NUM_THRESHOLDS, curve_hits  # noqa: F401  (NUM_THRESHOLDS: the classes' state size)
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.histogram import NUM_LEVELS, bincount_per_image
from nobg_metrics.ops.levels import lookup_levels, quantize
from nobg_metrics.ops.numpy_sum import numpy_mean

__all__ = ["msiou", "msiou_curve"]

MSIoUMode = Literal["max", "mean", "adaptive", "binary"]
"""``max`` / ``mean`` of the mean 257-threshold curve, the ``adaptive`` or the ``binary`` score."""

Statistic = Literal["curve", "adaptive", "binary"]
"""What is summed over images: the per-image curve :math:`(257,)`, the adaptive or the binary score."""


_DX = 1 / (NUM_SCALES - 1)


def mode_statistic(mode: MSIoUMode) -> Statistic:
    """The statistic a mode reads: ``max`` and ``mean`` both read the curve."""
    if mode == "max" or mode == "mean":
        return "curve"
    return mode


# ---------------------------------------------------------------------------------------------------- binary masks


def _pad_top_left(cells: Tensor, value: int, dims: tuple[int, ...]) -> Tensor:
    """Pad one row / column of ``value`` before the first entry of each of ``dims`` whose size is odd."""
    odd = [dim for dim in dims if cells.shape[dim] % 2]
    if not odd:
        return cells
    shape, index = list(cells.shape), [slice(None)] * cells.ndim
    for dim in odd:
        shape[dim] += 1
        index[dim] = slice(1, None)
    out = cells.new_full(shape, value)
    out[tuple(index)] = cells
    return out


def _any_pool(cells: Tensor) -> Tensor:
    """The next scale of a uint8 0/1 cell map :math:`(B, h, w)`: 2x2 max after a zero row / column at the top /
    left where ``h`` / ``w`` is odd (the reference's ``shrink_by_grid``, grids anchored at the bottom-right)."""
    padded = _pad_top_left(cells, 0, (1, 2))
    rows = torch.maximum(padded[:, 0::2], padded[:, 1::2])
    return torch.maximum(rows[:, :, 0::2], rows[:, :, 1::2])


def binary_edges(mask: Tensor) -> Tensor:
    """The reference's ``get_edge`` of bool masks: :math:`(B, H, W)` bool -> :math:`(B, H, W)` uint8 0/1.

    The integer Sobel responses, zero outside the image, are compared with zero (module notes)::

        Sx[i, j] = T[i+1, j] - T[i-1, j],   T[r, j] = m[r, j-1] + 2 m[r, j] + m[r, j+1]   (Sy likewise)

    Examples:
        >>> mask = torch.zeros(1, 4, 5, dtype=torch.bool); mask[0, 1:3, 2] = True
        >>> binary_edges(mask)[0].tolist()
        [[0, 1, 1, 1, 0], [0, 1, 1, 1, 0], [0, 1, 1, 1, 0], [0, 1, 1, 1, 0]]
        >>> mask = torch.tensor([[[1, 0, 1], [0, 0, 0], [0, 1, 0]]], dtype=torch.bool)
        >>> binary_edges(mask)[0].tolist()  # the centre: Sx = 2 - (1 + 1) = 0 and Sy = 0
        [[0, 0, 0], [1, 0, 1], [1, 0, 1]]
    """
    size, height, width = mask.shape
    padded = mask.new_zeros((size, height + 2, width + 2), dtype=torch.int8)
    padded[:, 1:-1, 1:-1] = mask
    rows = padded[:, :, :-2] + padded[:, :, 2:]  # (B, H + 2, W): the [1, 2, 1] smoothing along the rows
    rows += padded[:, :, 1:-1] * 2
    cols = padded[:, :-2] + padded[:, 2:]  # (B, H, W + 2)
    cols += padded[:, 1:-1] * 2
    edges = rows[:, 2:] != rows[:, :-2]
    edges |= cols[:, :, 2:] != cols[:, :, :-2]
    return edges.view(torch.uint8)


def cell_pyramid(edges: Tensor) -> list[Tensor]:
    """``shrink(edges, c)`` for the ten cell sizes: a list of :math:`(B, \\lceil H/c \\rceil, \\lceil W/c \\rceil)`
    uint8 0/1 maps (scale ``2c`` = 2x2 any-pool of scale ``c``, padded at the top / left)."""
    pyramid = [edges]
    for _ in CELL_SIZES[1:]:
        pyramid.append(_any_pool(pyramid[-1]))
    return pyramid


def _half_plus_one(count: Tensor) -> Tensor:
    """The reference's denominator ``shrunk_gt_edge.sum() + 1`` of a float16 edge map, as float64.

    numpy sums float16 in float32 and rounds the total to float16 once (a contiguous array: one inner loop);
    ``+ 1`` is a float16 addition. Counts from 65520 on are ``inf`` (the ratio is then 0).
    """
    return (count.float().half() + 1).double()


def _binary_ratios(mask: Tensor, gt_cells: list[Tensor], denominators: Tensor) -> Tensor:
    """:math:`(B, 10)` ``ratio_c`` of bool masks :math:`(B, H, W)` against the gt's cell pyramid."""
    pred_cells = cell_pyramid(binary_edges(mask))
    hits = torch.stack([(p & g).flatten(1).sum(dim=1) for p, g in zip(pred_cells, gt_cells)], dim=1)
    return (hits + 1).double() / denominators


def trapezoid(ratios: Tensor) -> Tensor:
    """``np.trapz(ratios, dx=1/9)`` over the last dimension (10 scales), bit for bit.

    ``(dx * (y[1:] + y[:-1])) / 2.0``, then numpy's pairwise sum of the nine terms: eight accumulators, combined
    ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))``, then the ninth term.

    Examples:
        >>> import numpy as np
        >>> y = np.random.default_rng(0).uniform(size=10)
        >>> trapezoid(torch.from_numpy(y)).item() == float(np.trapezoid(y, dx=1 / 9))
        True
    """
    terms = (_DX * (ratios[..., 1:] + ratios[..., :-1])) / 2.0
    r = terms.unbind(-1)
    return (((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))) + r[8]


# ------------------------------------------------------------------------------------------------ per image values


def _quantized(batch: SegBatch) -> Tensor:
    """:math:`(B, H, W)` int16 ``u8 = (pred * 255).astype(uint8)`` of the reference (after the optional stretch)."""
    if not batch.is_uint8:
        return quantize(batch.pred).to(torch.int16)
    if not batch.normalize:
        return batch.pred_raw.to(torch.int16)  # (v / 255) * 255 floors back to v in float64
    # levels absent from an image may stretch outside [0, 1]; they hold no pixel
    table = quantize(batch.level_values.clamp(0.0, 1.0))
    return lookup_levels(table, batch.pred_raw).to(torch.int16)


def _adaptive_mask(batch: SegBatch, engine: host_reads.Engine = "auto") -> Tensor:
    """``pred >= min(2 * mean(pred), 1)`` (``get_adaptive_threshold``), the mean rounded as numpy rounds it (which
    images are summed again: :func:`~nobg_metrics.functional.sod.confusion.reference_mean`'s ``engine``)."""
    n = batch.num_pixels
    if batch.is_uint8:
        values = batch.level_values
        counts = bincount_per_image(batch.pred_raw.reshape(batch.shape[0], -1).long(), NUM_LEVELS)
        fast = (counts.double() * values).sum(dim=1) / n
        near = (((values - torch.clamp(2 * fast, max=1.0)[:, None]).abs() <= TIE) & (counts > 0)).any(dim=1)

        def pixels(rows: Tensor | None) -> Tensor:
            return lookup_levels(values if rows is None else values[rows],
                                 batch.pred_raw if rows is None else batch.pred_raw[rows])

        mean = reference_mean(fast, near, pixels, engine)
        positive = (values >= torch.clamp(2 * mean, max=1.0)[:, None]).to(torch.uint8)
        return lookup_levels(positive, batch.pred_raw).bool()
    pred = batch.pred
    if pred.dtype == torch.float64:
        mean = pred.sum(dim=(-2, -1)) / n
        near = ((pred - torch.clamp(2 * mean, max=1.0)[:, None, None]).abs() <= TIE).flatten(1).any(dim=1)
        mean = reference_mean(mean, near, lambda rows: pred if rows is None else pred[rows], engine)
    else:  # float32: numpy's float32 pairwise mean, and the comparison in float32
        mean = numpy_mean(pred)
    return pred >= torch.clamp(2 * mean, max=1.0)[:, None, None]


def _binary_mask(batch: SegBatch, threshold: float) -> Tensor:
    """``pred > threshold`` (uint8 predictions through their level table)."""
    if batch.is_uint8:
        return lookup_levels((batch.level_values > threshold).to(torch.uint8), batch.pred_raw).bool()
    return batch.pred > threshold


def _agreement(levels_or_masks: Tensor, statistic: Statistic, empty: Tensor) -> Tensor:
    """Pixel agreement ``(TP + TN) / N`` of the binarised prediction with an all-background (``empty``) or
    all-foreground gt: per threshold for the curve (``#(u8 < t) / N`` or ``#(u8 >= t) / N``, from the :math:`(B, H, W)`
    levels), else of the :math:`(B, H, W)` masks. Returns :math:`(B, 257)` or :math:`(B,)` float64."""
    size, n = levels_or_masks.shape[0], levels_or_masks[0].numel()
    if statistic == "curve":
        hist = bincount_per_image(levels_or_masks.reshape(size, -1).long(), NUM_LEVELS)
        below = torch.cat([torch.zeros_like(hist[:, :1]), hist.cumsum(dim=1)], dim=1)  # #(u8 < t), t = 0 ... 256
        return torch.where(empty[:, None], below, n - below).double() / n
    positive = levels_or_masks.flatten(1).sum(dim=1)
    return torch.where(empty, n - positive, positive).double() / n


def _msiou_per_image(batch: SegBatch, statistics: frozenset[Statistic], threshold: float, empty_gt: EmptyGt,
                     engine: host_reads.Engine = "auto") -> dict[str, Tensor]:
    """``{statistic: (B, ...) float64 per-image scores}`` of one equal-size group (curves :math:`(B, 257)`); the
    ``engine`` (resolved once for the group) picks the data-sized or the sync-free form of each step, same values."""
    gt = batch.gt
    engine = host_reads.resolve_engine(engine, gt)
    gt_cells = cell_pyramid(binary_edges(gt))
    denominators = _half_plus_one(torch.stack([cells.flatten(1).sum(dim=1) for cells in gt_cells], dim=1))  # (B, 10)
    foreground = gt.flatten(1).sum(dim=1)
    empty, degenerate = foreground == 0, (foreground == 0) | (foreground == batch.num_pixels)
    # the agreement policy reads the degenerate images only (none: nothing to do, a free read on CPU)
    agreement = empty_gt == "agreement" and (engine == "fixed" or bool(degenerate.any()))
    out: dict[str, Tensor] = {}
    for statistic in sorted(statistics):
        if statistic == "curve":
            binarised = _quantized(batch)
            value = trapezoid((curve_hits(binarised, gt_cells, engine) + 1).double() / denominators[:, None, :])
        else:
            binarised = _adaptive_mask(batch, engine) if statistic == "adaptive" else _binary_mask(batch, threshold)
            value = trapezoid(_binary_ratios(binarised, gt_cells, denominators))
        if agreement:
            shape = (-1,) + (1,) * (value.ndim - 1)
            value = torch.where(degenerate.view(shape), _agreement(binarised, statistic, empty), value)
        out[statistic] = value
    return out


def _check_msiou_args(mode: MSIoUMode, threshold: float, empty_gt: EmptyGt) -> None:
    check_option("mode", mode, MSIoUMode)
    check_number("threshold", threshold, low=0.0, high=1.0)
    check_option("empty_gt", empty_gt, EmptyGt)


def _msiou_update(pred: InputMaps, gt: InputMaps, statistics: frozenset[Statistic], threshold: float,
                  normalize: bool, empty_gt: EmptyGt, validate_args: bool,
                  engine: host_reads.Engine = "auto") -> tuple[dict[str, Tensor], Tensor]:
    """Sums over images of the requested statistics (curve :math:`(257,)`, others scalar float64) and the count."""
    batches = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
    return sum_per_image(lambda batch: _msiou_per_image(batch, statistics, threshold, empty_gt, engine), batches)


def _msiou_compute(mode: MSIoUMode, total: Tensor, count: Tensor) -> Tensor:
    """The dataset value of a mode from its statistic's sum and the image count."""
    value = mean_over_images(total, count)
    if mode == "max":
        return value.max()
    if mode == "mean":
        return value.mean()
    return value


def msiou_curve(pred: InputMaps, gt: InputMaps, *, normalize: bool = False, empty_gt: EmptyGt = "agreement",
                validate_args: bool = True) -> Tensor:
    r"""The mean per-image MSIoU curve over the thresholds ``u8 >= t``, ``t = 0 ... 256`` (PySODMetrics' ``dynamic``).

    Args: as :func:`msiou`.

    Returns:
        :math:`(257,)` float64, index ``t`` <-> threshold ``floor(255 pred) >= t`` (ascending).

    Examples:
        >>> gt = torch.zeros(6, 8, dtype=torch.bool); gt[1:5, 2:6] = True
        >>> curve = msiou_curve(gt.double(), gt)
        >>> curve.shape, round(curve[0].item(), 4), curve[1].item(), round(curve[256].item(), 4)
        (torch.Size([257]), 0.9492, 1.0, 0.3936)
    """
    _check_msiou_args("max", 0.5, empty_gt)
    sums, count = _msiou_update(pred, gt, frozenset({"curve"}), 0.5, normalize, empty_gt, validate_args)
    return mean_over_images(sums["curve"], count)


def msiou(pred: InputMaps, gt: InputMaps, mode: MSIoUMode = "max", *, threshold: float = 0.5,
          normalize: bool = False, empty_gt: EmptyGt = "agreement", validate_args: bool = True) -> Tensor:
    r"""Multi-scale IoU: the area under ``ratio_c = (|S_c(E_pred) \cap S_c(E_gt)| + 1) / (|S_c(E_gt)| + 1)`` over
    the cell sizes :math:`c = 2^0 \dots 2^9` (``np.trapz``, ``dx = 1/9``), per image, averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        mode: ``"max"`` / ``"mean"`` of the mean curve over the 257 thresholds ``floor(255 pred) >= t``
            (PySODMetrics ``dynamic``), ``"adaptive"`` (``pred >= min(2 mean, 1)``) or ``"binary"``
            (``pred > threshold``).
        threshold: the binary mode's strict threshold.
        normalize: per-image min-max stretch of ``pred`` first (PySODMetrics' protocol).
        empty_gt: ``"reference"`` keeps PySODMetrics' value for an all-background gt (1 for any prediction: no gt
            edge, so every ratio is ``(0 + 1) / (0 + 1)``) and an all-foreground one (the image border is its
            edge); ``"agreement"`` scores both by the pixel agreement of the binarised prediction.
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor.

    Examples:
        >>> gt = torch.zeros(6, 8, dtype=torch.bool); gt[1:5, 2:6] = True
        >>> pred = torch.zeros(6, 8); pred[1:5, 2:5] = 0.9
        >>> round(msiou(pred, gt, "binary").item(), 4)
        0.9643
    """
    _check_msiou_args(mode, threshold, empty_gt)
    statistic = mode_statistic(mode)
    sums, count = _msiou_update(pred, gt, frozenset({statistic}), threshold, normalize, empty_gt, validate_args)
    return _msiou_compute(mode, sums[statistic], count)
