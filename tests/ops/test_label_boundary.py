"""Every region's band of a label map at once (nobg_metrics.ops.label_boundary) against the boundary-iou-api's
``mask_to_boundary`` of each label (OpenCV port in tests/reference/boundary_iou_ref.py): non-square, 1xN, Nx1,
radii beyond the image, many labels, word-boundary widths, every integer dtype, batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics.ops.label_boundary import label_boundary
from tests.reference.boundary_iou_ref import mask_to_boundary

SHAPES = [(1, 1), (1, 17), (17, 1), (2, 3), (5, 5), (37, 53), (9, 63), (7, 64), (6, 65), (3, 130), (64, 48), (40, 129)]


def _reference(labels: np.ndarray, radius: int) -> np.ndarray:
    out = np.zeros(labels.shape, bool)
    for value in np.unique(labels):
        out |= mask_to_boundary((labels == value).astype(np.uint8), dilation=radius) > 0
    return out


def _labels(rng: np.random.Generator, height: int, width: int, kind: str) -> np.ndarray:
    if kind == "noise":
        return rng.integers(0, 4, (height, width))
    if kind == "blocks":
        block = int(rng.integers(2, 9))
        coarse = rng.integers(0, 6, (height // block + 1, width // block + 1))
        return np.repeat(np.repeat(coarse, block, 0), block, 1)[:height, :width]
    if kind == "stripes":
        return np.broadcast_to((np.arange(width) // 5) % 3, (height, width)).copy()
    return np.zeros((height, width), np.int64)  # one label


@pytest.mark.parametrize("shape", SHAPES)
def test_equals_mask_to_boundary_of_every_label(shape):
    rng = np.random.default_rng(sum(shape))
    for kind in ("noise", "blocks", "stripes", "one"):
        labels = _labels(rng, *shape, kind)
        for radius in (1, 2, 3, 5, 8, 33):
            ours = label_boundary(torch.from_numpy(labels)[None], radius)[0].numpy()
            assert np.array_equal(ours, _reference(labels, radius)), (kind, radius)


def test_every_integer_dtype_and_a_batch():
    rng = np.random.default_rng(3)
    labels = np.stack([_labels(rng, 31, 70, "blocks") for _ in range(3)])
    expected = np.stack([_reference(m, 4) for m in labels])
    for dtype in (torch.uint8, torch.int16, torch.int32, torch.int64):
        assert np.array_equal(label_boundary(torch.from_numpy(labels).to(dtype), 4).numpy(), expected), dtype


def test_rejects_bad_arguments():
    with pytest.raises(TypeError, match="integer tensor of shape"):
        label_boundary(torch.zeros(4, 4, dtype=torch.long), 1)
    with pytest.raises(TypeError, match="integer tensor"):
        label_boundary(torch.zeros(1, 4, 4), 1)
    with pytest.raises(ValueError, match="radius"):
        label_boundary(torch.zeros(1, 4, 4, dtype=torch.long), 0)
