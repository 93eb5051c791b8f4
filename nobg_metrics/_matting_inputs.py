"""Matting inputs: soft mattes and trimaps as equal-size :class:`MatteBatch` groups.

The checks (layouts, dtypes, values, trimap levels) are the input contract's, :func:`nobg_metrics._inputs.prepare`;
this module only converts: ``uint8`` mattes read as ``single(x) / 255`` (DIM), the trimap's unknown region,
the optional clamp of ``pred`` to the trimap's known values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from nobg_metrics._inputs import InputGroup, InputMaps, prepare
from nobg_metrics.ops.arith import divide


@dataclass
class MatteBatch:
    """Equal-size mattes of a matting batch; the float values are made on first use.

    Attributes:
        pred_source: :math:`(B, H, W)` the prediction as given (uint8 levels, float or bool), already
            clamped to the trimap's known values when asked.
        gt_source: :math:`(B, H, W)` the gt matte as given.
        region: :math:`(B, H, W)` bool, the trimap's unknown region, or ``None`` for the whole image.
        dtype: float32 (the DIM code's ``single``) unless both sources are float64.
    """

    pred_source: Tensor
    gt_source: Tensor
    region: Tensor | None
    dtype: torch.dtype
    _pred: Tensor | None = field(default=None, repr=False)
    _gt: Tensor | None = field(default=None, repr=False)

    @property
    def pred(self) -> Tensor:
        """:math:`(B, H, W)` prediction values in ``dtype`` (uint8 read as ``single(x) / 255``)."""
        if self._pred is None:
            self._pred = matte_values(self.pred_source, self.dtype)
        return self._pred

    @property
    def gt(self) -> Tensor:
        """:math:`(B, H, W)` gt values in ``dtype``."""
        if self._gt is None:
            self._gt = matte_values(self.gt_source, self.dtype)
        return self._gt

    @property
    def device(self) -> torch.device:
        """The batch's device."""
        return self.pred_source.device

    @property
    def levels(self) -> tuple[Tensor, Tensor] | None:
        """``(pred, gt)`` uint8 levels when both came as uint8 (every per-pixel value is one of 256), else None."""
        if self.pred_source.dtype == torch.uint8 and self.gt_source.dtype == torch.uint8:
            return self.pred_source, self.gt_source
        return None


def matte_values(tensor: Tensor, dtype: torch.dtype) -> Tensor:
    """Matte values in ``dtype``: uint8 read as ``x / 255`` (DIM's ``single(x) / 255`` in float32)."""
    if tensor.dtype == torch.uint8:
        return divide(tensor.to(dtype), 255)
    return tensor.to(dtype)


def unknown_region(trimap: Tensor) -> Tensor:
    """Unknown region of a trimap: 128 for uint8, 0.5 for float."""
    return trimap == 128 if trimap.dtype == torch.uint8 else trimap == 0.5


def prepare_matting(
    pred: InputMaps,
    gt: InputMaps,
    trimap: InputMaps | None = None,
    *,
    clamp_to_trimap: bool = False,
    validate_args: bool = True,
) -> list[MatteBatch]:
    """Validate matting inputs (soft gt) and return them as equal-size groups.

    Values are computed in float32 (the DIM MATLAB code's ``single``) unless ``pred`` and ``gt`` are
    both float64.

    Args:
        pred: :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or a list; float in [0, 1] or uint8.
        gt: same layout; a matte, float in [0, 1] or uint8 (not binarised).
        trimap: optional, same layout; uint8 {0, 128, 255} or float {0, 0.5, 1}; unknown = 128 / 0.5.
        clamp_to_trimap: set ``pred`` to 0 where the trimap is background and 1 where it is foreground.
        validate_args: run the checks that force a device sync.

    Returns:
        One :class:`MatteBatch` per distinct image size.

    Examples:
        >>> tri = torch.full((1, 4, 4), 128, dtype=torch.uint8)
        >>> prepare_matting(torch.rand(1, 4, 4), torch.rand(1, 4, 4), tri)[0].region.all()
        tensor(True)
    """
    return [matte_batch(group, clamp_to_trimap)
            for group in prepare(pred, gt, trimap=trimap, validate_args=validate_args)]


def matte_batch(group: InputGroup, clamp_to_trimap: bool = False) -> MatteBatch:
    """The :class:`MatteBatch` view of a prepared group (the region and the clamp from its trimap)."""
    both64 = group.pred.dtype == torch.float64 and group.gt.dtype == torch.float64
    pred_source, region = group.pred, None
    if group.trimap is not None:
        tri = group.trimap
        region = unknown_region(tri)
        if clamp_to_trimap:  # 0 and 1 (uint8: 0 and 255, read as exactly 0.0 and 1.0)
            known_fg = tri == (255 if tri.dtype == torch.uint8 else 1.0)
            known_bg = tri == 0
            one = 255 if pred_source.dtype == torch.uint8 else 1
            pred_source = torch.where(known_bg, torch.zeros_like(pred_source), pred_source)
            pred_source = torch.where(known_fg, torch.full_like(pred_source, one), pred_source)
    return MatteBatch(pred_source, group.gt, region, torch.float64 if both64 else torch.float32)
