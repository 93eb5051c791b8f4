"""A numpy/scipy port of the Deep Image Matting MATLAB evaluation (SAD, MSE, gradient, connectivity).

Written from the definitions in docs/references.md ("Matting"), with MATLAB semantics:

- mattes are read as ``single(x) / 255`` (float32) for SAD, MSE and connectivity; the gradient error
  runs ``mat2gray`` on the array as given (uint8 levels or floats) and filters in double;
- ``imfilter(IM, h, 'replicate', 'conv')`` is ``scipy.ndimage.convolve(IM, h, mode='nearest')`` with the
  full 9x9 kernel (no separable shortcut: this is the independent check of ours);
- ``bwconncomp(mask, 4)`` + ``max(cellfun(@numel, ...))``: ``scipy.ndimage.label`` with the cross
  structure, the largest size, ties to the component whose first pixel in column-major order is first.
- sums of float32 maps are taken in float64 (MATLAB sums in single; see docs/matting.md).

Every function takes one image: ``pred``, ``gt`` (H, W) uint8 or float arrays and an optional uint8 or
float trimap; ``region`` is ``trimap == 128`` (uint8) / ``trimap == 0.5`` (float), else the whole image.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage


def read_matte(alpha: np.ndarray) -> np.ndarray:
    """``single(alpha) / 255`` for uint8; floats become float32 (float64 stays float64)."""
    if alpha.dtype == np.uint8:
        return alpha.astype(np.float32) / np.float32(255)
    return alpha if alpha.dtype == np.float64 else alpha.astype(np.float32)


def unknown_region(trimap: np.ndarray | None, shape: tuple[int, int]) -> np.ndarray:
    """The scored pixels: the trimap's unknown value, or everything."""
    if trimap is None:
        return np.ones(shape, bool)
    return trimap == (128 if trimap.dtype == np.uint8 else 0.5)


def clamp_to_trimap(pred: np.ndarray, trimap: np.ndarray) -> np.ndarray:
    """The reference pipelines' ``pred(trimap == 0) = 0; pred(trimap == 255) = 255`` (1 for float mattes)."""
    known_fg = trimap == (255 if trimap.dtype == np.uint8 else 1.0)
    out = pred.copy()
    out[trimap == 0] = 0
    out[known_fg] = 255 if pred.dtype == np.uint8 else 1
    return out


def sad(pred, gt, trimap=None) -> float:
    """``sum(sum(abs(single(pred) - single(target)) / 255 .* (trimap == 128)))``."""
    error = np.abs(read_matte(pred) - read_matte(gt))
    return float(error[unknown_region(trimap, pred.shape)].sum(dtype=np.float64))


def mse(pred, gt, trimap=None) -> float:
    """Squared error summed over the region divided by its size (0 for an empty region)."""
    region = unknown_region(trimap, pred.shape)
    error = (read_matte(pred) - read_matte(gt)) ** 2
    count = int(region.sum())
    return float(error[region].sum(dtype=np.float64) / count) if count else 0.0


def mat2gray(image: np.ndarray) -> np.ndarray:
    """MATLAB ``mat2gray(A)``: ``imlincomb(delta, A, -min*delta, 'double')`` clipped; constant -> ``double(A)``."""
    image = image.astype(np.float64)
    low, high = image.min(), image.max()
    if high == low:
        return np.clip(image, 0, 1)
    delta = 1.0 / (high - low)
    return np.clip(image * delta + (-low * delta), 0, 1)


def gaussgradient_kernel(sigma: float = 1.4) -> np.ndarray:
    """``hx`` of ``gaussgradient.m``: the 9x9 Gaussian-derivative kernel, written element by element."""
    halfsize = math.ceil(sigma * math.sqrt(-2 * math.log(math.sqrt(2 * math.pi) * sigma * 0.01)))
    size = 2 * halfsize + 1

    def gauss(x):
        return math.exp(-x**2 / (2 * sigma**2)) / (sigma * math.sqrt(2 * math.pi))

    def dgauss(x):
        return -x * gauss(x) / sigma**2

    hx = np.zeros((size, size))
    for i in range(1, size + 1):
        for j in range(1, size + 1):
            hx[i - 1, j - 1] = gauss(i - halfsize - 1) * dgauss(j - halfsize - 1)
    return hx / math.sqrt(np.sum(np.abs(hx) * np.abs(hx)))


def gradient(pred, gt, trimap=None, sigma: float = 1.4) -> float:
    """``compute_gradient_loss.m`` without the /1000."""
    hx = gaussgradient_kernel(sigma)

    def amplitude(alpha):
        image = mat2gray(alpha)
        gx = ndimage.convolve(image, hx, mode="nearest")
        gy = ndimage.convolve(image, hx.T, mode="nearest")
        return np.sqrt(gx**2 + gy**2).astype(np.float32)

    error = (amplitude(pred) - amplitude(gt)) ** 2
    return float(error[unknown_region(trimap, pred.shape)].sum(dtype=np.float64))


def sobel_gradient(pred, gt, trimap=None) -> float:
    """ZIM's variant: mean over the region of |Sobel magnitude difference|, zero padding, raw mattes."""
    def magnitude(alpha):
        image = read_matte(alpha).astype(np.float64)
        return np.hypot(ndimage.sobel(image, 1, mode="constant"), ndimage.sobel(image, 0, mode="constant"))

    region = unknown_region(trimap, pred.shape)
    error = np.abs(magnitude(pred) - magnitude(gt))
    return float(error[region].mean()) if region.any() else 0.0


def largest_component_matlab(mask: np.ndarray) -> np.ndarray:
    """``bwconncomp(mask, 4)`` and the first largest ``PixelIdxList`` (column-major numbering); empty -> zeros."""
    labels, count = ndimage.label(mask)
    if count == 0:
        return np.zeros(mask.shape, bool)
    sizes = np.bincount(labels.ravel(), minlength=count + 1)[1:]
    # bwconncomp numbers components by their first pixel in column-major order: relabel that way
    column_major = labels.T.ravel()
    values, first_index = np.unique(column_major, return_index=True)
    first_seen = first_index[values > 0]  # label 1..count -> first position in column-major order
    by_matlab_index = np.argsort(first_seen)  # MATLAB's component j -> our label - 1
    winner = by_matlab_index[int(np.argmax(sizes[by_matlab_index]))]  # argmax: the first maximum
    return labels == winner + 1


def threshold_steps(step: float) -> list[float]:
    """MATLAB ``0:step:1`` for the steps the tests use (1/step integer: exact decimals m/n)."""
    count = round(1 / step)
    return [m / count for m in range(count + 1)]


def connectivity(pred, gt, trimap=None, step: float = 0.1) -> float:
    """``compute_connectivity_error.m`` without the /1000."""
    pred_f, gt_f = read_matte(pred), read_matte(gt)
    dtype = pred_f.dtype
    steps = threshold_steps(step)
    level = np.full(pred_f.shape, -1.0)
    for index in range(1, len(steps)):
        threshold = dtype.type(steps[index])
        omega = largest_component_matlab((pred_f >= threshold) & (gt_f >= threshold))
        level[(level == -1) & ~omega] = steps[index - 1]
    level[level == -1] = 1
    level = level.astype(dtype)
    pred_d, gt_d = pred_f - level, gt_f - level
    pred_phi = 1 - pred_d * (pred_d >= 0.15)
    gt_phi = 1 - gt_d * (gt_d >= 0.15)
    error = np.abs(pred_phi - gt_phi)
    return float(error[unknown_region(trimap, pred.shape)].sum(dtype=np.float64))
