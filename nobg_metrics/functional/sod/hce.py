"""Human Correction Effort (HCE, Qin et al., "Highly Accurate Dichotomous Image Segmentation", ECCV 2022):
the number of mouse clicks a person needs to fix a DIS5K prediction — polygon control points along the
relaxed error regions' boundaries plus one click per error region that touches nothing else.

Per image (docs/references.md, "Human Correction Effort"; the steps are in
:func:`nobg_metrics.functional.sod.hce_regions.hce_counts`):

    skel = skeletonize(gt)                     (or a cached skeleton, ``gt_skeleton``)
    P    = pred > 0.5  (protocol "pysodmetrics": PySODMetrics 1.6.2 HumanCorrectionEffortMeasure,
                        pred = pred / 255, min-max stretched when ``normalize``)
         | pred_u8 > 128 (protocol "dis": the DIS authors' IS-Net/hce_metric_main.py, raw 8-bit levels)
    HCE  = FP points + FP independent regions + FN points + FN independent regions

and the dataset value is the mean over images. BiRefNet's tables print ``int(round(mean))`` of the DIS rule.

Devices: one switch, ``engine`` (:data:`~nobg_metrics.ops.host_reads.Engine`). On CPU the default ``"auto"`` sizes the
work by the data (host reads are free there). Off CPU, by default it runs the sync-free path (``"fixed"``) — full
frames, padded lists and round counts fixed by the frame size (the ``"fixed"`` forms of ``ops.thinning.skeletonize``,
``ops.contours.find_contours``, ``ops.polyline.approx_poly_dp_open`` and ``functional.sod.hce_regions.region_effort``);
two of those counts are budgets, not proofs (thinning iterations, Douglas–Peucker levels), and an image that needs more
gets the value NaN, which makes ``hce()`` and ``HCE.compute()`` raise (:data:`BUDGET_MESSAGE`) — never a wrong count.
``engine="data_sized"`` runs the data-sized path on every device (docs/hce.md, "Without host syncs"); the older
``allow_host_sync=True`` is its deprecated alias. ``"auto"`` is resolved in one place, :func:`_hce_per_image`.

Edge cases: an image whose prediction matches its gt scores 0 (no error region, no skeleton pixel missed);
an empty gt has an empty skeleton, so only the false positives count. HCE is an integer count per image; the
state holds a float64 sum of them (exact below 2^53) and an int64 image count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_number, check_option, prepare
from nobg_metrics._seg_batch import SegBatch, prediction_values
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image
from nobg_metrics.functional.sod.hce_regions import hce_counts
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.thinning import skeletonize

__all__ = ["hce", "hce_per_image"]

HceProtocol = Literal["pysodmetrics", "dis"]
"""How the prediction is binarised: PySODMetrics' ``pred > 0.5`` or the DIS tool's ``pred_u8 > 128``."""


@dataclass
class HceBatch(SegBatch):
    """A :class:`SegBatch` with the optional cached gt skeleton (:math:`(B, H, W)` bool or uint8, or None)."""

    skeleton_raw: Tensor | None = None


FIXED_PIXELS_PER_CALL = 2**21
"""Pixels the sync-free path scores per call: ~4.3 KiB each at peak (4.4 GiB for one 1024² image, measured on
CPU), so at most ~9 GiB; larger groups go in blocks of images (two 1024² images per block)."""

BUDGET_MESSAGE = ("HCE: the sync-free device path ran out of its fixed budget (thinning iterations or "
                  "Douglas-Peucker levels, docs/hce.md) for at least one image (its value is NaN). Pass "
                  "engine=\"data_sized\" to size the work by the data (exact on any input).")
"""The error of :func:`check_budget`: a NaN per-image value only comes from an exhausted budget (the inputs are
binarised by comparisons, so a NaN pixel let through by ``validate_args=False`` never makes one)."""


def check_budget(total: Tensor) -> Tensor:
    """Raise ``RuntimeError(BUDGET_MESSAGE)`` if the summed per-image values ``total`` are NaN (one host read), else
    return it. The sum, not the mean: with no image scored the mean is 0 / 0 = NaN and no budget was used."""
    return host_reads.raise_if_nan(total, BUDGET_MESSAGE)


def _hce_compute(total: Tensor, count: Tensor) -> Tensor:
    """The dataset value from the states (float64 sum of per-image HCE, int64 image count): the mean, NaN with no
    image (as every metric), ``RuntimeError`` when a sync-free budget was short for an image (:func:`check_budget`).

    Examples:
        >>> _hce_compute(torch.tensor(3.0, dtype=torch.float64), torch.tensor(2)), _hce_compute(
        ...     torch.tensor(0.0, dtype=torch.float64), torch.tensor(0))
        (tensor(1.5000, dtype=torch.float64), tensor(nan, dtype=torch.float64))
    """
    return mean_over_images(check_budget(total), count)


def _check_hce_args(relax: int, epsilon: float, protocol: str, normalize: bool,
                    engine: host_reads.Engine = "auto") -> None:
    check_option("engine", engine, host_reads.Engine)
    check_number("relax", relax, low=0, integer=True)
    check_number("epsilon", epsilon, low=0, high=1e30)
    check_option("protocol", protocol, HceProtocol)
    if protocol == "dis" and normalize:
        raise ValueError("`normalize` must be False with protocol='dis' (the DIS tool thresholds raw levels)")


def _binarized_pred(batch: SegBatch, protocol: str) -> Tensor:
    """``P``: ``pred > 0.5`` on the prepared map, or the DIS tool's ``pred_u8 > 128`` on raw uint8 levels."""
    if protocol == "dis":
        if not batch.is_uint8:
            raise TypeError(f"protocol='dis' reads 8-bit predictions (pred_u8 > 128): `pred` must be uint8, "
                            f"got {batch.pred_raw.dtype}")
        return batch.pred_raw > 128
    return batch.pred > 0.5


def _skeleton(batch: SegBatch, engine: host_reads.Engine) -> tuple[Tensor, Tensor]:
    """``(skeleton, converged)``: the cached skeleton (bool, or uint8 read as ``> 128`` like the DIS tool's ``ske``
    PNGs; converged) or ``skimage.morphology.skeletonize(gt)`` by the ``engine`` form (:math:`(B, H, W)` bool and
    :math:`(B,)` bool: False where the ``"fixed"`` thinning's budget was short)."""
    cached = getattr(batch, "skeleton_raw", None)
    if cached is None:
        return skeletonize(batch.gt, engine=engine)
    skeleton = cached > 128 if cached.dtype == torch.uint8 else cached
    return skeleton, torch.ones(skeleton.shape[0], dtype=torch.bool, device=skeleton.device)


def _hce_per_image(batch: SegBatch, relax: int, epsilon: float, protocol: str,
                   engine: host_reads.Engine = "auto") -> Tensor:
    """(B,) float64 per-image HCE of one equal-size group (NaN where the sync-free path's budget was short)."""
    pred = _binarized_pred(batch, protocol)
    gt = batch.gt
    engine = host_reads.resolve_engine(engine, gt)  # resolved once for the group: "auto" is "data_sized" on CPU
    skeleton, converged = _skeleton(batch, engine)
    count, height, width = gt.shape
    if count == 0:
        return torch.zeros(0, dtype=torch.float64, device=gt.device)
    # memory: the fixed form's padded lists grow with B, so it scores blocks of images
    block = count if engine == "data_sized" else max(1, FIXED_PIXELS_PER_CALL // max(1, height * width))
    counts, exhausted = zip(*(hce_counts(pred[i:i + block], gt[i:i + block], skeleton[i:i + block], relax, epsilon,
                                         dis_flags=protocol == "dis", engine=engine) for i in range(0, count, block)))
    return torch.where(converged & ~torch.cat(exhausted), torch.cat(counts).double(), torch.nan)


def _prepare(pred: InputMaps, gt: InputMaps, gt_skeleton: InputMaps | None, normalize: bool,
             validate_args: bool) -> list[SegBatch]:
    """The input contract's groups, with the cached skeleton (bool or uint8, same layout as gt) alongside."""
    groups = prepare(pred, gt, gt_skeleton=gt_skeleton, validate_args=validate_args)
    return [HceBatch(prediction_values(group.pred), group.gt, normalize, skeleton_raw=group.gt_skeleton)
            for group in groups]


def _hce_update(pred: InputMaps, gt: InputMaps, relax: int, epsilon: float, protocol: str, normalize: bool,
                validate_args: bool, gt_skeleton: InputMaps | None = None,
                engine: host_reads.Engine = "auto") -> tuple[Tensor, Tensor]:
    """Sum of per-image HCE and the number of images of a batch: ``(float64 scalar, int64 scalar)``."""
    _check_hce_args(relax, epsilon, protocol, normalize, engine)
    batches = _prepare(pred, gt, gt_skeleton, normalize, validate_args)
    return sum_per_image(lambda batch: _hce_per_image(batch, relax, epsilon, protocol, engine), batches)


def hce_per_image(pred: InputMaps, gt: InputMaps, *, relax: int = 5, epsilon: float = 2.0,
                  protocol: HceProtocol = "pysodmetrics", gt_skeleton: InputMaps | None = None,
                  normalize: bool = False, allow_host_sync: bool | None = None, validate_args: bool = True,
                  engine: host_reads.Engine = "auto") -> Tensor:
    """The HCE of every image, in input order: :math:`(N,)` float64 (integers). Arguments as :func:`hce`.

    On the sync-free path (``engine="fixed"``; off CPU by default), an image whose budget was short is NaN here
    (no read, no raise).

    Examples:
        >>> gt = torch.zeros(2, 30, 30, dtype=torch.bool); gt[:, 4:26, 4:26] = True
        >>> pred = gt.float(); pred[1, 12:15, 12:15] = 0.0  # a 3x3 hole in the object: one click
        >>> hce_per_image(pred, gt)
        tensor([0., 1.], dtype=torch.float64)
    """
    engine = host_reads.engine_option(engine, allow_host_sync, "hce_per_image")
    _check_hce_args(relax, epsilon, protocol, normalize, engine)
    batches = _prepare(pred, gt, gt_skeleton, normalize, validate_args)
    values = [_hce_per_image(batch, relax, epsilon, protocol, engine) for batch in batches]
    if len(values) == 1:
        return values[0]
    order = _input_order([pred, gt] + ([] if gt_skeleton is None else [gt_skeleton]))
    return torch.cat(values)[torch.argsort(order)].to(values[0].device)


def _input_order(lists: list[InputMaps]) -> Tensor:
    """For list inputs: the input index of each image in the grouped order (grouped by size and dtypes,
    as :func:`~nobg_metrics._inputs.prepare` groups them)."""
    keys: dict[tuple, list[int]] = {}
    for index, tensors in enumerate(zip(*lists)):
        keys.setdefault(tuple((tuple(t.shape[-2:]), t.dtype) for t in tensors), []).append(index)
    return torch.tensor([index for group in keys.values() for index in group])


def hce(pred: InputMaps, gt: InputMaps, *, relax: int = 5, epsilon: float = 2.0,
        protocol: HceProtocol = "pysodmetrics", gt_skeleton: InputMaps | None = None,
        normalize: bool = False, allow_host_sync: bool | None = None, validate_args: bool = True,
        engine: host_reads.Engine = "auto") -> Tensor:
    r"""Human Correction Effort, the mean over images of the per-image click count (lower is better).

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8
            (uint8 required for ``protocol="dis"``).
        gt: same layout; bool, uint8 (``> 128``) or float (``> 0.5``).
        relax: rounds of the 3×3-cross relaxation (5).
        epsilon: Douglas–Peucker tolerance in pixels (2.0).
        protocol: ``"pysodmetrics"`` (``pred > 0.5`` after the optional stretch) or ``"dis"`` (``pred_u8 > 128``).
        gt_skeleton: optional cached skeletons (bool, or uint8 read as ``> 128``), same layout as ``gt``;
            default ``skimage.morphology.skeletonize(gt)``.
        normalize: PySODMetrics' per-image min-max stretch first (its default protocol; not with "dis").
        allow_host_sync: deprecated alias of ``engine``: ``True`` is ``engine="data_sized"``, ``False`` ``"auto"``
            (a ``DeprecationWarning``).
        validate_args: run the checks that force a device sync.
        engine: ``"data_sized"`` sizes the work by the data on every device (thinning fronts, contour lists,
            Douglas–Peucker levels; the host reads sizes back, docs/hce.md); ``"fixed"`` runs the sync-free path,
            whose result is read once at the end (the budget check); ``"auto"`` (default) is ``"data_sized"`` on
            CPU and ``"fixed"`` elsewhere. Same values.

    Returns:
        scalar float64 tensor.

    Raises:
        RuntimeError: on the sync-free path (``"fixed"``; off CPU by default), when an image needed more than its
            budget (:data:`BUDGET_MESSAGE`).
        ValueError: ``engine`` is not one of :data:`~nobg_metrics.ops.host_reads.Engine`.

    Examples:
        >>> gt = torch.zeros(2, 30, 30, dtype=torch.bool); gt[:, 4:26, 4:26] = True
        >>> pred = gt.float(); pred[1, 12:15, 12:15] = 0.0
        >>> hce(pred, gt)
        tensor(0.5000, dtype=torch.float64)
    """
    engine = host_reads.engine_option(engine, allow_host_sync, "hce")
    return _hce_compute(*_hce_update(pred, gt, relax, epsilon, protocol, normalize, validate_args, gt_skeleton,
                                     engine))
