"""The P3M-10k / AM-2k / AIM-500 matting protocol: inputs, and the pixel errors SAD, MSE, MAD (whole image,
trimap-forced, known regions).

Reference: ``core/evaluate.py`` of JizhiziLi/P3M (Li et al., *Privacy-Preserving Portrait Matting*, ACM MM
2021; identical bodies in JizhiziLi/GFM, AM-2k, and JizhiziLi/AIM, AIM-500), called once per image by their
``core/test.py`` with the in-memory float prediction, ``alpha = png / 255.`` (float64) and the uint8 trimap::

    calculate_sad_mse_mad_whole_img:  SAD = sum|p - a|,  MSE = sum (p - a)^2 / (H W),  MAD = sum|p - a| / (H W)
    calculate_sad_mse_mad:            p[trimap == 255] = 1;  p[trimap == 0] = 0       # forced, then the WHOLE image:
                                      SAD-T = sum|p - a|,  MSE-T = sum (p - a)^2 / U,  MAD-T = sum|p - a| / U
                                      U = #(trimap == 128), or if 0: H W - #(trimap == 255) - #(trimap == 0)
    calculate_sad_fgbg:               SAD-FG = sum_{trimap == 255} |p - a|,  SAD-BG = sum_{trimap == 0} |p - a|

Values are **raw**: the scripts print SAD, SAD-T, SAD-FG, SAD-BG divided by 1000, MSE and MAD as they are
(:data:`PRINTED_SCALE`, docs/matting_protocols.md). Only the -T values force the prediction; SAD-FG/BG score it
as given. An image whose trimap has no unknown pixel (U = 0) scores MSE-T = MAD-T = 0 (the reference divides by
0: inf or NaN). Reading: uint8 mattes are ``k / 255`` in float64 (the scripts' ``np.array(png) / 255.``), float
mattes are taken at their values; every sum is float64 (the reference's float64 ``alpha`` promotes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, check_option, prepare
from nobg_metrics.functional._per_image import mean_over_images, sum_per_image

__all__ = ["p3m_mad", "p3m_mse", "p3m_sad"]

P3MRegion = Literal["image", "trimap", "fg", "bg"]
"""``image``: the whole image (SAD, MSE, MAD); ``trimap``: the reference's ``_trimap`` values (prediction forced
to the trimap's known values, divided by the unknown count: SAD-T, MSE-T, MAD-T); ``fg`` / ``bg``: the sums over
``trimap == 255`` / ``trimap == 0`` (SAD-FG, SAD-BG; SAD only)."""

ERROR_COLUMNS = ("sad", "mse", "mad", "sad_trimap", "mse_trimap", "mad_trimap", "sad_fg", "sad_bg")
"""The per-image pixel errors, in the order of :func:`_p3m_errors_per_image`'s columns."""

PRINTED_SCALE = {"sad": 1e-3, "mse": 1.0, "mad": 1.0, "sad_trimap": 1e-3, "mse_trimap": 1.0, "mad_trimap": 1.0,
                 "sad_fg": 1e-3, "sad_bg": 1e-3, "grad": 0.1, "conn": 1e-3}
"""What the P3M / GFM / AIM scripts multiply our raw values by before printing (``/ 1000``, ``/ 10``)."""

_SINGLE = (torch.float32, torch.float16, torch.bfloat16, torch.bool)
"""Prediction dtypes numpy combines with the float32 ``l_map`` of the connectivity in float32."""


@dataclass
class P3MBatch:
    """Equal-size mattes of a P3M-protocol batch.

    Attributes:
        pred_source: :math:`(B, H, W)` the prediction as given (uint8, float or bool).
        gt_source: :math:`(B, H, W)` the gt matte as given.
        trimap: :math:`(B, H, W)` uint8 {0, 128, 255} or float {0, 0.5, 1}, or ``None``.
    """

    pred_source: Tensor
    gt_source: Tensor
    trimap: Tensor | None

    @property
    def pred(self) -> Tensor:
        """:math:`(B, H, W)` float64 prediction (uint8 as ``k / 255``; float32 values exactly)."""
        return _as_float64(self.pred_source)

    @property
    def gt(self) -> Tensor:
        """:math:`(B, H, W)` float64 gt (the scripts' ``png / 255.``)."""
        return _as_float64(self.gt_source)

    @property
    def pred_is_single(self) -> bool:
        """True when numpy would hold the prediction in float32 (float32, float16, bfloat16 or bool input)."""
        return self.pred_source.dtype in _SINGLE

    def trimap_regions(self) -> tuple[Tensor, Tensor, Tensor]:
        """``(foreground, background, unknown)`` bool maps: ``trimap == 255 / 0 / 128`` (float: 1 / 0 / 0.5)."""
        tri = self.trimap
        assert tri is not None, "called for a group with a trimap"
        uint8 = tri.dtype == torch.uint8
        return tri == (255 if uint8 else 1.0), tri == 0, tri == (128 if uint8 else 0.5)


def _as_float64(source: Tensor) -> Tensor:
    """uint8 as ``k / 255`` (IEEE division, as numpy's ``png / 255.``; in place on the new map), floats as float64."""
    if source.dtype != torch.uint8:
        return source.double()
    return source.double().div_(torch.full((), 255.0, dtype=torch.float64, device=source.device))


def prepare_p3m(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None, *,
                validate_args: bool = True) -> list[P3MBatch]:
    """Validate P3M-protocol inputs (the input contract's checks) and return equal-size groups.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; a matte.
        trimap: optional, same layout; uint8 {0, 128, 255} or float {0, 0.5, 1}.
        validate_args: run the checks that force a device sync (values, trimap values).

    Examples:
        >>> groups = prepare_p3m(torch.rand(2, 4, 5), torch.rand(2, 4, 5))
        >>> len(groups), groups[0].pred.dtype
        (1, torch.float64)
    """
    return [P3MBatch(group.pred, group.gt, group.trimap)
            for group in prepare(pred, gt, trimap=trimap, validate_args=validate_args)]


def _image_sums(values: Tensor) -> Tensor:
    return values.sum(dim=(-2, -1), dtype=torch.float64)


def _guarded_divide(total: Tensor, size: Tensor) -> Tensor:
    """``total / size``, 0 where ``size`` is 0 (the named policy of an empty unknown region)."""
    return torch.where(size > 0, total / size.clamp_min(1), torch.zeros_like(total))


def _p3m_errors_per_image(batch: P3MBatch) -> dict[str, Tensor]:
    """Per image, the 8 raw pixel errors of :data:`ERROR_COLUMNS` (the trimap ones 0 without a trimap) and
    whether a trimap came: ``{"errors": (B, 8) float64, "with_trimap": (B,) int64}``.

    One difference map and three scratch maps, reused in place (fresh 8 MiB maps cost page faults per call).
    """
    count, height, width = batch.pred_source.shape
    gt = batch.gt
    difference = batch.pred - gt  # predict - alpha
    absolute = difference.abs()
    pixels = float(height * width)
    sad = _image_sums(absolute)
    columns = [sad, _image_sums(difference.square_()) / pixels, sad / pixels]  # ``difference`` is scratch now
    with_trimap = torch.zeros(count, dtype=torch.int64, device=gt.device)
    if batch.trimap is None:
        columns += [torch.zeros_like(sad)] * 5
    else:
        fg, bg, unknown = batch.trimap_regions()
        zero = torch.zeros((), dtype=torch.float64, device=gt.device)
        scratch = torch.where(fg, absolute, zero)
        sad_fg = _image_sums(scratch)
        sad_bg = _image_sums(torch.where(bg, absolute, zero, out=scratch))
        # |forced - alpha|: 1 - alpha on the foreground, alpha on the background, |predict - alpha| elsewhere
        torch.where(bg, gt, absolute, out=scratch)
        forced = torch.where(fg, torch.sub(1.0, gt, out=difference), scratch, out=scratch)
        forced_sad = _image_sums(forced)
        forced_sse = _image_sums(forced.square_())
        size = torch.count_nonzero(unknown, dim=(-2, -1)).double()
        known = torch.count_nonzero(fg, dim=(-2, -1)) + torch.count_nonzero(bg, dim=(-2, -1))
        size = torch.where(size > 0, size, pixels - known.double())
        columns += [forced_sad, _guarded_divide(forced_sse, size), _guarded_divide(forced_sad, size), sad_fg, sad_bg]
        with_trimap = with_trimap + 1
    return {"errors": torch.stack(columns, dim=1), "with_trimap": with_trimap}


def _p3m_errors_update(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None,
                       validate_args: bool) -> tuple[dict[str, Tensor], Tensor]:
    """``({"errors": (8,) summed per-image errors, "with_trimap": images with a trimap}, image count)``."""
    return sum_per_image(_p3m_errors_per_image, prepare_p3m(pred, gt, trimap, validate_args=validate_args))


def _p3m_error_compute(name: str, errors: Tensor, count: Tensor, with_trimap: Tensor) -> Tensor:
    """Dataset value of one :data:`ERROR_COLUMNS` entry: the mean over the images (the trimap entries over the
    images that came with a trimap; NaN with none)."""
    column = ERROR_COLUMNS.index(name)
    return mean_over_images(errors[..., column], count if column < 3 else with_trimap)


def column_name(measure: str, region: str) -> str:
    """``("sad", "fg")`` -> ``"sad_fg"``; checks the pair exists."""
    name = measure if region == "image" else f"{measure}_{region}"
    if name not in ERROR_COLUMNS:
        raise ValueError(f"`region` must be 'image' or 'trimap' for {measure.upper()}; got {region!r}")
    return name


def _p3m_pixel_error(measure: str, pred: InputMaps, gt: InputMaps, trimap: InputMaps | None, region: str,
                     validate_args: bool) -> Tensor:
    check_option("region", region, P3MRegion)
    name = column_name(measure, region)
    if region != "image" and trimap is None:
        raise ValueError(f"`trimap` is required for region={region!r} (the reference's {name}); got None")
    totals, count = _p3m_errors_update(pred, gt, trimap, validate_args)
    return _p3m_error_compute(name, totals["errors"], count, totals["with_trimap"])


def p3m_sad(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None, *, region: P3MRegion = "image",
            validate_args: bool = True) -> Tensor:
    r"""P3M SAD per image (raw: the scripts print it / 1000), averaged over images.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; a matte.
        trimap: same layout; needed by ``region`` ``"trimap"``, ``"fg"``, ``"bg"``, ignored by ``"image"``.
        region: ``"image"`` (SAD), ``"trimap"`` (SAD-T: known regions forced), ``"fg"`` (SAD-FG), ``"bg"`` (SAD-BG).
        validate_args: run the checks that force a device sync.

    Returns:
        scalar float64 tensor (lower is better).

    Examples:
        >>> pred, gt = torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> tri = torch.tensor([[1.0, 0.5], [0.0, 0.5]])
        >>> [round(float(p3m_sad(pred, gt, tri, region=r)), 4) for r in ("image", "trimap", "fg", "bg")]
        [1.1, 0.8, 0.1, 0.2]
    """
    return _p3m_pixel_error("sad", pred, gt, trimap, region, validate_args)


def p3m_mse(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None, *, region: P3MRegion = "image",
            validate_args: bool = True) -> Tensor:
    r"""P3M MSE per image (raw, as the scripts print it): the squared error summed over the whole image, divided
    by H·W (``"image"``) or, prediction forced, by the unknown count (``"trimap"``: MSE-T); averaged over images.

    Args and returns as :func:`p3m_sad` (regions ``"image"``, ``"trimap"``).

    Examples:
        >>> pred, gt = torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]])
        >>> trimap = torch.full((2, 2), 0.5)
        >>> round(float(p3m_mse(pred, gt)), 4), round(float(p3m_mse(pred, gt, trimap, region="trimap")), 4)
        (0.1125, 0.1125)
    """
    return _p3m_pixel_error("mse", pred, gt, trimap, region, validate_args)


def p3m_mad(pred: InputMaps, gt: InputMaps, trimap: InputMaps | None = None, *, region: P3MRegion = "image",
            validate_args: bool = True) -> Tensor:
    r"""P3M MAD per image (raw): SAD divided by H·W (``"image"``) or, forced, SAD-T by the unknown count
    (``"trimap"``: MAD-T); averaged over images. Args and returns as :func:`p3m_sad`.

    Examples:
        >>> round(float(p3m_mad(torch.tensor([[0.9, 0.8], [0.2, 0.6]]), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))), 4)
        0.275
    """
    return _p3m_pixel_error("mad", pred, gt, trimap, region, validate_args)
