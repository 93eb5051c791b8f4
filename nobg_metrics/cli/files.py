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

- **every entry of a folder** is either a candidate image or listed with the reason it is not scored
  (:func:`scan_folder`): hidden names, other extensions (``.gif``, ``.txt``), subfolders, special files,
  names that do not fit the prefix/suffix. A broken or looping symlink with an image extension stays a
  candidate, so that reading it reports it as unreadable (by name) instead of dropping it.
- **trimaps** must hold only 0, 128 and 255 once decoded (:func:`read_trimap`).

numpy is used here for I/O only; no metric arithmetic happens in this module.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
"""Extensions considered when matching by stem, in order of preference for duplicate stems."""

_SIXTEEN_BIT_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I")


class ReadError(Exception):
    """A file that exists but cannot be decoded into a map (or a folder that cannot be listed)."""


class InvalidMap(ReadError):
    """A file that decodes, but into values its role forbids (a trimap level other than 0, 128, 255)."""


TRIMAP_LEVELS = (0, 128, 255)
"""The levels a decoded trimap may hold: background, unknown, foreground."""

_TRIMAP_OK = np.zeros(256, dtype=bool)
_TRIMAP_OK[list(TRIMAP_LEVELS)] = True


@dataclass(frozen=True)
class Source:
    """Where one folder's files live: ``prefix + stem + suffix`` (suffix may hold the extension)."""

    path: Path
    prefix: str = ""
    suffix: str = ""


def _has_extension(suffix: str) -> bool:
    return suffix.lower().endswith(IMAGE_EXTENSIONS)


@dataclass
class Listing:
    """One folder's entries: the candidate image of each stem and everything else, with reasons."""

    found: dict[str, Path] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    not_scored: list[tuple[str, str]] = field(default_factory=list)


def entry_kind(path: Path) -> str:
    """``file``, ``folder``, ``special``, ``broken symlink``, ``symlink loop`` or ``unreadable (...)``."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "symlink loop"
        if error.errno == errno.ENOENT and os.path.islink(path):
            return "broken symlink"
        return f"unreadable ({error.strerror or error})"
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "special"


def scan_folder(source: Source) -> Listing:
    """Every entry of a folder: each image stem's file, or why an entry is not scored.

    A ``suffix`` ending in an image extension (``"_sal.png"``) must match the file name exactly; otherwise
    ``prefix + stem + suffix`` is matched against the name without extension, across extensions. Two
    files with one stem: a readable file before a broken link, then the ``IMAGE_EXTENSIONS`` order; the
    other is listed in ``duplicates``. Raises :class:`ReadError` when the folder cannot be listed.
    """
    listing = Listing()
    kinds: dict[Path, str] = {}
    rank = {ext: index for index, ext in enumerate(IMAGE_EXTENSIONS)}
    with_ext = _has_extension(source.suffix)
    try:
        names = sorted(os.listdir(source.path))
    except OSError as error:
        raise ReadError(f"cannot list the folder {source.path}: {error.strerror or error}") from None
    for entry in names:
        path = source.path / entry
        kind = kinds[path] = entry_kind(path)
        ext = path.suffix.lower()
        if entry.startswith("."):
            listing.not_scored.append((entry, "hidden folder" if kind == "folder" else "hidden file"))
            continue
        if kind == "folder":
            listing.not_scored.append((entry, "a folder (subfolders are not searched)"))
            continue
        if ext not in rank:
            why = f"unsupported extension {ext!r}" if ext else "no image extension"
            listing.not_scored.append((entry, why if kind == "file" else f"{why}; {kind}"))
            continue
        if kind == "special":  # a fifo, socket or device: never opened (reading a fifo would block)
            listing.not_scored.append((entry, "not a regular file"))
            continue
        # a file, or a broken/looping symlink or unreadable entry: a candidate (reading it reports it as
        # unreadable, by name)
        name = entry if with_ext else entry[: -len(path.suffix)]
        if not (name.startswith(source.prefix) and name.endswith(source.suffix)) or \
                len(name) < len(source.prefix) + len(source.suffix):
            listing.not_scored.append((entry, f"name does not match {source.prefix!r} + stem + {source.suffix!r}"))
            continue
        stem = name[len(source.prefix): len(name) - len(source.suffix)]
        if stem in listing.found:
            keep, drop = sorted([listing.found[stem], path],
                                key=lambda p: (kinds[p] != "file", rank[p.suffix.lower()]))
            listing.found[stem] = keep
            listing.duplicates.append(drop.name)
        else:
            listing.found[stem] = path
    return listing


def list_stems(source: Source) -> tuple[dict[str, Path], list[str]]:
    """Map each image stem of a folder to its file (:func:`scan_folder` without the not-scored entries).

    Returns:
        ``(stem -> path, duplicates)``: ``duplicates`` lists the names dropped because another file with the
        same stem and a preferred extension exists (``IMAGE_EXTENSIONS`` order).
    """
    listing = scan_folder(source)
    return listing.found, listing.duplicates


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
    kind = entry_kind(path)
    if kind == "broken symlink":
        raise ReadError(f"broken symlink (to {os.readlink(path)!r})")
    if kind != "file":
        raise ReadError(kind if kind != "folder" else "a folder, not a file")
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
