"""Cross erosion/dilation == cv2.erode / cv2.dilate with disk(1), iterations=k, default borders."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from skimage.morphology import disk

from nobg_metrics.ops.cross_morphology import cross_dilate, cross_erode
from tests.ops.test_thinning import STRESS

KERNEL = disk(1)


@pytest.mark.parametrize("iterations", [0, 1, 2, 5])
def test_equals_opencv(iterations: int) -> None:
    for mask in STRESS:
        m8 = mask.astype(np.uint8)
        t = torch.from_numpy(mask)
        assert np.array_equal(cross_erode(t, iterations).numpy(),
                              cv2.erode(m8, KERNEL, iterations=iterations).astype(bool)), mask.shape
        assert np.array_equal(cross_dilate(t, iterations).numpy(),
                              cv2.dilate(m8, KERNEL, iterations=iterations).astype(bool)), mask.shape


def test_batch_matches_per_image_and_input_untouched() -> None:
    masks = torch.from_numpy(np.stack([STRESS[-1], ~STRESS[-1], STRESS[-1]]))
    before = masks.clone()
    eroded = cross_erode(masks, 3)
    for i in range(3):
        assert torch.equal(eroded[i], cross_erode(masks[i], 3))
    assert torch.equal(masks, before)


def test_errors() -> None:
    with pytest.raises(TypeError, match="mask"):
        cross_erode(torch.zeros(3, 3), 1)
    with pytest.raises(ValueError, match="iterations"):
        cross_dilate(torch.zeros(3, 3, dtype=torch.bool), -1)
    with pytest.raises(ValueError, match="mask"):
        cross_dilate(torch.zeros(3, dtype=torch.bool), 1)
