"""Generated DAVIS-layout sequences: palette PNGs of object ids (``Annotations/480p/<seq>/00000.png``, void 255) and
results folders of the same layout, built to stress the protocol — odd sizes, multi-object sequences, objects that
vanish and come back, empty frames, void bands, results with fewer objects or none, and long sequences (past the
256 frames where the reference's decay indices wrap)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

PALETTE = [value for index in range(256) for value in ((index * 37) % 256, (index * 91) % 256, (index * 53) % 256)]
"""Any palette: the files hold the ids as palette indices (read back with ``np.array(Image.open(path))``)."""

SEQUENCES: dict[str, tuple[int, int, int, int]] = {
    "bike-packing": (6, 480, 854, 2),   # frames, height, width, objects
    "blackswan": (5, 37, 53, 1),
    "dogs-jump": (9, 64, 48, 3),
    "tiny": (3, 5, 7, 1),
    "long-walk": (262, 9, 11, 2),
}
"""The default set: a DAVIS-size multi-object sequence, odd sizes, a minimal 3-frame sequence, a long one."""


def _labels(rng: np.random.Generator, frames: int, height: int, width: int, objects: int) -> np.ndarray:
    """``(frames, H, W)`` uint8 ids: moving ellipses (later ids drawn over earlier ones), some frames empty of an
    object, a void (255) band on some frames."""
    yy, xx = np.mgrid[0:height, 0:width]
    labels = np.zeros((frames, height, width), np.uint8)
    centres = rng.uniform(0.2, 0.8, (objects, 2)) * (height, width)
    radii = rng.uniform(0.12, 0.35, (objects, 2)) * (height, width) + 0.7
    velocity = rng.normal(0, 0.03, (objects, 2)) * (height, width)
    for t in range(frames):
        for obj in range(objects):
            if t > 0 and rng.random() < 0.15:  # the object is out of view on this frame (never on frame 0)
                continue
            cy, cx = centres[obj] + velocity[obj] * t
            inside = ((yy - cy) / radii[obj, 0]) ** 2 + ((xx - cx) / radii[obj, 1]) ** 2 <= 1
            labels[t][inside] = obj + 1
        if rng.random() < 0.3:  # void band along an object edge (annotation uncertainty)
            row = rng.integers(0, height)
            labels[t, row:row + max(1, height // 20)] = 255
    return labels


def _prediction(rng: np.random.Generator, labels: np.ndarray, objects: int, kind: str) -> np.ndarray:
    """A method's ids for ``labels``: ``shifted`` (moved and noisy), ``missing`` (the last object never found,
    some frames empty), ``perfect`` (void read as background)."""
    gt = np.where(labels == 255, 0, labels)
    if kind == "perfect":
        return gt.astype(np.uint8)
    out = np.roll(gt, (int(rng.integers(-2, 3)), int(rng.integers(-3, 4))), axis=(1, 2))
    noise = rng.random(out.shape) < 0.02
    out = np.where(noise, rng.integers(0, objects + 1, out.shape), out)
    if kind == "missing":
        out[out == objects] = 0
        out[rng.random(out.shape[0]) < 0.2] = 0
    return out.astype(np.uint8)


def save_ids(labels: np.ndarray, path: Path) -> None:
    """A palette PNG of uint8 ids (with a full palette: Pillow keeps the indices as they are)."""
    image = Image.fromarray(labels, mode="P")
    image.putpalette(PALETTE)
    image.save(path)


def write_davis(root: Path, sequences: dict[str, tuple[int, int, int, int]] | None = None, seed: int = 0,
                methods: tuple[str, ...] = ("shifted", "missing", "perfect")) -> dict[str, Path]:
    """Write ``root/DAVIS`` (``Annotations/480p``, ``ImageSets/2017/val.txt``) and ``root/results/<method>``.

    Returns:
        ``{"davis": the DAVIS root, method: its results folder}``.
    """
    rng = np.random.default_rng(seed)
    sequences = SEQUENCES if sequences is None else sequences
    davis = root / "DAVIS"
    (davis / "ImageSets" / "2017").mkdir(parents=True, exist_ok=True)
    (davis / "ImageSets" / "2017" / "val.txt").write_text("".join(f"{name}\n" for name in sequences))
    folders = {"davis": davis, **{method: root / "results" / method for method in methods}}
    for name, (frames, height, width, objects) in sequences.items():
        labels = _labels(rng, frames, height, width, objects)
        for folder in [davis / "Annotations" / "480p", *(root / "results" / m for m in methods)]:
            (folder / name).mkdir(parents=True, exist_ok=True)
        predictions = {method: _prediction(rng, labels, objects, method) for method in methods}
        for t in range(frames):
            save_ids(labels[t], davis / "Annotations" / "480p" / name / f"{t:05d}.png")
            for method in methods:
                save_ids(predictions[method][t], root / "results" / method / name / f"{t:05d}.png")
    return folders
