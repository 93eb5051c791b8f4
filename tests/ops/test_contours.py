"""Border following == cv2.findContours(mask, RETR_TREE, CHAIN_APPROX_NONE): every point, order, direction."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from benchmarks.shapes import real_pairs
from nobg_metrics.ops.contours import find_contours
from nobg_metrics.ops.contours_fixed import trace_contours_fixed
from tests.ops.test_thinning import STRESS


def _reference(mask: np.ndarray) -> list[np.ndarray]:
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)
    return [c.reshape(-1, 2) for c in contours]


def _split(found) -> list[np.ndarray]:
    offsets = np.r_[0, np.cumsum(found.lengths.numpy())]
    points = found.points.numpy()
    return [points[offsets[k]:offsets[k + 1]] for k in range(len(offsets) - 1)]


def _assert_same(mask: np.ndarray) -> None:
    expected, ours = _reference(mask), _split(find_contours(torch.from_numpy(mask)))
    assert len(ours) == len(expected), mask.shape
    for k, (a, b) in enumerate(zip(ours, expected)):
        assert np.array_equal(a, b), (mask.shape, k)


@pytest.mark.parametrize("index", range(len(STRESS)))
def test_stress_set(index: int) -> None:
    _assert_same(STRESS[index])


def test_random_noise_masks() -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        _assert_same(rng.random((h, w)) < rng.uniform(0.2, 0.8))


def test_realistic_shapes_and_their_errors() -> None:
    for pred, gt in real_pairs((96, 130), 5, seed=2):
        _assert_same(gt > 128)
        _assert_same((pred > 128) ^ (gt > 128))


def test_batch_equals_images_and_labels() -> None:
    rng = np.random.default_rng(3)
    masks = np.stack([rng.random((20, 31)) < 0.5 for _ in range(4)])
    found = find_contours(torch.from_numpy(masks))
    expected = [c for m in masks for c in _reference(m)]
    assert [len(c) for c in expected] == found.lengths.tolist()
    assert all(np.array_equal(a, b) for a, b in zip(_split(found), expected))
    images = [i for i, m in enumerate(masks) for _ in _reference(m)]
    assert found.image.tolist() == images
    from skimage.measure import label
    assert all(np.array_equal(found.labels[i].numpy(), label(masks[i], connectivity=2)) for i in range(4))


def test_empty_and_errors() -> None:
    found = find_contours(torch.zeros(3, 5, dtype=torch.bool))
    assert found.lengths.numel() == 0 and found.points.shape == (0, 2)
    with pytest.raises(TypeError, match="mask"):
        find_contours(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="mask"):
        find_contours(torch.zeros(3, dtype=torch.bool))


def _fixed_split(mask: np.ndarray) -> list[np.ndarray]:
    """The sync-free list's contours of one image, split where the contour id changes."""
    found = trace_contours_fixed(torch.from_numpy(mask)[None])
    real = found.real.numpy()
    assert not real[int(real.sum()):].any()  # real points first, padding after
    points = np.c_[found.x.numpy(), found.y.numpy()][real]
    contour = found.contour.numpy()[real]
    cuts = np.r_[0, np.flatnonzero(np.diff(contour)) + 1, len(contour)]
    return [points[cuts[k]:cuts[k + 1]] for k in range(len(cuts) - 1) if cuts[k + 1] > cuts[k]]


@pytest.mark.parametrize("index", range(len(STRESS)))
def test_sync_free_list_equals_opencv_on_the_stress_set(index: int) -> None:
    expected, ours = _reference(STRESS[index]), _fixed_split(STRESS[index])
    assert len(ours) == len(expected)
    assert all(np.array_equal(a, b) for a, b in zip(ours, expected))


def test_sync_free_list_batch_components_and_no_host_sync() -> None:
    from skimage.measure import label

    from tests.helpers.syncs import HostSyncRecorder
    rng = np.random.default_rng(4)
    masks = np.stack([rng.random((17, 26)) < d for d in (0.0, 0.3, 0.6, 1.0)])
    batch = torch.from_numpy(masks)
    found = trace_contours_fixed(batch)
    expected = [c for m in masks for c in _reference(m)]
    real = found.real.numpy()
    assert int(real.sum()) == sum(len(c) for c in expected)
    assert np.array_equal(np.c_[found.x.numpy(), found.y.numpy()][real], np.concatenate(expected))
    assert found.image.numpy()[real].tolist() == [i for i, m in enumerate(masks) for c in _reference(m) for _ in c]
    assert found.components.tolist() == [int(label(m, connectivity=2).max()) for m in masks]
    with HostSyncRecorder() as recorder:
        trace_contours_fixed(batch)
    assert not recorder.hits, recorder.hits
