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

Here both filters come from one float32 real FFT pair per image (:func:`~nobg_metrics.functional.sod.ccm_filters.
context_filters`: the forward term as the adjoint ``Σ ext(gt) · (K ⋆ zero(pred))``, the reverse map from the same
transform plus four thin border bands), on a kernel grid of half-size ``round(3 α) + 1`` for every image (the largest
a kernel can be: fixed shapes, no host read). float32 as the reference's own forward filter (``CV_32F``, a float32
DFT); kernels, covariances and every sum stay float64 (masked sums: float32 row sums added in float64). Cm agrees
with the reference to ~1e-7 (measured worst 1.2e-7, tests use 1e-6), never bit for bit; ``fft_dtype=torch.float64``
gives the exact filters (to ~1e-15, tested). uint8 predictions go straight into the FFT grid as ``(l - origin) ·
scale`` (their values are affine in the level), with no float64 map.

Degenerate gt: all background — the reference scores 0 whatever the prediction (``empty_gt="reference"``);
``"agreement"`` gives ``1 - mean(pred)``, the soft pixel agreement (a perfect all-zero prediction scores 1). All
foreground — ``"reference"`` runs the formula; ``"agreement"`` gives ``mean(pred)`` (as the weighted F-measure).

The camouflage variant CCm (:func:`camouflage_context_measure`, ``CamouflageContextMeasure``) adds the camouflage
degree of the RGB image (:mod:`nobg_metrics.functional.sod.camouflage_degree`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from nobg_metrics._inputs import EmptyGt, InputMaps, check_number, check_option
from nobg_metrics._seg_batch import SegBatch, prepare_segmentation
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.sod.camouflage_degree import camouflage_degree, check_overflow
from nobg_metrics.functional.sod.ccm_filters import (  # noqa: F401 (kernel_grid_radius, correlate_reflect_101: re-exported)
    EPS,
    FFT_DTYPE,
    context_filters,
    context_kernels,
    correlate_reflect_101,
    kernel_grid_radius,
    masked_sum,
)
from nobg_metrics.functional.sod.ccm_inputs import InputImages, prepare_camouflage
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.threads import one_thread_if_small

__all__ = ["camouflage_context_measure", "context_measure"]

_E_FACTOR = math.e / (math.e - 1)


def _context_measure_per_image(batch: SegBatch, beta2: float, alpha: float, empty_gt: EmptyGt,
                               camouflage: Tensor | None = None) -> Tensor:
    """:math:`(B,)` float64 Cm of one equal-size group; CCm with the camouflage degree ``camouflage`` (``cd``)."""
    target = batch.gt.to(FFT_DTYPE)  # 0 / 1: exact in float32; the FFTs' dtype (no conversion in the filters)
    kernels = context_kernels(target, alpha, kernel_grid_radius(alpha))
    if batch.is_uint8:  # the level values are affine in the level, (l - origin) · scale (to ~1e-16): no float64 map
        table = batch.level_values
        scale = (table[:, -1] - table[:, 0]) / 255
        origin = torch.round(-table[:, 0] / scale)  # the lowest level (normalize) or 0
        pred_sum = scale * (batch.pred_raw.sum(dim=(-2, -1)) - batch.num_pixels * origin)
        forward_sum, smoothed = context_filters(batch.pred_raw, target, kernels, levels=(scale, origin))
    else:
        pred = batch.pred.double()
        pred_sum = pred.sum(dim=(-2, -1))
        forward_sum, smoothed = context_filters(pred, target, kernels)
    # forward = x_binary * global_relevance_matrix;  mforward = sum(forward * pred) / (sum(pred) + EPS)  (pred >= 0)
    m_forward = forward_sum / (pred_sum + EPS)
    # reverse = e / (e - 1) * Y * (1 - exp(-filter2D(X, K)));  wreverse = sum(reverse * (gt + cd)) / (sum(gt) +
    # sum(cd) + EPS): cd is 0 off the gt, so Σ reverse (gt + cd) = e / (e - 1) (Σ w - Σ w exp(-R)), w = gt + cd
    # (``smoothed`` is a local tensor: exp(-R) in place)
    decay = smoothed.neg_().exp_()
    gt_sum = target.sum(dim=-1).double().sum(dim=-1)  # exact: integer row sums
    if camouflage is None:
        weight_sum, weighted = gt_sum, masked_sum(decay, target)
    else:
        weight_sum = gt_sum + camouflage.sum(dim=(-2, -1))
        weighted = ((target.double() + camouflage) * decay).sum(dim=(-2, -1))
    w_reverse = _E_FACTOR * (weight_sum - weighted) / (weight_sum + EPS)
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

    Examples:
        >>> gt = torch.zeros(12, 16, dtype=torch.bool); gt[3:9, 4:11] = True
        >>> round(context_measure(gt.float(), gt).item(), 4), round(context_measure(gt.float() * 0.5, gt).item(), 4)
        (0.3583, 0.2629)
    """
    _check_context_measure_args(beta2, alpha, empty_gt)
    return mean_over_images(*_context_measure_update(pred, gt, beta2, alpha, normalize, empty_gt, validate_args))


def _check_camouflage_args(beta2: float, alpha: float, gamma: float, lambda_spatial: float,
                           empty_gt: EmptyGt, engine: host_reads.Engine = "auto") -> None:
    _check_context_measure_args(beta2, alpha, empty_gt)
    check_option("engine", engine, host_reads.Engine)
    check_number("gamma", gamma, low=0.0, low_open=True, high=700.0)
    check_number("lambda_spatial", lambda_spatial, low=0.0)


def _camouflage_context_measure_update(pred: InputMaps, gt: InputMaps, image: InputImages, beta2: float,
                                       alpha: float, gamma: float, lambda_spatial: float, normalize: bool,
                                       empty_gt: EmptyGt, validate_args: bool,
                                       engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor]:
    """Sum of per-image CCm and the number of images of a batch: ``(float64 scalar, int64 scalar)`` (the sum +inf
    where the sync-free search overflowed; NaN where a NaN pixel came through ``validate_args=False``)."""
    groups = prepare_camouflage(pred, gt, image, normalize=normalize, validate_args=validate_args)
    per_group = []
    for batch, images in groups:  # one group per list item (CCm's search runs image by image anyway)
        with one_thread_if_small(batch.gt_raw.numel(), images.device):  # small CPU groups: no thread-pool trips
            per_group.append(_camouflage_per_image(batch, images, beta2, alpha, gamma, lambda_spatial, empty_gt,
                                                   engine))
    values = torch.cat(per_group)
    return values.sum(), torch.full((), values.shape[0], dtype=torch.int64, device=values.device)


def _camouflage_per_image(batch: SegBatch, images: Tensor, beta2: float, alpha: float, gamma: float,
                          lambda_spatial: float, empty_gt: EmptyGt, engine: host_reads.Engine = "auto") -> Tensor:
    """:math:`(B,)` float64 CCm of one group; +inf for an image whose sync-free search overflowed (its ``cd`` map is
    NaN, and only then: ``cd`` depends on the uint8 image and the bool gt alone), so that
    :func:`~nobg_metrics.functional.sod.camouflage_degree.check_overflow` tells it from a NaN input."""
    degree = camouflage_degree(images, batch.gt, gamma=gamma, lambda_spatial=lambda_spatial, engine=engine)
    values = _context_measure_per_image(batch, beta2, alpha, empty_gt, degree)
    return torch.where(degree.isnan().flatten(1).any(dim=1), torch.inf, values)


def _camouflage_context_measure_compute(total: Tensor, count: Tensor) -> Tensor:
    """The dataset value from the states (float64 sum of per-image CCm, int64 image count): the mean, NaN with no
    image (as every metric), ``RuntimeError`` when the sync-free search overflowed for an image
    (:func:`check_overflow`).

    Examples:
        >>> _camouflage_context_measure_compute(torch.tensor(0.0, dtype=torch.float64), torch.tensor(0))
        tensor(nan, dtype=torch.float64)
    """
    return check_overflow(mean_over_images(total, count))


def camouflage_context_measure(pred: InputMaps, gt: InputMaps, image: InputImages, *, beta2: float = 1.2,
                               alpha: float = 6.0, gamma: float = 8.0, lambda_spatial: float = 20.0,
                               normalize: bool = False, empty_gt: EmptyGt = "agreement",
                               allow_host_sync: bool | None = None, validate_args: bool = True,
                               engine: host_reads.Engine = "auto") -> Tensor:
    r"""Camouflage context measure CCm: Cm whose reverse term weighs each gt pixel by ``1 + cd``, the camouflage
    degree of :func:`~nobg_metrics.functional.sod.camouflage_degree.camouflage_degree` (PySODMetrics 1.6.2
    ``CamouflageContextMeasure``, β² = 1.2, γ = 8, λ = 20), per image, averaged over images::

        wR = Σ e/(e-1) gt (1 - exp(-filter2D(pred, K))) (gt + cd) / (Σ gt + Σ cd + eps)

    Args:
        pred, gt: as :func:`context_measure`.
        image: the RGB images, :math:`(B, 3, H, W)` uint8 (or a list beside list ``pred`` / ``gt``).
        beta2, alpha, normalize, empty_gt, validate_args: as :func:`context_measure` (β² defaults to 1.2).
        gamma: γ of the camouflage degree; lambda_spatial: λ, the weight of patch positions in the search.
        allow_host_sync: deprecated alias of ``engine``: ``True`` is ``engine="data_sized"``, ``False`` ``"auto"``
            (a ``DeprecationWarning``).
        engine: ``"data_sized"`` runs the 1-NN search on the data-sized patch sets on every device (host reads per
            image); ``"fixed"`` the sync-free search over every grid position (docs/context_measure.md, "Without
            host syncs"); ``"auto"`` (default) is ``"data_sized"`` on CPU and ``"fixed"`` elsewhere. Same values.

    Returns:
        scalar float64 tensor.

    Raises:
        RuntimeError: on the sync-free path (``"fixed"``; off CPU by default), when a query had more near candidates
            than the search recomputes (:data:`~nobg_metrics.functional.sod.camouflage_degree.OVERFLOW_MESSAGE`).
        ValueError: ``engine`` is not one of :data:`~nobg_metrics.ops.host_reads.Engine`.

    Examples:
        >>> gt = torch.zeros(40, 40, dtype=torch.bool); gt[10:30, 12:28] = True
        >>> image = torch.full((3, 40, 40), 90, dtype=torch.uint8); image[:, gt] = 100
        >>> round(camouflage_context_measure(gt.float(), gt, image).item(), 4)
        0.7182
    """
    engine = host_reads.engine_option(engine, allow_host_sync, "camouflage_context_measure")
    _check_camouflage_args(beta2, alpha, gamma, lambda_spatial, empty_gt, engine)
    return _camouflage_context_measure_compute(*_camouflage_context_measure_update(
        pred, gt, image, beta2, alpha, gamma, lambda_spatial, normalize, empty_gt, validate_args, engine))
