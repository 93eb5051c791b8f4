"""A numpy/scipy/skimage port of the P3M-10k / AM-2k / AIM-500 matting evaluation (the test oracle).

Written from the definitions of ``core/evaluate.py`` in JizhiziLi/P3M (identical bodies in JizhiziLi/GFM and
JizhiziLi/AIM), as their ``core/test.py`` calls them once per image: ``predict`` is the network's in-memory
float matte, ``alpha`` is ``np.array(Image.open(png)) / 255.`` (float64) and ``trimap`` the uint8 PNG.

Every function returns **raw** values (what the per-image formula computes before the scripts' printing
scales); :data:`PRINTED_SCALE` says what the scripts multiply each by. Arithmetic stays in numpy's own dtypes
(the predictions' float32 or float64, the float32 ``l_map`` of the connectivity, the ``output=np.float32``
gradient), because those dtypes are part of the definition: the gradient's error map is float32 and is
summed by numpy in float32.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage
from skimage.measure import label, regionprops

PRINTED_SCALE = {
    "sad": 1e-3, "mse": 1.0, "mad": 1.0, "sad_trimap": 1e-3, "mse_trimap": 1.0, "mad_trimap": 1.0,
    "sad_fg": 1e-3, "sad_bg": 1e-3, "grad": 0.1, "conn": 1e-3,
}
"""The factor between our raw value and the number the scripts log (``np.sum(...) / 1000``, ``/ 10``)."""


def read_alpha(png: np.ndarray) -> np.ndarray:
    """The scripts' ``np.array(Image.open(path)) / 255.`` of a uint8 matte: float64."""
    return png / 255.0


def whole_image_errors(predict: np.ndarray, alpha: np.ndarray) -> tuple[float, float, float]:
    """``calculate_sad_mse_mad_whole_img``: (SAD raw, MSE, MAD) over all H*W pixels."""
    difference = predict - alpha
    pixels = predict.shape[0] * predict.shape[1]
    absolute = np.sum(np.abs(difference))
    return float(absolute), float(np.sum(difference ** 2) / pixels), float(absolute / pixels)


def trimap_errors(predict: np.ndarray, alpha: np.ndarray, trimap: np.ndarray) -> tuple[float, float, float]:
    """``calculate_sad_mse_mad``: the prediction forced to 1 where ``trimap == 255`` and 0 where ``trimap == 0``,
    then sums over the **whole** image; MSE-T and MAD-T divide by the number of ``trimap == 128`` pixels
    (if there are none: by the pixels that are neither 255 nor 0; still none -> numpy's x / 0)."""
    forced = np.copy(predict)
    unknown = float((trimap == 128).sum())
    forced[trimap == 255] = 1.0
    forced[trimap == 0] = 0.0
    difference = forced - alpha
    absolute = np.sum(np.abs(difference))
    if unknown == 0:
        unknown = trimap.shape[0] * trimap.shape[1] - float((trimap == 255).sum()) - float((trimap == 0).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(absolute), float(np.sum(difference ** 2) / unknown), float(absolute / unknown)


def known_region_errors(predict: np.ndarray, alpha: np.ndarray, trimap: np.ndarray) -> tuple[float, float]:
    """``calculate_sad_fgbg``: |predict - alpha| (not forced) weighted by ``trimap == 255`` and by ``trimap == 0``."""
    absolute = np.abs(predict - alpha)
    foreground = np.zeros(predict.shape)
    background = np.zeros(predict.shape)
    foreground[trimap == 255] = 1.0
    background[trimap == 0] = 1.0
    return float(np.sum(absolute * foreground)), float(np.sum(absolute * background))


def gradient(predict: np.ndarray, alpha: np.ndarray) -> float:
    """``compute_gradient_whole_image`` without the final ``/ 10``: a float32 sum, as numpy sums it."""
    def magnitude(matte: np.ndarray) -> np.ndarray:
        along_rows = ndimage.gaussian_filter(matte, sigma=1.4, order=[1, 0], output=np.float32)
        along_cols = ndimage.gaussian_filter(matte, sigma=1.4, order=[0, 1], output=np.float32)
        return np.sqrt(along_rows ** 2 + along_cols ** 2)

    return float(np.sum(np.square(magnitude(predict) - magnitude(alpha))))


def connectivity(predict: np.ndarray, alpha: np.ndarray, step: float = 0.1) -> float:
    """``compute_connectivity_loss_whole_image`` without the final ``/ 1000``.

    Thresholds ``np.arange(0, 1.1, step)``; per threshold the largest 4-connected component of the joint mask
    by skimage ``label`` + ``regionprops`` (``argmax`` of the areas: the first in label order on ties); a
    threshold without any component is skipped (``l`` keeps -1 there); what is still -1 at the end becomes 1.
    """
    height, width = predict.shape
    thresholds = np.arange(0, 1.1, step)
    level = -1 * np.ones((height, width), dtype=np.float32)
    for index in range(1, thresholds.size):
        joint = (predict >= thresholds[index]) & (alpha >= thresholds[index])
        regions = regionprops(label(joint, connectivity=1))
        areas = np.array([region.area for region in regions])
        if len(areas) == 0:
            continue
        coords = regions[int(np.argmax(areas))].coords
        omega = np.zeros((height, width), dtype=np.float32)
        omega[coords[:, 0], coords[:, 1]] = 1
        level[(level == -1) & (omega == 0)] = thresholds[index - 1]
    level[level == -1] = 1
    pred_distance = predict - level
    gt_distance = alpha - level
    pred_phi = 1 - pred_distance * (pred_distance >= 0.15).astype(np.float32)
    gt_phi = 1 - gt_distance * (gt_distance >= 0.15).astype(np.float32)
    return float(np.sum(np.abs(pred_phi - gt_phi)))


def all_metrics(predict: np.ndarray, alpha: np.ndarray, trimap: np.ndarray | None = None) -> dict[str, float]:
    """Every raw P3M value of one image (the trimap ones only with a trimap)."""
    sad, mse, mad = whole_image_errors(predict, alpha)
    values = {"sad": sad, "mse": mse, "mad": mad, "grad": gradient(predict, alpha),
              "conn": connectivity(predict, alpha)}
    if trimap is not None:
        values["sad_trimap"], values["mse_trimap"], values["mad_trimap"] = trimap_errors(predict, alpha, trimap)
        values["sad_fg"], values["sad_bg"] = known_region_errors(predict, alpha, trimap)
    return values
