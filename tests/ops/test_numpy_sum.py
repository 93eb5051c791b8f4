"""numpy's pairwise summation, bit for bit: the order that decides ties of the adaptive threshold."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics.ops.numpy_sum import numpy_mean, pairwise_sum


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_small_size_and_some_large_ones_equal_np_sum(dtype):
    rng = np.random.default_rng(0)
    for size in [*range(1, 300), 1000, 4095, 8193, 100_003]:
        rows = (rng.integers(0, 256, (2, size)) / 255).astype(dtype)
        expected = np.array([np.sum(rows[0]), np.sum(rows[1])])
        assert np.array_equal(pairwise_sum(torch.from_numpy(rows)).numpy(), expected), size


def test_image_means_equal_np_mean_on_non_square_images():
    rng = np.random.default_rng(1)
    for shape in [(37, 53), (1, 999), (999, 1), (333, 777), (2, 3)]:
        image = rng.integers(0, 256, shape) / 255
        image = (image - image.min()) / (image.max() - image.min())
        assert numpy_mean(torch.from_numpy(image)[None]).item() == image.mean(), shape
