"""Generate the bundled sample scored by a bare ``nobg-metrics eval``: nobg_metrics/data/sample/{gt,methodA,methodB}.

24 gt masks of mixed sizes (160x120 .. 320x240, portrait and landscape): unions of ellipses, rounded
boxes and polygons drawn at 4x and downsampled, then thresholded (hard 0/255 masks with smooth
outlines). Two methods of different quality, saved as 8-bit grey PNGs:

- methodA (good): the gt blurred a little, slightly shifted, mild noise — soft, anti-aliased edges;
- methodB (weaker): the gt blurred more, shifted further, a missed part and a false blob, more noise.

Deterministic (seeded). Run from the repository root: ``python tools/make_sample.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

OUT = Path(__file__).resolve().parents[1] / "nobg_metrics" / "data" / "sample"
SIZES = [(160, 120), (200, 150), (240, 180), (320, 240), (120, 160), (180, 240)]  # (width, height)
COUNT = 24
SUPER = 4


def _shape(draw: ImageDraw.ImageDraw, rng: np.random.Generator, width: int, height: int) -> None:
    cx, cy = rng.uniform(0.25, 0.75) * width, rng.uniform(0.25, 0.75) * height
    rx, ry = rng.uniform(0.08, 0.3) * width, rng.uniform(0.08, 0.3) * height
    kind = rng.integers(3)
    if kind == 0:
        draw.ellipse([cx - rx, cy - ry, cx + rx, cy + ry], fill=255)
    elif kind == 1:
        draw.rounded_rectangle([cx - rx, cy - ry, cx + rx, cy + ry], radius=min(rx, ry) * 0.4, fill=255)
    else:
        angles = np.sort(rng.uniform(0, 2 * np.pi, rng.integers(5, 9)))
        radii = rng.uniform(0.5, 1.0, angles.size)
        draw.polygon([(cx + rx * r * np.cos(a), cy + ry * r * np.sin(a)) for a, r in zip(angles, radii)], fill=255)


def make_gt(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    """A hard 0/255 mask with smooth outlines: 1-3 shapes drawn at 4x, box-downsampled, thresholded."""
    big = Image.new("L", (width * SUPER, height * SUPER), 0)
    draw = ImageDraw.Draw(big)
    for _ in range(rng.integers(1, 4)):
        _shape(draw, rng, width * SUPER, height * SUPER)
    small = np.asarray(big.resize((width, height), Image.BOX))
    return np.where(small >= 128, 255, 0).astype(np.uint8)


def make_prediction(rng: np.random.Generator, gt: np.ndarray, blur: float, shift: int, noise: float,
                    damage: bool) -> np.ndarray:
    """A soft prediction: shifted, blurred gt (optionally with a missed part and a false blob) plus noise."""
    height, width = gt.shape
    image = Image.fromarray(np.roll(gt, (rng.integers(-shift, shift + 1), rng.integers(-shift, shift + 1)), (0, 1)))
    if damage:
        draw = ImageDraw.Draw(image)
        ys, xs = np.nonzero(gt)
        if ys.size:
            k = rng.integers(ys.size)
            r = rng.uniform(0.05, 0.12) * min(width, height)
            draw.ellipse([xs[k] - r, ys[k] - r, xs[k] + r, ys[k] + r], fill=0)
        _shape(draw, rng, width // 3, height // 3)  # a small false positive near the top-left
    soft = np.asarray(image.filter(ImageFilter.GaussianBlur(blur)), dtype=np.float64) / 255
    soft = np.clip(soft + rng.normal(0, noise, soft.shape) * (0.2 + soft * (1 - soft)), 0, 1)
    return np.round(soft * 255).astype(np.uint8)


def main() -> None:
    rng = np.random.default_rng(20240607)
    for folder in ("gt", "methodA", "methodB"):
        (OUT / folder).mkdir(parents=True, exist_ok=True)
    for index in range(COUNT):
        width, height = SIZES[index % len(SIZES)]
        gt = make_gt(rng, width, height)
        name = f"sample_{index:02d}.png"
        Image.fromarray(gt).save(OUT / "gt" / name, optimize=True)
        good = make_prediction(rng, gt, blur=1.5, shift=1, noise=0.04, damage=False)
        weak = make_prediction(rng, gt, blur=4.0, shift=4, noise=0.12, damage=True)
        Image.fromarray(good).save(OUT / "methodA" / name, optimize=True)
        Image.fromarray(weak).save(OUT / "methodB" / name, optimize=True)
    total = sum(p.stat().st_size for p in OUT.rglob("*.png"))
    print(f"wrote {3 * COUNT} PNGs, {total / 1024:.0f} KiB, to {OUT}")


if __name__ == "__main__":
    main()
