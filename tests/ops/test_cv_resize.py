"""OpenCV-exact uint8 INTER_LINEAR resize: 0 mismatching pixels against cv2.resize (cv2: test-only)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from nobg_metrics.ops.cv_resize import linear_taps, resize_linear_u8

SIZES = (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 56, 63, 64, 65, 127, 129, 257)


def _cv2(image: np.ndarray, height: int, width: int) -> np.ndarray:
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR)


def _ours(image: np.ndarray, height: int, width: int) -> np.ndarray:
    return resize_linear_u8(torch.from_numpy(image), height, width).numpy()


def _assert_equal(image: np.ndarray, height: int, width: int) -> None:
    ref, ours = _cv2(image, height, width), _ours(image, height, width)
    assert ours.shape == ref.shape == (height, width)
    mismatches = int((ours != ref).sum())
    assert mismatches == 0, f"{image.shape} -> {(height, width)}: {mismatches} pixels differ"


def test_random_size_pairs_up_and_down() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        h, w, height, width = (int(v) for v in rng.choice(SIZES, 4))
        _assert_equal(rng.integers(0, 256, (h, w)).astype(np.uint8), height, width)


@pytest.mark.parametrize("shape, target", [
    ((40, 56), (67, 31)), ((17, 9), (8, 30)), ((1, 12), (5, 7)),  # mixed up and down
    ((10, 10), (5, 5)), ((40, 56), (20, 28)),  # exact 2x down: OpenCV's resizeAreaFast path
    ((30, 60), (10, 20)), ((64, 64), (16, 16)),  # exact 3x, 4x down: the linear path
    ((41, 57), (20, 28)), ((1023, 7), (1024, 9)), ((97, 89), (1000, 3)),  # non-integer scales
    ((320, 320), (1024, 1024)), ((1024, 768), (320, 240)),  # network-output sizes
    ((1, 50), (7, 300)), ((50, 1), (300, 7)), ((3, 500), (400, 2)), ((1, 1), (9, 13)), ((200, 300), (1, 1)),
    ((1, 257), (129, 1)), ((2, 2), (1, 3)),  # extreme aspect ratios
    ((40, 56), (40, 31)), ((40, 56), (67, 56)),  # one axis unchanged
])
def test_named_size_pairs(shape, target) -> None:
    rng = np.random.default_rng(1)
    _assert_equal(rng.integers(0, 256, shape).astype(np.uint8), *target)


def test_every_level_ramps_and_extremes() -> None:
    ramp = np.tile(np.arange(256, dtype=np.uint8), (3, 1))
    for target in [(7, 1000), (5, 97), (1, 255), (11, 511)]:
        _assert_equal(ramp, *target)
        _assert_equal(np.ascontiguousarray(ramp.T), target[1], target[0])
    checker = (np.indices((9, 14)).sum(0) % 2 * 255).astype(np.uint8)  # 0/255 neighbours: largest products
    for level in (0, 255):
        _assert_equal(np.full((13, 7), level, np.uint8), 29, 3)
    for target in [(31, 47), (4, 5), (18, 28)]:
        _assert_equal(checker, *target)


def test_same_size_is_a_copy_and_batches_resize_each_map() -> None:
    rng = np.random.default_rng(2)
    batch = rng.integers(0, 256, (3, 23, 41)).astype(np.uint8)
    same = resize_linear_u8(torch.from_numpy(batch), 23, 41)
    assert torch.equal(same, torch.from_numpy(batch)) and same.data_ptr() != torch.from_numpy(batch).data_ptr()
    out = resize_linear_u8(torch.from_numpy(batch), 30, 17).numpy()
    assert out.shape == (3, 30, 17)
    for index in range(3):
        np.testing.assert_array_equal(out[index], _cv2(batch[index], 30, 17))


def test_taps_of_an_upscale_clamp_columns_but_not_row_weights() -> None:
    # 2 -> 4: positions -0.25, 0.25, 0.75, 1.25; the outer two clamp
    assert [t.tolist() for t in linear_taps(2, 4, clamp_coefficients=False)] == \
        [[0, 0, 0, 1], [0, 1, 1, 1], [512, 1536, 512, 1536], [1536, 512, 1536, 512]]


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="uint8"):
        resize_linear_u8(torch.zeros(4, 4), 2, 2)
    with pytest.raises(ValueError, match="height and width"):
        resize_linear_u8(torch.zeros(4, 4, dtype=torch.uint8), 0, 2)
