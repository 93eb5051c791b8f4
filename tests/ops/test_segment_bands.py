"""ops.segment_bands: every segment's band from one label map equals boundary-iou-api's ``mask_to_boundary`` of that
segment's mask (cv2, tests/reference/boundary_iou_ref.py), on odd, non-square, 1xN and Nx1 maps, radii beyond the
image, batched maps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics.ops.segment_bands import run_and, segment_interiors
from tests.reference.boundary_iou_ref import mask_to_boundary


def _maps(rng: np.random.Generator, height: int, width: int, block: int) -> np.ndarray:
    ids = rng.integers(0, int(rng.integers(1, 6)), (-(-height // block), -(-width // block)))
    return np.kron(ids, np.ones((block, block), np.int64))[:height, :width]


@pytest.mark.parametrize("size", [(37, 53), (1, 17), (17, 1), (1, 1), (5, 5), (2, 3), (33, 70), (64, 48)])
@pytest.mark.parametrize("radius", [1, 2, 5, 40])
def test_bands_equal_mask_to_boundary_of_each_segment(size, radius):
    rng = np.random.default_rng(size[0] * 100 + size[1] + radius)
    maps = np.stack([_maps(rng, *size, block) for block in (1, 3, 8)])
    interiors = segment_interiors(torch.from_numpy(maps), radius).numpy()
    for ids, interior in zip(maps, interiors):
        for value in np.unique(ids):
            mask = ids == value
            expected = mask_to_boundary(mask.astype(np.uint8), dilation=radius) > 0
            assert np.array_equal(mask & ~interior, expected), (size, radius, value)


def test_run_and_covers_any_length():
    flags = torch.rand(3, 50, generator=torch.Generator().manual_seed(0)) < 0.9
    for length in range(1, 51):
        expected = torch.stack([flags[:, j:j + length].all(1) for j in range(50 - length + 1)], 1)
        assert torch.equal(run_and(flags, length, 1), expected), length


def test_radius_must_be_positive():
    with pytest.raises(ValueError, match="radius"):
        segment_interiors(torch.zeros(1, 3, 3, dtype=torch.int64), 0)
