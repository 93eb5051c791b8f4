"""Generated test data: masks and predictions that exercise every corner of the input contract.

Shapes include non-square, odd, tiny and 1xN images; gts include empty and full masks and grey edges
(127/128/129 around the uint8 threshold); predictions include maps that never reach 0 or 255 and
constant maps. Everything is seeded: a test that fails, fails the same way again.
"""

from __future__ import annotations

import numpy as np
import torch

SHAPES = [(37, 53), (64, 48), (1, 17), (17, 1), (5, 5), (2, 3), (96, 96), (33, 70)]
"""Image sizes every parity test sweeps (never square-only)."""


def blob_mask(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A bool mask of a few random ellipses, possibly touching the border."""
    yy, xx = np.mgrid[0:h, 0:w]
    mask = np.zeros((h, w), bool)
    for _ in range(rng.integers(1, 4)):
        cy, cx = rng.uniform(-0.1, 1.1) * h, rng.uniform(-0.1, 1.1) * w
        ry, rx = rng.uniform(0.1, 0.6) * h + 0.5, rng.uniform(0.1, 0.6) * w + 0.5
        mask |= ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
    return mask


def gt_uint8(rng: np.random.Generator, h: int, w: int, kind: str = "blob") -> np.ndarray:
    """A uint8 gt on 0..255: ``blob`` (with grey 127/128/129 edges), ``empty``, ``full`` or ``thin``."""
    if kind == "empty":
        return np.zeros((h, w), np.uint8)
    if kind == "full":
        return np.full((h, w), 255, np.uint8)
    if kind == "thin":
        gt = np.zeros((h, w), np.uint8)
        gt[:, rng.integers(0, w)] = 255
        gt[rng.integers(0, h), :] = 255
        return gt
    mask = blob_mask(rng, h, w)
    gt = np.where(mask, 255, 0).astype(np.uint8)
    edge = mask ^ np.roll(mask, 1, axis=1)
    gt[edge] = rng.choice(np.array([127, 128, 129], np.uint8), size=int(edge.sum()))
    return gt


def pred_uint8(rng: np.random.Generator, gt: np.ndarray, kind: str = "noisy") -> np.ndarray:
    """A uint8 prediction for ``gt``: ``noisy`` (gt-like + noise), ``lowrange`` (never 0 or 255),
    ``constant``, ``random`` or ``perfect``."""
    h, w = gt.shape
    if kind == "constant":
        return np.full((h, w), rng.integers(0, 256), np.uint8)
    if kind == "random":
        return rng.integers(0, 256, (h, w)).astype(np.uint8)
    if kind == "perfect":
        return np.where(gt > 128, 255, 0).astype(np.uint8)
    base = (gt > 128).astype(np.float64) * 0.7 + 0.15 + rng.normal(0, 0.2, (h, w))
    if kind == "lowrange":
        return np.clip(base * 150 + 40, 20, 230).astype(np.uint8)
    return np.clip(base * 255, 0, 255).astype(np.uint8)


def sod_pairs(seed: int = 0, shapes=SHAPES) -> list[tuple[np.ndarray, np.ndarray]]:
    """uint8 (pred, gt) pairs covering every gt kind and prediction kind over ``shapes``."""
    rng = np.random.default_rng(seed)
    pairs = []
    gt_kinds = ["blob", "blob", "empty", "full", "thin"]
    pred_kinds = ["noisy", "lowrange", "constant", "random", "perfect"]
    for index, (h, w) in enumerate(shapes):
        for k, gt_kind in enumerate(gt_kinds):
            gt = gt_uint8(rng, h, w, gt_kind)
            pairs.append((pred_uint8(rng, gt, pred_kinds[(index + k) % len(pred_kinds)]), gt))
    return pairs


def as_tensors(pairs) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Lists of torch tensors from numpy (pred, gt) pairs."""
    return [torch.from_numpy(p) for p, _ in pairs], [torch.from_numpy(g) for _, g in pairs]


def float_pairs(seed: int = 0, shapes=SHAPES) -> list[tuple[np.ndarray, np.ndarray]]:
    """float64 predictions in [0, 1] with bool gts (PySODMetrics' ``normalize=False`` inputs)."""
    rng = np.random.default_rng(seed)
    out = []
    for pred, gt in sod_pairs(seed, shapes):
        soft = pred.astype(np.float64) / 255 + rng.uniform(0, 1 / 255, pred.shape)
        out.append((np.clip(soft, 0, 1), gt > 128))
    return out
