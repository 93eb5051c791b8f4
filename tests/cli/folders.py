"""Generated dataset folders for the CLI tests: gt PNGs and the same predictions in several file formats.

``make_dataset(root, ...)`` writes ``root/gt/*.png`` and ``root/<format>/*`` where each format folder
stores the SAME 8-bit maps: ``u8`` (8-bit grey PNG), ``rgba`` (a cutout: random colours, the map in the
alpha channel), ``u16`` (16-bit grey PNG, value * 257), ``palette`` (P-mode PNG with a grey palette).
Images are small and non-square (40x56 by default) and include an empty gt, a full gt and a constant
prediction, so the reference's degenerate branches are exercised.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from tests.helpers.data import gt_uint8, pred_uint8

FORMATS = ("u8", "rgba", "u16", "palette")


def save_prediction(path: Path, pred: np.ndarray, fmt: str, rng: np.random.Generator) -> None:
    """Write an (H, W) uint8 map in one of ``FORMATS`` (all decode to the same levels)."""
    if fmt == "u8":
        Image.fromarray(pred).save(path)
    elif fmt == "rgba":
        colours = rng.integers(0, 256, (*pred.shape, 3)).astype(np.uint8)
        Image.fromarray(np.dstack([colours, pred]), mode="RGBA").save(path)
    elif fmt == "u16":
        Image.fromarray(pred.astype(np.uint16) * 257).save(path)
    elif fmt == "palette":  # a shuffled grey palette: the indices differ from the levels they stand for
        levels = rng.permutation(256).astype(np.uint8)
        index_of = np.argsort(levels).astype(np.uint8)
        image = Image.frombytes("P", pred.shape[::-1], index_of[pred].tobytes())
        image.putpalette([int(v) for level in levels for v in (level, level, level)])
        image.save(path)
    else:
        raise ValueError(fmt)


def make_maps(count: int = 6, shape: tuple[int, int] = (40, 56), seed: int = 0) -> dict[str, tuple]:
    """``name -> (gt, pred)`` uint8 maps with an empty gt, a full gt and a constant prediction."""
    rng = np.random.default_rng(seed)
    maps = {}
    for index in range(count):
        kind = "empty" if index == 1 else "full" if index == 2 else "blob"
        gt = gt_uint8(rng, *shape, kind=kind)
        pred = pred_uint8(rng, gt, "constant" if index == 3 else "lowrange" if index == 4 else "noisy")
        maps[f"img_{index:02d}"] = (gt, pred)
    return maps


def make_dataset(root: Path, count: int = 6, shape: tuple[int, int] = (40, 56), seed: int = 0,
                 formats: tuple[str, ...] = FORMATS) -> dict[str, tuple]:
    """Write gt and prediction folders under ``root``; returns the maps."""
    maps = make_maps(count, shape, seed)
    rng = np.random.default_rng(seed + 1)
    (root / "gt").mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        (root / fmt).mkdir(exist_ok=True)
    for name, (gt, pred) in maps.items():
        Image.fromarray(gt).save(root / "gt" / f"{name}.png")
        for fmt in formats:
            save_prediction(root / fmt / f"{name}.png", pred, fmt, rng)
    return maps


def read_results(out: Path) -> dict:
    """The parsed results.json of an output folder."""
    return json.loads((out / "results.json").read_text())


def make_mattes(count: int = 5, shape: tuple[int, int] = (36, 48), seed: int = 0) -> dict[str, tuple]:
    """``name -> (alpha, trimap, pred)`` uint8 maps: soft-edged mattes (one fully transparent, one fully opaque),
    trimaps of 0 / 128 / 255 with an unknown band around every soft edge, noisy predictions."""
    from scipy import ndimage

    rng = np.random.default_rng(seed)
    mattes = {}
    for index in range(count):
        kind = "empty" if index == 1 else "full" if index == 2 else "blob"
        hard = gt_uint8(rng, *shape, kind=kind).astype(np.float64)
        alpha = np.clip(np.rint(ndimage.uniform_filter(hard, size=5, mode="nearest")), 0, 255).astype(np.uint8)
        soft = (alpha > 0) & (alpha < 255)
        band = ndimage.binary_dilation(soft, iterations=2)
        trimap = np.where(band, 128, np.where(alpha == 255, 255, 0)).astype(np.uint8)
        noise = rng.normal(0, 30, shape)
        pred = np.clip(np.rint(alpha + noise * band + 6 * noise * (rng.random(shape) < 0.02)), 0, 255).astype(np.uint8)
        mattes[f"m_{index:02d}"] = (alpha, trimap, pred)
    return mattes


def make_matting_dataset(root: Path, methods: tuple[str, ...] = ("A", "B"), count: int = 5,
                         shape: tuple[int, int] = (36, 48), seed: int = 0, alpha_dir: str = "alpha",
                         trimap_dir: str = "trimaps") -> dict[str, dict[str, tuple]]:
    """A Composition-1k-like layout: ``root/<alpha_dir>/*.png``, ``root/<trimap_dir>/*.png`` and
    ``root/<method>/*.png``; each method's predictions come from its own seed. Returns ``method -> mattes``."""
    out = {}
    (root / alpha_dir).mkdir(parents=True, exist_ok=True)
    (root / trimap_dir).mkdir(parents=True, exist_ok=True)
    for offset, method in enumerate(methods):
        mattes = make_mattes(count, shape, seed)
        rng = np.random.default_rng(seed + 100 + offset)
        (root / method).mkdir(exist_ok=True)
        for name, (alpha, trimap, pred) in mattes.items():
            pred = np.clip(pred.astype(np.int64) + rng.integers(-8, 9, pred.shape), 0, 255).astype(np.uint8)
            mattes[name] = (alpha, trimap, pred)
            Image.fromarray(alpha).save(root / alpha_dir / f"{name}.png")
            Image.fromarray(trimap).save(root / trimap_dir / f"{name}.png")
            Image.fromarray(pred).save(root / method / f"{name}.png")
        out[method] = mattes
    return out
