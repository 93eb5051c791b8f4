"""The Lab conversions and CIEDE2000 of :mod:`nobg_metrics.ops.lab` against OpenCV (bit for bit) and scikit-image
(float64, to rounding)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from skimage.color import deltaE_ciede2000, rgb2lab

from nobg_metrics.ops.lab import ciede2000, opencv_rgb_to_lab, skimage_rgb_to_lab


def _as_image(colours: np.ndarray) -> np.ndarray:
    """``(N, 3)`` uint8 colours as an ``(N / 256, 256, 3)`` image."""
    return colours.reshape(-1, 256, 3)


def _torch(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)[None].contiguous()


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor[0].permute(1, 2, 0).numpy()


def _colours(seed: int, count: int) -> np.ndarray:
    """Random colours plus every grey, every pure and every two-channel ramp (the tables' edges)."""
    levels = np.arange(256, dtype=np.uint8)
    zeros = np.zeros(256, np.uint8)
    ramps = [np.stack(c, 1) for c in [(levels, levels, levels), (levels, zeros, zeros), (zeros, levels, zeros),
                                       (zeros, zeros, levels), (levels, levels, zeros), (zeros, levels, levels)]]
    random = np.random.default_rng(seed).integers(0, 256, (count, 3), dtype=np.uint8)
    return np.concatenate([*ramps, random])


def test_opencv_lab_is_bit_exact_on_a_dense_sample():
    image = _as_image(_colours(0, 1 << 16))
    assert np.array_equal(_numpy(opencv_rgb_to_lab(_torch(image))), cv2.cvtColor(image, cv2.COLOR_RGB2LAB))


@pytest.mark.slow
def test_opencv_lab_is_bit_exact_on_all_colours():
    codes = np.arange(1 << 24, dtype=np.int64)
    image = np.stack([codes >> 16, (codes >> 8) & 255, codes & 255], -1).astype(np.uint8).reshape(4096, 4096, 3)
    assert np.array_equal(_numpy(opencv_rgb_to_lab(_torch(image))), cv2.cvtColor(image, cv2.COLOR_RGB2LAB))


def test_skimage_lab_to_rounding():
    image = _as_image(_colours(1, 1 << 14))
    ours, reference = _numpy(skimage_rgb_to_lab(_torch(image))), rgb2lab(image)
    assert np.abs(ours - reference).max() <= 1e-12


def test_ciede2000_to_rounding():
    rng = np.random.default_rng(2)
    first = _as_image(_colours(3, 1 << 13))
    second = np.clip(first.astype(int) + rng.integers(-40, 41, first.shape), 0, 255).astype(np.uint8)
    second[:4] = first[:4]  # equal colours: ΔE = 0
    second[4:8] = 0  # black against colours: a zero chroma (the hue rules for C1 C2 = 0)
    lab1, lab2 = rgb2lab(first), rgb2lab(second)
    ours = ciede2000(_torch(lab1), _torch(lab2))[0].numpy()
    assert np.abs(ours - deltaE_ciede2000(lab1, lab2)).max() <= 1e-12
    # opposite hues around the 0 / 2π seam and exactly opposite ones
    lab = np.array([[[50.0, 10.0, 0.1], [50.0, 10.0, -0.1], [60.0, -20.0, 0.0], [60.0, 20.0, 0.0]]])
    ours = ciede2000(_torch(lab[:, :2]), _torch(lab[:, 2:]))[0].numpy()
    assert np.abs(ours - deltaE_ciede2000(lab[:, :2], lab[:, 2:])).max() <= 1e-12
