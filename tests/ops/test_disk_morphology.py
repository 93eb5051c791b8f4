"""The Euclidean-disk dilation equals ``cv2.dilate(mask, skimage.morphology.disk(r))`` (OpenCV's default border, the
davis2017-evaluation's call) on random and thin masks, word-boundary widths, 1xN / Nx1 and radii beyond the image."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from skimage.morphology import disk

from nobg_metrics.ops.disk_morphology import dilate_disk, disk_half_widths


def _reference(mask: np.ndarray, radius: int) -> np.ndarray:
    return cv2.dilate(mask.astype(np.uint8), disk(float(radius)).astype(np.uint8)) > 0


@pytest.mark.parametrize("shape", [(1, 17), (17, 1), (5, 5), (9, 63), (11, 64), (7, 65), (13, 129), (30, 200)])
def test_equals_opencv_with_the_skimage_disk(shape):
    rng = np.random.default_rng(shape[0] * 1000 + shape[1])
    masks = np.stack([rng.random(shape) < density for density in (0.0, 0.002, 0.03, 0.3, 1.0)])
    for radius in (0, 1, 2, 3, 5, 8, 13, 70):
        ours = dilate_disk(torch.from_numpy(masks), radius).numpy()
        for mask, result in zip(masks, ours):
            assert (result == _reference(mask, radius)).all(), (shape, radius)


def test_half_widths_are_the_disk_rows():
    for radius in range(30):
        footprint = disk(radius).astype(bool)
        widths = [int(footprint[radius + dy].sum()) // 2 for dy in range(radius + 1)]
        assert disk_half_widths(radius) == widths


def test_bad_arguments():
    with pytest.raises(TypeError, match="mask"):
        dilate_disk(torch.zeros(4, 4, dtype=torch.bool), 1)
    with pytest.raises(ValueError, match="radius"):
        dilate_disk(torch.zeros(1, 4, 4, dtype=torch.bool), -1)


def test_stream_shifts_cross_words_and_rows():
    from nobg_metrics.ops.disk_morphology import shift_flat
    from nobg_metrics.ops.morphology import pack_bits, unpack_bits

    bits = torch.rand(1, 1, 300, generator=torch.Generator().manual_seed(0)) > 0.5
    words = pack_bits([bits]).reshape(-1)
    stream = unpack_bits(words.reshape(1, 1, -1), words.shape[0] * 64)[0, 0]
    for shift in (1, 5, 63, 64, 65, 130, -1, -7, -64, -100, 400, -400):
        moved = unpack_bits(shift_flat(words, shift).reshape(1, 1, -1), words.shape[0] * 64)[0, 0]
        expected = torch.zeros_like(stream)
        size = stream.shape[0]
        if 0 <= shift < size:
            expected[:size - shift] = stream[shift:]
        elif -size < shift < 0:
            expected[-shift:] = stream[:size + shift]
        assert torch.equal(moved, expected), shift
