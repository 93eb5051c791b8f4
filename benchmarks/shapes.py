"""Realistic segmentation masks at any H x W and model-output-like predictions of them (seeded, no files).

The blob gt of :func:`harness.sample_uint8` is one disc; real SOD / DIS / matting gts are not. Every
shape here is drawn in coordinates relative to the frame (so it scales to any ``H x W``, non-square
included), at 4x (2x beyond 1024 px) supersampling and area-averaged down: the antialiased gt holds the
exact coverage of each edge pixel (grey values 1..254, as real gt PNGs do), the hard gt is that
coverage ``> 128`` (``> 50 %``). Thin parts are a few pixels wide at every size (widths are fractions of
``min(H, W)``). Randomness is a ``numpy.random.default_rng`` seeded by the caller, so a seed gives the
same masks on every machine.

Shapes (:data:`KINDS`, in the order :func:`real_pairs` cycles through them):

- ``"person"`` — a standing figure with arms spread out (a jump / star pose): head, neck, torso,
  hips, two bent arms ending in hands and two legs with feet. About a third of the frame (~30 %)
  and touching ~95 % of the columns (the arms reach from ~5 % to ~95 % of the width).
- ``"animal"`` — a quadruped side view: an elliptic body, head with ears and a snout, four thin legs
  (~1 % of the frame wide), a thin curled tail (~0.6 %) that touches the back and so encloses a hole,
  and a second, explicit hole (a harness gap) through the body, plus an eye. ~14-17 % of the frame,
  ~77-80 % of the columns, 4-7 holes.
- ``"text"`` — several lines of random Hershey-font characters (letters, digits), strokes ~0.5-1 % of
  the frame wide, and a rule or two: many thin strokes, 70-150 components (letters, dots of i and j),
  40-80 holes (``o``/``a``/``e`` ...). ~14-20 % of the frame.
- ``"blobs"`` — 130-200 drawn (100-150 components after overlaps): rotated ellipses and irregular polygons, radii
  log-uniform from ~0.3 % to ~5 % of the frame (a few pixels up to ~50 px at 1024²), some touching. ~12-15 % of the
  frame.
- ``"large"`` — one large object spanning ~92 % of the columns (a vehicle / sofa-like silhouette: a
  smooth irregular hull with a raised cabin and legs/wheels) with 4-7 holes (windows, a wheel well, round
  cut-outs, a slot). ~40-48 % of the frame, 5-8 holes.

:func:`make_prediction` turns a gt into what a segmentation network writes as a uint8 PNG: a soft
sigmoid ramp across the boundary (2-6 px at 1024², grey levels all along it), a wobbling boundary (a
smooth random displacement), confidence that dips in places inside the object, some of the thin parts
missed (an opening's residue, dropped in random regions), a few false-positive blobs of middling
confidence, a faint background haze and Gaussian noise — every value 0..255.

:func:`real_pairs` returns ``[(pred_u8, gt_u8), ...]`` with kinds ``KINDS[(seed + i) % 5]``.
"""

from __future__ import annotations

import itertools
import math

import cv2
import numpy as np

KINDS = ("person", "animal", "text", "blobs", "large")
"""The shapes, in the order :func:`real_pairs` cycles through them."""

_SHIFT = 4  # cv2 fixed-point fraction bits: sub-pixel vertices
_ONE = 1 << _SHIFT


class _Canvas:
    """A supersampled uint8 canvas drawn in frame-relative coordinates (x by width, y by height)."""

    def __init__(self, height: int, width: int):
        self.height, self.width = height, width
        self.scale = 4 if max(height, width) <= 1024 else 2
        self.image = np.zeros((height * self.scale, width * self.scale), np.uint8)
        self.unit = min(height, width) * self.scale  # lengths are fractions of min(H, W)

    def _pt(self, x: float, y: float) -> tuple[int, int]:
        return (round(x * self.width * self.scale * _ONE), round(y * self.height * self.scale * _ONE))

    def _len(self, length: float) -> int:
        return max(1, round(length * self.unit))

    def ellipse(self, x: float, y: float, rx: float, ry: float, angle: float = 0.0, value: int = 255) -> None:
        """An ellipse of semi-axes ``rx``, ``ry`` (fractions of min(H, W)) rotated by ``angle`` degrees."""
        axes = (max(1, round(rx * self.unit * _ONE)), max(1, round(ry * self.unit * _ONE)))
        cv2.ellipse(self.image, self._pt(x, y), axes, angle, 0, 360, value, -1, cv2.LINE_8, _SHIFT)

    def polygon(self, points: list[tuple[float, float]], value: int = 255) -> None:
        cv2.fillPoly(self.image, [np.array([self._pt(x, y) for x, y in points], np.int32)], value, cv2.LINE_8, _SHIFT)

    def stroke(self, points: list[tuple[float, float]], width: float, value: int = 255) -> None:
        """A polyline of ``width`` (fraction of min(H, W)) with round joints and caps."""
        thickness = self._len(width)
        pts = [self._pt(x, y) for x, y in points]
        for a, b in itertools.pairwise(pts):
            cv2.line(self.image, a, b, value, thickness, cv2.LINE_8, _SHIFT)
        radius = max(1, thickness // 2) * _ONE
        for p in pts:
            cv2.circle(self.image, p, radius, value, -1, cv2.LINE_8, _SHIFT)

    def text(self, string: str, x: float, y: float, height: float, font: int, thickness: float) -> float:
        """``string`` with its baseline-left at ``(x, y)``, glyphs ``height`` tall (of min(H, W)); returns its width
        (of W)."""
        scale = height * self.unit / cv2.getTextSize("H", font, 1.0, 1)[0][1]
        org = (round(x * self.width * self.scale), round(y * self.height * self.scale))
        cv2.putText(self.image, string, org, font, scale, 255, self._len(thickness), cv2.LINE_8)
        return cv2.getTextSize(string, font, scale, self._len(thickness))[0][0] / (self.width * self.scale)

    def coverage(self) -> np.ndarray:
        """The uint8 antialiased mask at ``H x W``: 255 x the covered fraction of each pixel."""
        if self.scale == 1:
            return self.image.copy()
        return cv2.resize(self.image, (self.width, self.height), interpolation=cv2.INTER_AREA)


def _person(c: _Canvas, rng: np.random.Generator) -> None:
    def u(a: float, b: float) -> float:
        return rng.uniform(a, b)

    aspect = c.width / c.height  # x offsets below are in width units; keep the figure's proportions on min(H, W)
    kx = min(1.0, 1.0 / aspect) if aspect > 1 else 1.0
    cx, top = u(0.47, 0.53), u(0.03, 0.06)
    head_r = u(0.075, 0.085)
    head_y = top + head_r
    c.ellipse(cx, head_y, head_r * 0.85, head_r, u(-8, 8))
    neck_y = head_y + head_r * 0.95
    c.stroke([(cx, head_y), (cx, neck_y + 0.03)], 0.07)
    shoulder_y, hip_y = neck_y + 0.035, u(0.55, 0.6)
    sw, hw = u(0.22, 0.24) * kx, u(0.18, 0.2) * kx  # half widths
    c.polygon([(cx - sw, shoulder_y), (cx + sw, shoulder_y), (cx + sw * 0.95, shoulder_y + 0.12),
               (cx + hw * 0.85, hip_y - 0.08), (cx + hw, hip_y + 0.04), (cx - hw, hip_y + 0.04),
               (cx - hw * 0.85, hip_y - 0.08), (cx - sw * 0.95, shoulder_y + 0.12)])
    c.ellipse(cx - sw * 0.85, shoulder_y + 0.035, 0.045, 0.04)  # rounded shoulders
    c.ellipse(cx + sw * 0.85, shoulder_y + 0.035, 0.045, 0.04)
    for side in (-1, 1):  # arms: shoulder, elbow, wrist, hand; reaching to ~5 % / ~95 % of the width
        sx = cx + side * sw * 0.9
        ex, ey = cx + side * u(0.27, 0.32), shoulder_y + u(-0.08, 0.06)
        wx, wy = (0.5 + side * u(0.41, 0.43)), ey + u(-0.14, 0.04)
        c.stroke([(sx, shoulder_y + 0.03), (ex, ey)], u(0.085, 0.095))
        c.stroke([(ex, ey), (wx, wy)], u(0.065, 0.075))
        c.ellipse(wx + side * 0.015, wy, 0.035, 0.028, u(0, 180))
        # fingers: short thin strokes
        for k in range(3):
            ang = math.radians(side * 20 * (k - 1) + (0 if side > 0 else 180))
            c.stroke([(wx + side * 0.02, wy),
                      (wx + side * 0.02 + 0.04 * math.cos(ang) * kx, wy + 0.04 * math.sin(ang))], 0.012)
    for side in (-1, 1):  # legs: hip, knee, ankle, foot
        hx = cx + side * hw * 0.55
        kx_, ky = cx + side * u(0.12, 0.16) * kx, u(0.74, 0.78)
        ax, ay = cx + side * u(0.17, 0.22) * kx, u(0.93, 0.95)
        c.stroke([(hx, hip_y), (kx_, ky)], u(0.14, 0.15))
        c.stroke([(kx_, ky), (ax, ay)], u(0.09, 0.1))
        c.stroke([(ax, ay), (ax + side * 0.05 * kx, ay + 0.02)], 0.045)


def _animal(c: _Canvas, rng: np.random.Generator) -> None:
    def u(a: float, b: float) -> float:
        return rng.uniform(a, b)

    bx, by = u(0.45, 0.55), u(0.42, 0.48)
    brx, bry = u(0.25, 0.28), u(0.12, 0.14)
    c.ellipse(bx, by, brx, bry, u(-4, 4))
    c.ellipse(bx + brx * 0.75, by - bry * 0.3, brx * 0.35, bry * 0.9, u(-20, -5))  # chest
    hx, hy = bx + brx * 1.15, by - bry * 1.4
    c.stroke([(bx + brx * 0.8, by - bry * 0.4), (hx, hy)], 0.09)  # neck
    c.ellipse(hx, hy, 0.065, 0.05, u(-15, 15))  # head
    c.ellipse(hx + 0.06, hy + 0.02, 0.04, 0.025, u(0, 15))  # snout
    c.polygon([(hx - 0.04, hy - 0.03), (hx - 0.025, hy - 0.11), (hx - 0.005, hy - 0.04)])  # ears
    c.polygon([(hx, hy - 0.04), (hx + 0.02, hy - 0.115), (hx + 0.035, hy - 0.035)])
    c.ellipse(hx + 0.01, hy - 0.01, 0.009, 0.009, value=0)  # an eye (a small hole)
    leg_w = u(0.009, 0.012)
    for _k, fx in enumerate((-0.8, -0.55, 0.5, 0.75)):  # four thin legs with a joint and a hoof
        x0, y0 = bx + fx * brx, by + bry * 0.7
        knee = (x0 + u(-0.02, 0.02), by + bry + u(0.09, 0.12))
        foot = (knee[0] + u(-0.03, 0.03), u(0.88, 0.93))
        c.stroke([(x0, y0), knee], leg_w * 1.8)
        c.stroke([knee, foot], leg_w)
        c.ellipse(foot[0] + 0.008, foot[1], 0.014, 0.007)
    # a thin tail from the rump, curling up and back onto the back: the loop and the gap under it are holes
    tail_w = u(0.005, 0.007)
    t0, t1 = (bx - brx * 0.9, by - bry * 0.2), (bx - brx * 0.55, by - bry * 0.7)  # both inside the body
    radius = u(0.06, 0.075)
    centre = (bx - brx * 1.05 - radius * 0.6, by - bry * 1.2 - radius)
    pts = [(centre[0] + radius * math.cos(a), centre[1] + radius * math.sin(a))
           for a in np.radians(np.linspace(u(100, 120), u(100, 120) - 340, 40))]
    c.stroke([t0, *pts, t1], tail_w)
    # a hole through the body (a harness gap)
    c.ellipse(bx - brx * 0.15, by + bry * 0.05, brx * 0.22, bry * 0.25, u(-10, 10), value=0)


def _text(c: _Canvas, rng: np.random.Generator) -> None:
    alphabet = "ABCDEFGHKMNOPQRSTUWXYZabdegijkmnopqrstuwxyz0123456789&%?!"
    fonts = (cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_COMPLEX, cv2.FONT_HERSHEY_TRIPLEX)
    lines = int(rng.integers(6, 10))
    y = rng.uniform(0.02, 0.05)
    for _ in range(lines):
        height = rng.uniform(0.045, 0.075)
        y += height * 1.25
        if y > 0.97:
            break
        font, thickness = fonts[rng.integers(len(fonts))], height * rng.uniform(0.09, 0.16)
        x = rng.uniform(0.02, 0.06)
        while x < 0.9:
            word = "".join(rng.choice(list(alphabet), size=int(rng.integers(2, 8))))
            x += c.text(word, x, y, height, font, thickness) + rng.uniform(0.02, 0.05)
        y += height * rng.uniform(0.2, 0.5)
    # a few underlines / rules: long thin strokes
    for _ in range(int(rng.integers(1, 3))):
        yy = rng.uniform(0.1, 0.95)
        c.stroke([(rng.uniform(0.02, 0.2), yy), (rng.uniform(0.6, 0.98), yy)], rng.uniform(0.004, 0.008))


def _blobs(c: _Canvas, rng: np.random.Generator) -> None:
    count = int(rng.integers(130, 201))
    radii = np.exp(rng.uniform(np.log(0.003), np.log(0.05), count))
    for r in radii:
        x, y = rng.uniform(0.02, 0.98), rng.uniform(0.02, 0.98)
        if rng.random() < 0.6:
            c.ellipse(x, y, r, r * rng.uniform(0.4, 1.0), rng.uniform(0, 180))
        else:  # an irregular star-shaped polygon
            k = int(rng.integers(5, 11))
            angles = np.sort(rng.uniform(0, 2 * np.pi, k))
            rr = r * rng.uniform(0.5, 1.2, k)
            aspect = c.height / c.width
            c.polygon([(x + a * math.cos(t) * aspect, y + a * math.sin(t)) for a, t in zip(rr, angles)])


def _large(c: _Canvas, rng: np.random.Generator) -> None:
    def u(a: float, b: float) -> float:
        return rng.uniform(a, b)

    left, right = u(0.03, 0.05), u(0.95, 0.97)
    top, bottom = u(0.3, 0.36), u(0.74, 0.8)
    # a smooth irregular hull: sampled bottom / top profiles with a raised cabin in the middle
    xs = np.linspace(left, right, 48)
    cabin_l, cabin_r = u(0.25, 0.35), u(0.62, 0.72)
    t = (xs - left) / (right - left)
    top_profile = top + 0.05 * np.sin(2 * np.pi * t * u(1.0, 2.0) + u(0, 6.28)) * 0.4
    cabin = 1 / (1 + np.exp(-(xs - cabin_l) / 0.02)) - 1 / (1 + np.exp(-(xs - cabin_r) / 0.02))
    top_profile = top_profile - u(0.12, 0.16) * cabin
    ends = np.minimum(t, 1 - t)
    top_profile = top_profile + 0.08 * np.exp(-ends / 0.04)  # rounded ends
    bottom_profile = bottom - 0.05 * np.exp(-ends / 0.05)
    c.polygon([(x, y) for x, y in zip(xs, top_profile)] + [(x, y) for x, y in zip(xs[::-1], bottom_profile[::-1])])
    # wheels / legs below
    for wx in (u(0.18, 0.24), u(0.74, 0.8)):
        c.ellipse(wx, bottom, 0.09, 0.09)
        c.ellipse(wx, bottom, 0.035, 0.035, value=0)  # hub hole
    # holes: windows in the cabin, round cut-outs, a slot
    for k in range(int(rng.integers(2, 4))):
        wl = cabin_l + 0.03 + k * (cabin_r - cabin_l - 0.06) / 3
        wr = wl + (cabin_r - cabin_l - 0.06) / 3 - 0.02
        wt, wb = top - u(0.08, 0.1), top + u(0.02, 0.05)
        c.polygon([(wl + 0.01, wt), (wr, wt), (wr, wb), (wl, wb)], value=0)
    for _ in range(int(rng.integers(1, 3))):
        c.ellipse(u(0.1, 0.9), u(top + 0.1, bottom - 0.1), u(0.02, 0.05), u(0.02, 0.04), u(0, 180), value=0)
    slot_y = u(top + 0.08, bottom - 0.1)
    c.stroke([(u(0.35, 0.45), slot_y), (u(0.55, 0.65), slot_y)], u(0.01, 0.02), value=0)


_DRAW = {"person": _person, "animal": _animal, "text": _text, "blobs": _blobs, "large": _large}


def make_gt(kind: str, size: tuple[int, int] = (1024, 1024), seed: int | np.random.Generator = 0,
            antialiased: bool = True) -> np.ndarray:
    """A ``(H, W)`` uint8 gt of ``kind`` (:data:`KINDS`): 0/255 (``antialiased=False``) or with grey edges."""
    if kind not in _DRAW:
        raise ValueError(f"`kind` must be among {KINDS}, got {kind!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    height, width = size
    canvas = _Canvas(height, width)
    _DRAW[kind](canvas, rng)
    soft = canvas.coverage()
    return soft if antialiased else np.where(soft > 128, 255, 0).astype(np.uint8)


def _smooth_field(shape: tuple[int, int], rng: np.random.Generator, cells: int = 8) -> np.ndarray:
    """A smooth random field in about [-1, 1]: ``cells x cells`` noise upsampled bicubically."""
    height, width = shape
    coarse = rng.uniform(-1, 1, (cells + 1, cells + 1)).astype(np.float32)
    return cv2.resize(coarse, (width, height), interpolation=cv2.INTER_CUBIC)


def make_prediction(gt: np.ndarray, seed: int | np.random.Generator = 0) -> np.ndarray:
    """A model-output-like ``(H, W)`` uint8 prediction of ``gt`` (0..255, see the module notes)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    height, width = gt.shape
    unit = min(height, width) / 1024  # pixel scales below are for 1024²
    fg = (gt > 128).astype(np.uint8)
    # missed thin parts: what an opening removes, dropped where a smooth field is positive
    k = max(3, round(9 * unit) | 1)
    opened = cv2.morphologyEx(fg, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    thin = (fg > opened) & (_smooth_field(gt.shape, rng, 6) > 0.1)
    fg = np.where(thin, 0, fg).astype(np.uint8)
    # signed distance (positive inside), the boundary displaced by a smooth field
    inside = cv2.distanceTransform(fg, cv2.DIST_L2, 5)
    outside = cv2.distanceTransform(1 - fg, cv2.DIST_L2, 5)
    signed = inside - outside + _smooth_field(gt.shape, rng, 10) * rng.uniform(1.5, 3.0) * unit
    ramp = rng.uniform(2.0, 6.0) * max(unit, 0.25)
    soft = 1 / (1 + np.exp(np.clip(-signed / (ramp / 4), -60, 60)))  # ~ramp px from 12 % to 88 %
    # confidence dips inside the object, a faint haze outside it
    soft *= 1 - np.clip(_smooth_field(gt.shape, rng, 5), 0, 1) * rng.uniform(0.2, 0.45)
    soft += np.clip(_smooth_field(gt.shape, rng, 7), 0, 1) * rng.uniform(0.02, 0.08) * (1 - soft)
    # false-positive blobs of middling confidence
    blobs = np.zeros(gt.shape, np.float32)
    for _ in range(int(rng.integers(2, 6))):
        centre = (int(rng.uniform(0, width)), int(rng.uniform(0, height)))
        axes = (max(1, int(rng.uniform(8, 40) * unit)), max(1, int(rng.uniform(6, 30) * unit)))
        cv2.ellipse(blobs, centre, axes, rng.uniform(0, 180), 0, 360, float(rng.uniform(0.3, 0.9)), -1)
    sigma = max(0.5, 4 * unit)
    blobs = cv2.GaussianBlur(blobs, (0, 0), sigma)
    soft = np.maximum(soft, blobs)
    soft += rng.normal(0, rng.uniform(0.01, 0.03), gt.shape)
    return np.clip(soft * 255 + 0.5, 0, 255).astype(np.uint8)


def real_pairs(size: tuple[int, int] = (1024, 1024), count: int = 4, seed: int = 0,
               antialiased: bool | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` ``(pred_u8, gt_u8)`` pairs of ``H x W`` numpy arrays, kinds ``KINDS[(seed + i) % 5]``.

    Args:
        size: ``(H, W)``.
        count: number of pairs.
        seed: the first kind and every pair's randomness (pair ``i`` uses ``default_rng([seed, i])``).
        antialiased: grey-edged gts (True), 0/255 gts (False), or ``None``: alternate, antialiased first.
    """
    pairs = []
    for i in range(count):
        rng = np.random.default_rng([seed, i])
        kind = KINDS[(seed + i) % len(KINDS)]
        gt = make_gt(kind, size, rng, antialiased if antialiased is not None else i % 2 == 0)
        pairs.append((make_prediction(gt, rng), gt))
    return pairs


def pair_kinds(count: int = 4, seed: int = 0, antialiased: bool | None = None) -> list[str]:
    """The kinds (and gt edges) :func:`real_pairs` draws with these arguments, e.g. ``["person (aa gt)", ...]``."""
    out = []
    for i in range(count):
        aa = antialiased if antialiased is not None else i % 2 == 0
        out.append(f"{KINDS[(seed + i) % len(KINDS)]} ({'antialiased' if aa else '0/255'} gt)")
    return out


def describe(gt: np.ndarray) -> dict[str, float]:
    """Coverage, share of columns touched, components, holes and grey-edge share of a gt (for checks)."""
    fg = (gt > 128).astype(np.uint8)
    components = cv2.connectedComponents(fg, connectivity=8)[0] - 1
    background = cv2.connectedComponents(1 - fg, connectivity=4)[0] - 1
    return {"coverage": float(fg.mean()), "columns": float(fg.any(axis=0).mean()), "components": components,
            "holes": max(0, background - 1), "grey": float(((gt > 0) & (gt < 255)).mean())}


if __name__ == "__main__":  # python benchmarks/shapes.py [out_dir]: statistics, and PNGs when a folder is given
    import sys

    out = sys.argv[1] if len(sys.argv) > 1 else None
    for index, (pred, gt) in enumerate(real_pairs((1024, 1024), count=5)):
        stats = describe(gt)
        print(KINDS[index], {k: round(v, 3) for k, v in stats.items()},
              "pred levels", len(np.unique(pred)), "pred mean", round(float(pred.mean()), 1))
        if out:
            cv2.imwrite(f"{out}/{KINDS[index]}_gt.png", gt)
            cv2.imwrite(f"{out}/{KINDS[index]}_pred.png", pred)
