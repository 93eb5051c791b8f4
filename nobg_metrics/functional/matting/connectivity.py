"""Connectivity error of alpha mattes, as the Deep Image Matting evaluation computes it.

Reference (DIM MATLAB evaluation, Xu et al. 2017, ``compute_connectivity_error.m``; Rhemann et al. 2009)::

    pred = single(pred)/255;  target = single(target)/255;
    thresh_steps = 0:step:1;  l_map = -ones(size(pred));
    for ii = 2:numel(thresh_steps)
        cc = bwconncomp(pred >= thresh_steps(ii) & target >= thresh_steps(ii), 4);
        omega = the largest component (ties: the first in column-major order; none -> all 0)
        l_map(l_map == -1 & omega == 0) = thresh_steps(ii-1);
    end
    l_map(l_map == -1) = 1;
    pred_d = pred - l_map;  target_d = target - l_map;
    pred_phi = 1 - pred_d .* single(pred_d >= 0.15);  target_phi = 1 - target_d .* single(target_d >= 0.15);
    loss = sum(sum(abs(pred_phi - target_phi) .* single(trimap == 128)));   % papers print loss / 1000

Precision: mattes are float32 (``single``), thresholds are compared in the mattes' dtype (float32:
``single(k)/255 >= single(m/10)``; float64 input against the float64 ``m/10``), ``d`` and ``phi`` are
computed in that dtype and summed in float64. ``thresh_steps`` are ``m / n`` when ``1/step`` is an
integer ``n`` (0.1 -> 0, 0.1, ..., 1), else ``m * step`` for ``m = 0 .. floor(1/step)``; with such a
step the last threshold is below 1 and untouched pixels keep ``l = 1``, as in the reference.

All thresholds of a batch are labelled in one call: the joint masks are nested, so one level map
``n = #{m : min(pred, gt) >= t_m}`` holds them all and :func:`nobg_metrics.ops.level_components.
connected_level_count` returns, per pixel, how many leading thresholds' largest components hold it.
"""

from __future__ import annotations

import math
from functools import partial

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_number
from nobg_metrics._matting_inputs import MatteBatch, matte_values
from nobg_metrics.functional._per_image import mean_over_images
from nobg_metrics.functional.matting.sad_mse import matting_update, region_sum
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.histogram import NUM_LEVELS
from nobg_metrics.ops.level_components import connected_level_count

__all__ = ["connectivity_error"]

DIM_THETA = 0.15
"""``phi`` ignores distances to the connected level below this (``d >= 0.15``)."""


def threshold_steps(step: float) -> list[float]:
    """MATLAB's ``0:step:1`` as Python floats (see the module docstring).

    Examples:
        >>> threshold_steps(0.25)
        [0.0, 0.25, 0.5, 0.75, 1.0]
        >>> threshold_steps(0.1)[3]
        0.3
    """
    inverse = 1.0 / step
    count = math.floor(inverse + 1e-9)
    if abs(inverse - round(inverse)) < 1e-9:
        return [m / count for m in range(count + 1)]
    return [m * step for m in range(count + 1)]


def _connected_count(batch: MatteBatch, thresholds: Tensor, engine: host_reads.Engine) -> Tensor:
    """How many leading thresholds' largest joint components hold each pixel: :math:`(B, H, W)` int32 in 0..M.

    Args:
        batch: the mattes (``pred``, ``gt``: :math:`(B, H, W)` float32/float64, or their uint8 levels).
        thresholds: :math:`(M + 1,)` ``t_0 = 0 < t_1 < ... < t_M`` in the mattes' dtype.
        engine: the labelling's form (:func:`~nobg_metrics.ops.level_components.connected_level_count`).
    """
    # level map n = #{m >= 1 : min(pred, gt) >= t_m}: the joint masks of all thresholds are {n >= m}
    if batch.levels is not None:  # uint8: x -> single(x)/255 is monotone, so min commutes with it; 256-entry table
        pred_levels, gt_levels = batch.levels
        # int16: as the labelling reads it
        table = torch.bucketize(_level_values(batch), thresholds[1:], right=True).to(torch.int16)
        joint = torch.minimum(pred_levels, gt_levels)
        level_map = table.index_select(0, joint.view(-1).int()).view(joint.shape)
    else:
        level_map = torch.bucketize(torch.minimum(batch.pred, batch.gt), thresholds[1:], right=True)
    return connected_level_count(level_map, thresholds.numel() - 1, engine=engine)


def _thresholds(batch: MatteBatch, steps: list[float]) -> Tensor:
    """``t_0 .. t_M`` in the mattes' dtype, rounded as ``single(m/10)`` for float32: :math:`(M + 1,)`."""
    # one fill per step: a tensor from a list would be a host-to-device copy
    return torch.stack([torch.full((), step, dtype=batch.dtype, device=batch.device) for step in steps])


def _level_values(batch: MatteBatch) -> Tensor:
    """The value of every uint8 level, as ``batch.pred`` holds it (``single(k)/255``): :math:`(256,)`."""
    return matte_values(torch.arange(NUM_LEVELS, device=batch.device, dtype=torch.uint8), batch.dtype)


def _phi(alpha: Tensor, level: Tensor) -> Tensor:
    """``phi = 1 - d .* (d >= 0.15)``, ``d = alpha - l``: :math:`(B, H, W)` in ``alpha``'s dtype."""
    distance = alpha - level
    return 1 - distance * (distance >= DIM_THETA)


def _connectivity_per_image(batch: MatteBatch, steps: list[float], engine: host_reads.Engine = "auto") -> Tensor:
    """Per-image DIM connectivity error (raw, not /1000): :math:`(B,)` float64.

    ``l = t_k`` for the k leading thresholds whose largest component holds the pixel (``t_M`` -> 1). uint8
    mattes take one of 256 values and ``l`` one of M + 1, so ``phi`` is a (M + 1) x 256 table computed with
    the same float ops, read per pixel at ``k * 256 + level`` (two lookups instead of two float maps and
    eight passes of arithmetic).
    """
    thresholds = _thresholds(batch, steps)
    count = _connected_count(batch, thresholds, engine)
    levels = torch.cat([thresholds[:-1], torch.ones_like(thresholds[:1])])
    if batch.levels is not None:
        phi = _phi(_level_values(batch)[None, :], levels[:, None]).view(-1)  # (M + 1) * 256
        base = count.mul_(NUM_LEVELS)
        pred_phi, gt_phi = (phi.index_select(0, source.int().add_(base).view(-1)).view(base.shape)
                            for source in batch.levels)  # int32 + int32: a mixed uint8 add is ~1.5x slower
        difference = pred_phi.sub_(gt_phi)
    else:
        level = levels.index_select(0, count.view(-1)).view(count.shape)
        difference = _phi(batch.pred, level) - _phi(batch.gt, level)
    return region_sum(difference.abs_(), batch.region)


def _connectivity_update(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None, step: float,
                         clamp_to_trimap: bool, validate_args: bool,
                         engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor]:
    """Sum of per-image connectivity errors and the image count: ``(float64 scalar, int64 scalar)``."""
    per_image = partial(_connectivity_per_image, steps=threshold_steps(step), engine=engine)
    return matting_update(per_image, pred, gt, trimap, clamp_to_trimap, validate_args)


def connectivity_error(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None, step: float = 0.1, *,
                       clamp_to_trimap: bool = False, allow_host_sync: bool | None = None,
                       validate_args: bool = True, engine: host_reads.Engine = "auto") -> Tensor:
    r"""Connectivity error per image (raw: papers print it /1000), averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; a matte (not binarised).
        trimap: optional, same layout; only the unknown region (128 / 0.5) is scored, else the whole image.
        step: the threshold step of the sweep ``0:step:1`` (DIM: 0.1), in (0, 1].
        clamp_to_trimap: set ``pred`` to the trimap's known values (0 / 1) before scoring.
        allow_host_sync: deprecated alias of ``engine``: ``True`` is ``engine="data_sized"``, ``False`` ``"auto"``
            (a ``DeprecationWarning``).
        validate_args: run the checks that force a device sync.
        engine: the labelling's form (docs/connected_components.md). ``"data_sized"``: size the run and edge lists
            by the data and run the union-find to convergence: far less device work, but the host reads counts
            back (37-39 syncs per call on a 1024² image). ``"fixed"``: fixed sizes and round counts, no sync.
            ``"auto"`` (default): ``"data_sized"`` on CPU, where host reads are free, ``"fixed"`` elsewhere.
            Same values either way.

    Returns:
        scalar float64 tensor (lower is better). An image whose region is empty (a trimap without unknown
        pixels) scores 0; a threshold with no joint foreground has an empty largest component (MATLAB
        would index an empty list), so its pixels get ``l = t_{m-1}``.

    Examples:
        >>> gt = torch.zeros(6, 8); gt[1:5, 1:6] = 1.0
        >>> pred = gt.clone(); pred[0, 7] = 1.0       # a detached speck
        >>> float(connectivity_error(gt, gt)), round(float(connectivity_error(pred, gt)), 6)
        (0.0, 1.0)
    """
    engine = host_reads.engine_option(engine, allow_host_sync, "connectivity_error")
    check_number("step", step, low=0.0, low_open=True, high=1.0)
    return mean_over_images(*_connectivity_update(pred, gt, trimap, step, clamp_to_trimap, validate_args, engine))
