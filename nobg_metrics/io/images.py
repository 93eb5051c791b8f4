"""Reading prediction, gt, trimap and RGB image files as the reference pipelines read them (OpenCV).

Reading rules (docs/references.md "Images, files and protocols"; docs/cli.md "Files"). Every grey map is read
**as OpenCV 4.14's ``cv2.imread(path, cv2.IMREAD_GRAYSCALE)`` reads it** (what PySODEvalToolkit and
BiRefNet call), from PIL's decoding and integer arithmetic, tested pixel for pixel against cv2:

- **PNG** (OpenCV's libpng transforms ``strip_16``, ``strip_alpha``, ``palette_to_rgb``,
  ``expand_gray_1_2_4_to_8``, ``rgb_to_gray(0.299, 0.587)``): grey as is (1/2/4-bit expanded to 0..255),
  16-bit grey ``v >> 8``; colour and palette images through libpng's ``png_do_rgb_to_gray``:
  ``(9797 R + 19234 G + 3737 B) >> 15``, or, when the file declares a gamma (``sRGB`` chunk: 0.45455,
  else ``gAMA``) that libpng deems significant, in linear light through libpng's gamma tables
  (:mod:`nobg_metrics.io.png_grey`); 16-bit colour at 16 bits (``+ 16384 >> 15``), then ``>> 8``. Alpha dropped.
- **JPEG**: libjpeg's own grey output (the Y plane: PIL ``draft("L")``), as cv2 asks libjpeg for.
- **BMP, TIFF**: OpenCV's ``(4899 R + 9617 G + 1868 B + 8192) >> 14``; a TIFF with unassociated alpha is
  premultiplied first (libtiff's RGBA reading), 16-bit grey ``v >> 8``. **WebP**: ``cvtColor``'s
  ``(9798 R + 19235 G + 3735 B + 16384) >> 15``, alpha dropped.
- **EXIF orientation** is applied to PNG, JPEG and WebP files (cv2 does; not to TIFF).
- **predictions** are read the same way, except that an alpha channel is the matte
  (RGBA/LA/palette-with-transparency background-removal cutouts) unless it is fully opaque; under the
  ``raw`` protocol 16-bit grey maps scale by 257 with rounding, ``(v + 128) // 257`` (= ``round(v / 257)``).
- predictions of another size are resized to the gt size (:func:`resize_prediction`): under the
  ``pysodmetrics`` protocol exactly ``cv2.resize(pred, (W, H), interpolation=cv2.INTER_LINEAR)``
  (:mod:`nobg_metrics.ops.cv_resize`); under ``raw`` a float32 bilinear (``F.interpolate``, half-pixel
  centres) rounded to the nearest level.

Not bit-exact (docs/cli.md): CMYK JPEGs, 16-bit colour PNGs with both a gamma and an ``sBIT`` chunk,
TIFF layouts other than grey, RGB and RGBA.

- **trimaps** must hold only 0, 128 and 255 once decoded (:func:`read_trimap`).
- **RGB images** (the camouflage context measure's input) are read as ``cv2.cvtColor(cv2.imread(path,
  cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)`` gives them (:func:`read_image`): :math:`(H, W, 3)` uint8, grey replicated,
  alpha dropped (not composited), 16-bit samples ``v >> 8``, EXIF orientation applied (PNG, JPEG, WebP).

numpy is used here for I/O only; no metric arithmetic happens in this module.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageFile

from nobg_metrics.io.errors import InvalidMap, ReadError
from nobg_metrics.io.folders import entry_kind, kind_problem, require_file
from nobg_metrics.io.png_grey import png_colour_grey
from nobg_metrics.ops.cv_resize import resize_linear_u8

_SIXTEEN_BIT_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I")


TRIMAP_LEVELS = (0, 128, 255)
"""The levels a decoded trimap may hold: background, unknown, foreground."""

_TRIMAP_OK = np.zeros(256, dtype=bool)
_TRIMAP_OK[list(TRIMAP_LEVELS)] = True


def _open(path: Path) -> tuple[Image.Image, str]:
    """The decoded image and its PIL raw mode (``"RGB;16B"`` marks a 16-bit colour PNG)."""
    require_file(path)
    try:
        image = Image.open(path)
        if image.format == "JPEG" and image.mode in ("RGB", "YCbCr"):
            image.draft("L", image.size)  # libjpeg's grey output (the Y plane), as cv2 IMREAD_GRAYSCALE
        rawmode = _rawmode(image)
        image.load()
    except Exception as error:  # noqa: BLE001 -- Pillow raises many kinds (OSError, SyntaxError, ValueError, ...)
        raise ReadError(f"{type(error).__name__}: {error}") from None
    return image, rawmode


def check_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as an image, found without decoding it (``None`` when nothing is wrong yet):
    not a regular file, a broken link, not an image, a PNG whose chunks fail their CRCs or stop short (PIL's
    ``verify``). Run over every input before scoring, so these errors are named up front; a file can still fail
    to decode later (a JPEG's entropy data is only checked by decoding it)."""
    kind = entry_kind(path)
    if kind != "file":
        return kind_problem(path, kind)
    try:
        with Image.open(path) as image:
            image.verify()
    except Exception as error:  # noqa: BLE001 -- Pillow raises many kinds (OSError, SyntaxError, ValueError, ...)
        return f"{type(error).__name__}: {error}"
    return None


def _rawmode(image: ImageFile.ImageFile) -> str:
    args = image.tile[0].args if len(image.tile) == 1 else None
    return args if isinstance(args, str) else args[0] if isinstance(args, tuple) and args else ""


def _sixteen_bit(image: Image.Image) -> np.ndarray:
    values = np.asarray(image).astype(np.int64)
    if values.min() < 0 or values.max() > 65535:
        raise ReadError(f"mode {image.mode} values outside 0..65535")
    return values


def _weighted(rgb: np.ndarray, weights: tuple[int, int, int], shift: int) -> np.ndarray:
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    return (weights[0] * r + weights[1] * g + weights[2] * b + (1 << (shift - 1))) >> shift


def _imread_grey(image: Image.Image, path: Path, rawmode: str) -> np.ndarray:
    """Grey levels as ``cv2.imread(path, cv2.IMREAD_GRAYSCALE)``: :math:`(H, W)` uint8 (alpha dropped)."""
    mode = image.mode
    if mode == "L":
        grey = np.asarray(image)
    elif mode in _SIXTEEN_BIT_MODES:
        grey = _sixteen_bit(image) >> 8  # libpng strip_16, OpenCV's 16 -> 8 of TIFF
    elif mode == "1":
        grey = np.asarray(image.convert("L"))
    elif mode in ("LA", "La"):
        grey = np.asarray(image)[..., 0]
    elif mode not in ("RGB", "RGBA", "RGBa", "P", "PA", "CMYK", "YCbCr"):
        raise ReadError(f"unsupported image mode {mode!r}")
    elif image.format == "PNG":
        grey = png_colour_grey(image, path, rawmode)
    elif image.format == "WEBP":  # decoded to BGR, then cvtColor(BGR2GRAY)
        grey = _weighted(np.asarray(image.convert("RGB")), (9798, 19235, 3735), 15)
    elif image.format == "TIFF" and mode == "RGBA":  # libtiff's RGBA reading premultiplies, rounding
        rgba = np.asarray(image).astype(np.int64)
        grey = _weighted((rgba[..., :3] * rgba[..., 3:] + 127) // 255, (4899, 9617, 1868), 14)
    elif mode == "RGBa":
        grey = _weighted(np.asarray(image)[..., :3], (4899, 9617, 1868), 14)
    else:  # BMP, TIFF RGB (OpenCV's icvCvt_BGR2Gray); CMYK JPEG: not exact
        grey = _weighted(np.asarray(image.convert("RGB")), (4899, 9617, 1868), 14)
    return np.ascontiguousarray(grey, dtype=np.uint8)


_ORIENTED_FORMATS = ("PNG", "JPEG", "WEBP")  # cv2.imread applies their EXIF orientation, not TIFF's


def _oriented(image: Image.Image, grey: np.ndarray) -> np.ndarray:
    """Apply the EXIF orientation tag (274) as cv2.imread does: flips and quarter turns."""
    if image.format not in _ORIENTED_FORMATS:
        return grey
    try:
        orientation = image.getexif().get(274, 1)
    except Exception:  # noqa: BLE001 -- a malformed EXIF block: cv2 ignores it too
        return grey
    if orientation in (5, 6, 7, 8):
        grey = grey.T  # transpose, then the remaining flip
        orientation = {5: 1, 6: 2, 7: 3, 8: 4}[orientation]
    if orientation in (2, 3):
        grey = grey[:, ::-1]
    if orientation in (3, 4):
        grey = grey[::-1, :]
    return np.ascontiguousarray(grey)


def read_mask(path: Path) -> np.ndarray:
    """A gt mask or trimap as OpenCV ``IMREAD_GRAYSCALE`` reads it: :math:`(H, W)` uint8."""
    image, rawmode = _open(path)
    return _oriented(image, _imread_grey(image, path, rawmode))


def read_trimap(path: Path) -> np.ndarray:
    """A trimap read like a gt (:func:`read_mask`) whose levels must all be 0, 128 or 255.

    Raises:
        InvalidMap: naming the offending levels and how many pixels hold them.
    """
    trimap = read_mask(path)
    ok = _TRIMAP_OK[trimap]
    if not ok.all():
        bad = trimap[~ok]
        levels = np.unique(bad)
        shown = ", ".join(str(int(v)) for v in levels[:5]) + (", ..." if len(levels) > 5 else "")
        raise InvalidMap(f"{bad.size} pixels hold levels other than 0, 128, 255 ({shown})")
    return trimap


def read_image(path: Path) -> np.ndarray:
    """An RGB image as ``cv2.cvtColor(cv2.imread(path, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)``: :math:`(H, W, 3)`
    uint8 (channels R, G, B), what PySODMetrics' ``CamouflageContextMeasure.step(img=...)`` expects.

    Colour and palette images as decoded (alpha dropped: libpng's ``strip_alpha``, no compositing), grey ones
    replicated, 16-bit samples ``v >> 8`` (``strip_16``; PIL keeps the high byte of 16-bit colour PNGs), JPEGs from
    libjpeg's RGB output; EXIF orientation as :func:`read_mask`. Not bit-exact: CMYK JPEGs (as for masks).
    """
    require_file(path)
    try:
        image = Image.open(path)
        image.load()
    except Exception as error:  # noqa: BLE001 -- Pillow raises many kinds (OSError, SyntaxError, ValueError, ...)
        raise ReadError(f"{type(error).__name__}: {error}") from None
    if image.mode in _SIXTEEN_BIT_MODES:
        grey = (_sixteen_bit(image) >> 8).astype(np.uint8)
        rgb = np.repeat(grey[..., None], 3, axis=2)
    elif image.mode in ("L", "LA", "La", "1"):
        rgb = np.repeat(np.asarray(image.convert("L"))[..., None], 3, axis=2)
    elif image.mode in ("RGB", "RGBA", "RGBa", "RGBX", "P", "PA", "CMYK", "YCbCr"):
        rgb = np.asarray(image if image.mode == "RGB" else image.convert("RGB"))  # RGBA -> RGB drops the alpha
    else:
        raise ReadError(f"unsupported image mode {image.mode!r}")
    if image.format not in _ORIENTED_FORMATS:
        return np.ascontiguousarray(rgb, dtype=np.uint8)
    channels = [_oriented(image, np.ascontiguousarray(rgb[..., c])) for c in range(3)]
    return np.ascontiguousarray(np.stack(channels, axis=-1), dtype=np.uint8)


def read_prediction(path: Path, protocol: str = "pysodmetrics") -> np.ndarray:
    """A prediction map: :math:`(H, W)` uint8.

    The alpha of a cutout (RGBA, LA, palette with transparency; not fully opaque) is the matte; otherwise
    the map is read like a gt (:func:`read_mask`), except that under ``protocol="raw"`` 16-bit grey maps
    scale by 257 with rounding instead of ``v >> 8``.
    """
    image, rawmode = _open(path)
    if protocol == "raw" and image.mode in _SIXTEEN_BIT_MODES:
        return _oriented(image, ((_sixteen_bit(image) + 128) // 257).astype(np.uint8))  # no ties exist
    alpha = None
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        alpha = np.asarray(image.convert("RGBA"))[..., 3] if image.mode != "LA" else np.asarray(image)[..., 1]
    if alpha is not None and alpha.min() < 255:
        return _oriented(image, np.ascontiguousarray(alpha, dtype=np.uint8))
    return _oriented(image, _imread_grey(image, path, rawmode))


def resize_bilinear_float(pred: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resize an :math:`(h, w)` uint8 map to :math:`(H, W)`: float32 bilinear, half-pixel centres, rounded.

    ``floor(x + 0.5)`` of ``F.interpolate(mode="bilinear", align_corners=False, antialias=False)``: the
    ``raw`` protocol's resize. Differs from OpenCV's fixed-point ``INTER_LINEAR`` by up to one level.
    """
    tensor = torch.tensor(pred, dtype=torch.float32)[None, None]
    resized = F.interpolate(tensor, size=(height, width), mode="bilinear", align_corners=False, antialias=False)
    return torch.floor(resized[0, 0] + 0.5).clamp_(0, 255).to(torch.uint8).numpy()


def resize_prediction(pred: np.ndarray, height: int, width: int, protocol: str = "pysodmetrics") -> np.ndarray:
    """A prediction brought to its gt's :math:`(H, W)`: the protocol's resize of an :math:`(h, w)` uint8 map.

    ``pysodmetrics``: ``cv2.resize(pred, (W, H), interpolation=cv2.INTER_LINEAR)`` bit for bit
    (:func:`~nobg_metrics.ops.cv_resize.resize_linear_u8`); ``raw``: :func:`resize_bilinear_float`.
    """
    if protocol == "raw":
        return resize_bilinear_float(pred, height, width)
    writable = np.require(pred, np.uint8, ["C_CONTIGUOUS", "WRITEABLE"])  # decoded maps may be read-only
    return resize_linear_u8(torch.from_numpy(writable), height, width).numpy()
