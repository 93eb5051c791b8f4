"""Reading prediction/gt/trimap image files and matching them by name.

Reading rules (REFERENCES.md "Images, files and protocols"; docs/cli.md "Files"):

- **gt and trimap** are read as grayscale exactly as OpenCV's ``cv2.imread(path, cv2.IMREAD_GRAYSCALE)``
  reads a PNG (what PySODEvalToolkit does): 8-bit grey as is; colour and palette images through libpng's
  ``rgb_to_gray`` arithmetic ``(9797 R + 19234 G + 3737 B) >> 15`` (alpha ignored); 16-bit through
  ``v >> 8`` (libpng ``strip_16``). Other formats use OpenCV's ``cvtColor`` rounding
  ``(4899 R + 9617 G + 1868 B + 8192) >> 14``.
- **predictions**: an alpha channel is the matte (RGBA/LA/palette-with-transparency background-removal
  cutouts) unless it is fully opaque, in which case the colours are read like a gt; 16-bit grey maps scale
  by 257 with rounding, ``(v + 128) // 257`` (= ``round(v / 257)``, never a tie; exact for 8-bit * 257).
- predictions of another size are resized to the gt size: bilinear, half-pixel centres, no antialias
  (``F.interpolate(..., align_corners=False, antialias=False)`` in float32, then ``floor(x + 0.5)``,
  what OpenCV ``INTER_LINEAR`` does up to its 11-bit fixed-point weights: within 1 level).

numpy is used here for I/O only; no metric arithmetic happens in this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
"""Extensions considered when matching by stem, in order of preference for duplicate stems."""

_SIXTEEN_BIT_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I")


class ReadError(Exception):
    """A file that exists but cannot be decoded into a map."""


@dataclass(frozen=True)
class Source:
    """Where one folder's files live: ``prefix + stem + suffix`` (suffix may hold the extension)."""

    path: Path
    prefix: str = ""
    suffix: str = ""


def _has_extension(suffix: str) -> bool:
    return suffix.lower().endswith(IMAGE_EXTENSIONS)


def list_stems(source: Source) -> tuple[dict[str, Path], list[str]]:
    """Map each image stem of a folder to its file.

    A ``suffix`` ending in an image extension (``"_sal.png"``) must match the file name exactly; otherwise
    ``prefix + stem + suffix`` is matched against the name without extension, across extensions.

    Returns:
        ``(stem -> path, duplicates)``: ``duplicates`` lists the names dropped because another file with the
        same stem and a preferred extension exists (``IMAGE_EXTENSIONS`` order).
    """
    found: dict[str, Path] = {}
    duplicates: list[str] = []
    rank = {ext: index for index, ext in enumerate(IMAGE_EXTENSIONS)}
    with_ext = _has_extension(source.suffix)
    for path in sorted(source.path.iterdir()):
        ext = path.suffix.lower()
        if ext not in rank or not path.is_file() or path.name.startswith("."):
            continue
        name = path.name if with_ext else path.name[: -len(path.suffix)]
        if not (name.startswith(source.prefix) and name.endswith(source.suffix)) or \
                len(name) < len(source.prefix) + len(source.suffix):
            continue
        stem = name[len(source.prefix): len(name) - len(source.suffix)]
        if stem in found:
            keep, drop = sorted([found[stem], path], key=lambda p: rank[p.suffix.lower()])
            found[stem] = keep
            duplicates.append(drop.name)
        else:
            found[stem] = path
    return found, duplicates


def _luma(rgb: np.ndarray, png: bool) -> np.ndarray:
    """Grey levels of an (H, W, 3) uint8 image with OpenCV's IMREAD_GRAYSCALE integer arithmetic."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    if png:  # libpng png_do_rgb_to_gray, coefficients png_set_rgb_to_gray(0.299, 0.587) in 1/32768
        return ((9797 * r + 19234 * g + 3737 * b) >> 15).astype(np.uint8)
    return ((4899 * r + 9617 * g + 1868 * b + 8192) >> 14).astype(np.uint8)  # cv2 cvtColor BGR2GRAY


def _sixteen_bit(image: Image.Image) -> np.ndarray:
    values = np.asarray(image).astype(np.int64)
    if values.min() < 0 or values.max() > 65535:
        raise ReadError(f"mode {image.mode} values outside 0..65535")
    return values


def _open(path: Path) -> Image.Image:
    try:
        image = Image.open(path)
        image.load()
    except Exception as error:  # Pillow raises many kinds (OSError, SyntaxError, ValueError, ...)
        raise ReadError(f"{type(error).__name__}: {error}") from None
    return image


def _grey(image: Image.Image, png: bool) -> np.ndarray:
    """Colour channels as grey levels (alpha ignored), OpenCV IMREAD_GRAYSCALE rules."""
    mode = image.mode
    if mode == "L":
        return np.asarray(image, dtype=np.uint8)
    if mode in _SIXTEEN_BIT_MODES:
        return (_sixteen_bit(image) >> 8).astype(np.uint8)
    if mode in ("1", "LA", "La"):
        return np.asarray(image.convert("L"), dtype=np.uint8) if mode == "1" else np.asarray(image)[..., 0]
    if mode in ("RGB", "RGBA", "RGBa", "P", "PA", "CMYK", "YCbCr"):
        return _luma(np.asarray(image.convert("RGB")), png)
    raise ReadError(f"unsupported image mode {mode!r}")


def read_mask(path: Path) -> np.ndarray:
    """A gt mask or trimap as OpenCV ``IMREAD_GRAYSCALE`` reads it: :math:`(H, W)` uint8."""
    image = _open(path)
    return _grey(image, image.format == "PNG")


def read_prediction(path: Path) -> np.ndarray:
    """A prediction map: :math:`(H, W)` uint8 (alpha of cutouts, 16-bit scaled by 257, palette resolved)."""
    image = _open(path)
    if image.mode in _SIXTEEN_BIT_MODES:
        return ((_sixteen_bit(image) + 128) // 257).astype(np.uint8)  # round(v / 257), no ties exist
    alpha = None
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        alpha = np.asarray(image.convert("RGBA"))[..., 3] if image.mode != "LA" else np.asarray(image)[..., 1]
    if alpha is not None and alpha.min() < 255:
        return np.ascontiguousarray(alpha, dtype=np.uint8)
    return _grey(image, image.format == "PNG")


def resize_like_cv2(pred: np.ndarray, height: int, width: int) -> np.ndarray:
    """Resize an :math:`(h, w)` uint8 map to :math:`(H, W)`: bilinear, half-pixel centres, no antialias.

    ``floor(x + 0.5)`` of the float32 interpolation; OpenCV ``INTER_LINEAR`` (11-bit fixed-point weights)
    agrees within one level.
    """
    tensor = torch.tensor(pred, dtype=torch.float32)[None, None]
    resized = F.interpolate(tensor, size=(height, width), mode="bilinear", align_corners=False, antialias=False)
    return torch.floor(resized[0, 0] + 0.5).clamp_(0, 255).to(torch.uint8).numpy()
