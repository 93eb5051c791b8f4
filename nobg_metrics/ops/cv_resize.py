"""OpenCV's ``cv2.resize(img, (W, H), interpolation=cv2.INTER_LINEAR)`` on uint8, bit for bit, in torch.

What PySODEvalToolkit and BiRefNet call to bring a prediction to its gt's size. The arithmetic of
``cv::hal::resize`` (OpenCV 4.x ``modules/imgproc/src/resize.cpp``, ``resizeGeneric_`` with
``HResizeLinear<uchar, int, short, 2048>`` and the uint8 ``VResizeLinear`` specialisation):

- scale ``s = 1 / ((double)dst / src)`` per axis (the reciprocal of OpenCV's ``inv_scale``, in float64);
- source position ``f = (float)((d + 0.5) * s - 0.5)`` (float64, rounded to float32), ``i = floor(f)``,
  ``f -= i`` (float32); coefficients ``c0 = saturate_cast<short>((1.f - f) * 2048)``,
  ``c1 = saturate_cast<short>(f * 2048)`` (``INTER_RESIZE_COEF_BITS = 11``; round half to even);
- **columns** are clamped with their coefficients: where ``i < 0`` or ``i >= w - 1`` the column is
  ``clamp(i)`` with ``(2048, 0)``. Horizontal pass, exact int32: ``t = S[i] * c0 + S[i + 1] * c1``;
- **rows** are clamped but keep their unclamped coefficients (``clip(sy, 0, h)`` in the invoker); the
  vertical pass rounds in steps, as OpenCV's SIMD and scalar code both do:
  ``out = (((b0 * (t0 >> 4)) >> 16) + ((b1 * (t1 >> 4)) >> 16) + 2) >> 2`` (not ``(v + 2**21) >> 22``);
- same size: a copy. An exact 2x downscale on both axes is routed to ``INTER_AREA``'s ``resizeAreaFast``
  (``(a + b + c + d + 2) >> 2``), which the formula above equals (coefficients 1024/1024, no clamping).

Checked pixel for pixel against cv2 4.14 in ``tests/ops/test_cv_resize.py``. The coefficient tables depend
only on the sizes: they are computed on the CPU (float64/float32, IEEE, no fused multiply-add) and moved
to the image's device; the passes are gathers and int32 multiply-adds (no host read of the data).
"""

from __future__ import annotations

import torch
from torch import Tensor

COEF_BITS = 11
"""OpenCV's ``INTER_RESIZE_COEF_BITS``: coefficients are multiples of 1/2048."""

COEF_SCALE = 1 << COEF_BITS


def linear_taps(src: int, dst: int, clamp_coefficients: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One axis's source indices and fixed-point coefficients: four :math:`(dst,)` CPU tensors.

    Returns ``(i0, i1, c0, c1)``: output ``d`` reads source ``i0[d]`` with weight ``c0[d]`` and ``i1[d]``
    with ``c1[d]`` (in 1/2048); indices int64, coefficients int32. ``clamp_coefficients``: the column rule (an index
    outside ``0 .. src-2`` becomes ``clamp(i)`` with ``(2048, 0)``); otherwise the row rule (indices clamped,
    coefficients kept).

    Examples:
        >>> [t.tolist() for t in linear_taps(2, 4, clamp_coefficients=True)]
        [[0, 0, 0, 1], [0, 1, 1, 1], [2048, 1536, 512, 2048], [0, 512, 1536, 0]]
    """
    scale = 1.0 / (dst / src)  # OpenCV: inv_scale = (double)dst / src; scale = 1. / inv_scale
    d = torch.arange(dst, dtype=torch.float64)
    f = ((d + 0.5) * scale - 0.5).to(torch.float32)
    i = torch.floor(f)
    f = f - i  # exact in float32
    i = i.to(torch.int64)
    c0 = torch.round((1.0 - f) * COEF_SCALE)  # float32 1.f - fx, then cvRound (half to even)
    c1 = torch.round(f * COEF_SCALE)
    if clamp_coefficients:
        outside = (i < 0) | (i >= src - 1)
        c0 = torch.where(outside, float(COEF_SCALE), c0)
        c1 = torch.where(outside, 0.0, c1)
    i0 = i.clamp(0, src - 1)
    i1 = (i + 1).clamp(0, src - 1)
    return i0, i1, c0.int(), c1.int()


def _vertical(u0: Tensor, u1: Tensor, b0: Tensor, b1: Tensor) -> Tensor:
    """OpenCV's uint8 ``VResizeLinear`` on ``u = t >> 4``: ``((b0*u0)>>16) + ((b1*u1)>>16) + 2 >> 2``.

    In place on ``u0``/``u1`` (in-place shifts: the ``>>`` operator with a Python int is 20-50x slower on
    the CPU). No clamp is needed: ``t <= 255 * 2049``, so ``u <= 32655`` and the sum is at most
    ``2049 * 32655 / 65536 < 1021``, which gives 255.
    """
    high0 = u0.mul_(b0).bitwise_right_shift_(16)
    high1 = u1.mul_(b1).bitwise_right_shift_(16)
    return high0.add_(high1).add_(2).bitwise_right_shift_(2).to(torch.uint8)


def resize_linear_u8(image: Tensor, height: int, width: int) -> Tensor:
    """``cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR)`` of uint8 maps, exactly.

    Args:
        image: :math:`(..., h, w)` uint8 (one map or a batch), on any device.
        height, width: the output size, both >= 1.

    Returns:
        :math:`(..., height, width)` uint8 on ``image``'s device (a copy when the size is unchanged).

    Examples:
        >>> img = torch.tensor([[0, 255], [255, 0]], dtype=torch.uint8)
        >>> resize_linear_u8(img, 3, 3).tolist()  # a float bilinear rounds 127.5 up to 128
        [[0, 127, 255], [128, 128, 128], [255, 127, 0]]
    """
    if image.dtype != torch.uint8 or image.dim() < 2:
        raise TypeError(f"image must be a (..., h, w) uint8 tensor, got {image.dtype} of shape {tuple(image.shape)}")
    if height < 1 or width < 1:
        raise ValueError(f"height and width must be >= 1, got {height} x {width}")
    h, w = image.shape[-2:]
    if (h, w) == (height, width):
        return image.clone()
    device = image.device
    x0, x1, a0, a1 = (t.to(device) for t in linear_taps(w, width, clamp_coefficients=True))
    y0, y1, b0, b1 = linear_taps(h, height, clamp_coefficients=False)
    # only the source rows some output row reads (sizes only: no host read of the data)
    rows, position = torch.unique(torch.cat([y0, y1]), return_inverse=True)
    y0, y1 = (t.to(device) for t in position.split(height))
    b0, b1 = b0.to(device)[:, None], b1.to(device)[:, None]
    # horizontal pass, exact int32 t = S[x0] * a0 + S[x1] * a1; gather with an expanded index is 5x
    # faster on the CPU than index_select along the last dim
    source = image.index_select(-2, rows.to(device)).int()  # (..., rows, w)
    shape = (*source.shape[:-1], width)
    t = torch.gather(source, -1, x0.expand(shape)).mul_(a0)
    u = t.add_(torch.gather(source, -1, x1.expand(shape)).mul_(a1)).bitwise_right_shift_(4)  # u = t >> 4
    return _vertical(u.index_select(-2, y0), u.index_select(-2, y1), b0, b1)
