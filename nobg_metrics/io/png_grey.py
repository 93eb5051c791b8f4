"""Grey levels of colour PNGs as OpenCV reads them: libpng's ``png_do_rgb_to_gray`` with OpenCV's
``png_set_rgb_to_gray(0.299, 0.587)``, in linear light when the file declares a significant gamma (libpng 1.6
``pngrtran.c`` / ``png.c``), from PIL's decoding and integer arithmetic.

``(9797 R + 19234 G + 3737 B) >> 15``, or, when the file declares a gamma (``sRGB`` chunk: 0.45455, else ``gAMA``)
that libpng deems significant, through libpng's gamma tables (:func:`_png_gamma_grey`); 16-bit colour at 16 bits
(``+ 16384 >> 15``), then ``>> 8`` (PIL keeps only the high byte of 16-bit colour: :func:`_png_colour16` decodes
the stream twice). numpy is used for decoding only.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
from PIL import Image

__all__ = ["png_colour_grey"]

def _png_colour16(path: Path, rawmode: str) -> np.ndarray:
    """The full 16-bit samples of a 16-bit RGB(A) PNG, :math:`(H, W, C)` int64 (PIL keeps 8 of them).

    PIL's ``RGB;16B`` unpacker keeps each sample's first (high) byte; decoding again with ``RGB;16L``
    keeps the second (low) byte.
    """
    low = Image.open(path)
    low.tile = [low.tile[0]._replace(args=rawmode.replace("16B", "16L"))]  # the same zip stream
    low.load()
    high = Image.open(path)
    high.load()
    return (np.asarray(high).astype(np.int64) << 8) | np.asarray(low).astype(np.int64)


# --- libpng png_do_rgb_to_gray (pngrtran.c 1.6) with OpenCV's png_set_rgb_to_gray(0.299, 0.587) --------
_RC, _GC, _BC = 9797, 19234, 3737  # (png_uint_16)(29900 * 32768 / 100000), ..., 32768 - rc - gc
_PNG_FP_1, _GAMMA_THRESHOLD = 100000, 5000
_SRGB_GAMMA = 45455
_SHIFT16 = 5  # png_build_gamma_table's gamma_shift with strip_16: 16 - PNG_MAX_GAMMA_8 (11); no sBIT


def _significant(gamma: int) -> bool:  # png_gamma_significant
    return gamma < _PNG_FP_1 - _GAMMA_THRESHOLD or gamma > _PNG_FP_1 + _GAMMA_THRESHOLD


def _reciprocal(a: int) -> int:  # png_reciprocal, floating-point build
    return math.floor(1e10 / a + 0.5)


def _correct(value: int, gamma: int, top: int) -> int:  # png_gamma_8bit_correct / png_gamma_16bit_correct
    return math.floor(top * math.pow(value / top, gamma * 0.00001) + 0.5) if 0 < value < top else value


@functools.lru_cache(maxsize=64)
def _table8(gamma: int) -> np.ndarray:  # png_build_8bit_table
    levels = range(256)
    return np.array([_correct(v, gamma, 255) if _significant(gamma) else v for v in levels], np.int64)


@functools.lru_cache(maxsize=64)
def _table16(gamma: int) -> np.ndarray:  # png_build_16bit_table, indexed by v >> shift
    top = (1 << (16 - _SHIFT16)) - 1
    if not _significant(gamma):
        return (np.arange(top + 1, dtype=np.int64) * 65535 + (1 << (15 - _SHIFT16))) // top
    return np.array([math.floor(65535.0 * math.pow(i / top, gamma * 0.00001) + 0.5)
                     for i in range(top + 1)], np.int64)


@functools.lru_cache(maxsize=64)
def _table16to8(gamma: int) -> np.ndarray:  # png_build_16to8_table: the 8-bit level of each v >> shift
    top = (1 << (16 - _SHIFT16)) - 1
    bounds = [(_correct(i * 257 + 128, gamma, 65535) * top + 32768) // 65535 + 1 for i in range(255)]
    return np.searchsorted(np.array(bounds), np.arange(top + 1), side="right").astype(np.int64)


def _png_gamma(image: Image.Image) -> int | None:
    """The file gamma libpng uses (``sRGB`` wins over ``gAMA``), or None when it builds no gamma table."""
    gamma = _SRGB_GAMMA if "srgb" in image.info else round(image.info.get("gamma", 0) * _PNG_FP_1)
    if gamma <= 0:
        return None
    return gamma if _significant(gamma) or _significant(_reciprocal(gamma)) else None


def _png_gamma_grey(rgb: np.ndarray, gamma: int, sixteen: bool) -> np.ndarray:
    """libpng's rgb_to_gray in linear light: gamma_to_1, weights, ``+ 16384 >> 15``, gamma_from_1.

    The screen gamma is the file's reciprocal (OpenCV sets none), so equal R = G = B pixels keep their
    level (8-bit) or go through the 16-to-8 table (16-bit).
    """
    screen = _reciprocal(gamma)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    equal = (r == g) & (g == b)
    if not sixteen:
        to_1, from_1 = _table8(_reciprocal(gamma)), _table8(_reciprocal(screen))
        grey = from_1[(_RC * to_1[r] + _GC * to_1[g] + _BC * to_1[b] + 16384) >> 15]
        return np.where(equal, r, grey)
    to_1, from_1 = _table16(_reciprocal(gamma)), _table16(_reciprocal(screen))
    s = _SHIFT16
    grey16 = (_RC * to_1[r >> s] + _GC * to_1[g >> s] + _BC * to_1[b >> s] + 16384) >> 15
    product = math.floor(gamma * 1e-5 * screen + 0.5)  # png_product2
    return np.where(equal, _table16to8(product)[r >> s], from_1[grey16 >> s] >> 8)


def png_colour_grey(image: Image.Image, path: Path, rawmode: str) -> np.ndarray:
    """The grey levels of a colour or palette PNG as ``cv2.imread(path, IMREAD_GRAYSCALE)``: :math:`(H, W)` int64."""
    sixteen = image.mode in ("RGB", "RGBA") and rawmode.endswith(";16B")
    rgb = _png_colour16(path, rawmode)[..., :3] if sixteen else \
        np.asarray(image.convert("RGB")).astype(np.int64)
    gamma = _png_gamma(image)
    if gamma is not None:
        return _png_gamma_grey(rgb, gamma, sixteen)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    if sixteen:  # from libpng 1.5.5 the 16-bit path rounds; then strip_16
        return ((_RC * r + _GC * g + _BC * b + 16384) >> 15) >> 8
    return (_RC * r + _GC * g + _BC * b) >> 15  # the historical truncation (R = G = B keeps its level)
