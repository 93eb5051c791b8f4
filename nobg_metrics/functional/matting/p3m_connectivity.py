"""The P3M / AM-2k / AIM-500 connectivity error (skimage labelling, float64 thresholds, empty levels skipped).

Reference (``compute_connectivity_loss_whole_image`` in ``core/evaluate.py`` of JizhiziLi/P3M, GFM, AIM)::

    thresh_steps = np.arange(0, 1.1, step)                  # 0, 0.1, 0.2, 0.30000000000000004, ..., 1.0
    l_map = -1 * np.ones((h, w), dtype=np.float32)
    for i in range(1, thresh_steps.size):
        cc = regionprops(label((pd >= thresh_steps[i]) & (gt >= thresh_steps[i]), connectivity=1))
        if no component: continue                            # DIM assigns t_{i-1} here; P3M leaves -1
        omega = cc[argmax(areas)]                            # ties: the first label (raster order)
        l_map[(l_map == -1) & (omega == 0)] = thresh_steps[i-1]
    l_map[l_map == -1] = 1
    d_pd = pd - l_map;  phi_pd = 1 - d_pd * (d_pd >= 0.15).astype(np.float32)   # likewise gt
    loss = np.sum(np.abs(phi_pd - phi_gt)) / 1000            # we return the sum (raw)

How we compute it: the joint masks are nested, so the level map ``n = #{i >= 1 : min(pd, gt) >= t_i}`` (float64
comparisons, as numpy's) holds all of them, and :func:`nobg_metrics.ops.level_components.connected_level_count`
returns per pixel the number ``k`` of leading levels whose largest component holds it, ties broken by the first
pixel in raster order (``order="raster"``: skimage's label order, where DIM's MATLAB takes column-major). A pixel
gets ``l = t_k`` unless ``k`` reaches ``K = max n`` (the levels that have any component: all higher ones are
empty and skipped), then ``l = 1``. ``l`` is float32 (the reference's ``l_map``); ``d`` and ``phi`` are
computed in numpy's dtypes: float64 for a float64 / uint8 prediction and the gt, float32 for a float32
prediction (``float32 - float32``, ``d >= float32(0.15)``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_number
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.matting.p3m import P3MBatch, prepare_p3m
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.level_components import connected_level_count

__all__ = ["p3m_connectivity_error"]

P3M_THETA = 0.15
"""``phi`` ignores distances to the connected level below this (``d >= 0.15``)."""


def p3m_thresholds(step: float = 0.1) -> list[float]:
    """``np.arange(0, 1.1, step)`` as Python floats: ``ceil(1.1 / step)`` values ``i * step``.

    Examples:
        >>> p3m_thresholds()[6], len(p3m_thresholds())
        (0.6000000000000001, 11)
    """
    return [index * step for index in range(math.ceil(1.1 / step))]


def _fill(values: list[float], device: torch.device) -> Tensor:
    """float64 constants on ``device`` (one fill each: a tensor from a list would be a host-to-device copy)."""
    return torch.stack([torch.full((), value, dtype=torch.float64, device=device) for value in values])


def _uint8_values(device: torch.device) -> Tensor:
    """``k / 255`` of every uint8 level, as the scripts' ``png / 255.``: :math:`(256,)` float64."""
    return torch.arange(256, dtype=torch.float64, device=device).div_(torch.full((), 255.0, dtype=torch.float64,
                                                                               device=device))


def _level_count(matte: Tensor, steps: Tensor) -> Tensor:
    """``#{i >= 1 : matte >= t_i}`` per pixel (float64 comparisons; uint8 through its 256 values): int32."""
    if matte.dtype == torch.uint8:
        table = torch.bucketize(_uint8_values(matte.device), steps, right=True, out_int32=True)
        return table.index_select(0, matte.reshape(-1).int()).view(matte.shape)
    return torch.bucketize(matte.double(), steps, right=True, out_int32=True)


def _phi(alpha: Tensor, level: Tensor) -> Tensor:
    """``1 - d * (d >= 0.15).astype(float32)``, ``d = alpha - l``, in ``alpha``'s dtype; ``level`` (``l`` in
    that dtype, float32-rounded values) is overwritten and returned."""
    distance = torch.sub(alpha, level, out=level)
    theta = torch.full((), P3M_THETA, dtype=alpha.dtype, device=alpha.device)  # float32(0.15) for float32 maps
    return torch.sub(1.0, distance.mul_(distance >= theta), out=distance)


def _p3m_connectivity_per_image(batch: P3MBatch, thresholds: list[float],
                                engine: host_reads.Engine = "auto") -> Tensor:
    """Per-image raw P3M connectivity error (before the reference's ``/ 1000``): :math:`(B,)` float64.

    ``l`` takes M + 1 values (``t_0 .. t_{M-1}``, 1), indexed per pixel by ``k' = k if k < K else M``; for a uint8
    gt ``phi(gt)`` is an (M + 1) x 256 table read at ``k' * 256 + level`` (the same float64 operations).
    """
    device = batch.pred_source.device
    num_levels = len(thresholds) - 1
    steps = _fill(thresholds[1:], device)
    level_map = torch.minimum(_level_count(batch.pred_source, steps), _level_count(batch.gt_source, steps))
    count = connected_level_count(level_map, num_levels, engine=engine, order="raster")  # skimage's tie order
    nonempty = level_map.amax(dim=(1, 2), keepdim=True).int()  # K: levels 1..K have a component, the rest are skipped
    row = torch.where(count < nonempty, count, num_levels).contiguous().view(-1)
    levels = torch.cat([_fill(thresholds[:-1], device), torch.ones(1, dtype=torch.float64, device=device)])
    levels = levels.float()  # the float32 l_map
    shape = batch.pred_source.shape
    if batch.pred_is_single:
        pred_phi = _phi(batch.pred_source.float(), levels.index_select(0, row).view(shape)).double()
    else:
        pred_phi = _phi(batch.pred, levels.double().index_select(0, row).view(shape))
    if batch.gt_source.dtype == torch.uint8:
        table = _phi(_uint8_values(device)[None, :], levels.double()[:, None].expand(-1, 256).clone())
        gt_phi = table.view(-1).index_select(0, row.mul_(256).add_(batch.gt_source.reshape(-1).int()))
    else:
        gt_phi = _phi(batch.gt, levels.double().index_select(0, row).view(shape)).view(-1)
    difference = pred_phi.view(-1).sub_(gt_phi).abs_().view(shape)
    return difference.sum(dim=(1, 2), dtype=torch.float64)


def _p3m_connectivity_update(pred: InputMaps, gt: InputMaps, step: float, validate_args: bool,
                             trimap: InputMaps | None = None, engine: host_reads.Engine = "auto"
                             ) -> tuple[Tensor, Tensor]:
    """Sum of per-image raw connectivity errors and the image count: ``(float64 scalar, int64 scalar)``; ``trimap``
    is checked as every matting metric checks it, then ignored."""
    thresholds = p3m_thresholds(step)
    return sum_per_image(lambda batch: _p3m_connectivity_per_image(batch, thresholds, engine),
                         prepare_p3m(pred, gt, trimap, validate_args=validate_args))


def p3m_connectivity_error(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None, step: float = 0.1, *,
                           allow_host_sync: bool | None = None, validate_args: bool = True,
                           engine: host_reads.Engine = "auto") -> Tensor:
    r"""P3M connectivity error per image over the whole image (raw: the scripts print it / 1000), averaged.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; a matte.
        trimap: optional, same layout; checked as every matting metric's (:func:`nobg_metrics._inputs.prepare`), then
            ignored (the protocol scores the whole image), so one call serves a collection.
        step: the threshold step of ``np.arange(0, 1.1, step)`` (the reference: 0.1), in (0, 1].
        allow_host_sync: deprecated alias of ``engine``: ``True`` is ``engine="data_sized"``, ``False`` ``"auto"``
            (a ``DeprecationWarning``).
        validate_args: run the checks that force a device sync.
        engine: the labelling's form: ``"data_sized"`` labels with lists sized by the data (faster off CPU, ~40
            host reads per call), ``"fixed"`` with fixed sizes and no sync; ``"auto"`` (default) is
            ``"data_sized"`` on CPU and ``"fixed"`` elsewhere. Same values.

    Returns:
        scalar float64 tensor (lower is better).

    Examples:
        >>> gt = torch.zeros(6, 8, dtype=torch.float64); gt[1:5, 1:6] = 1.0
        >>> pred = gt.clone(); pred[0, 7] = 1.0       # a detached speck
        >>> float(p3m_connectivity_error(gt, gt)), round(float(p3m_connectivity_error(pred, gt)), 6)
        (0.0, 1.0)
    """
    engine = host_reads.engine_option(engine, allow_host_sync, "p3m_connectivity_error")
    check_number("step", step, low=0.0, low_open=True, high=1.0)
    return mean_over_images(*_p3m_connectivity_update(pred, gt, step, validate_args, trimap, engine))
