"""Border following == cv2.findContours(mask, RETR_TREE, CHAIN_APPROX_NONE): every point, order and direction, the
hole flags and the 8-connected labels (skimage), from both forms of :func:`find_contours` (``engine``)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from skimage.measure import label

from benchmarks.shapes import real_pairs
from nobg_metrics.ops.contours import find_contours
from tests.helpers.syncs import HostSyncRecorder
from tests.ops.test_thinning import STRESS

ENGINES = ["data_sized", "fixed"]


def _reference(mask: np.ndarray) -> tuple[list[np.ndarray], list[bool]]:
    """OpenCV's contours of one image and whether each is a hole (odd depth in its tree)."""
    contours, hierarchy = cv2.findContours(mask.astype(np.uint8), cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)
    parents = hierarchy[0, :, 3] if contours else np.zeros(0, int)
    depth = []
    for k in range(len(contours)):
        d, node = 0, parents[k]
        while node >= 0:
            d, node = d + 1, parents[node]
        depth.append(d % 2 == 1)
    return [c.reshape(-1, 2) for c in contours], depth


def _assert_same(masks: np.ndarray, engine: str) -> None:
    """The list of a (B, H, W) batch equals OpenCV's per image, with skimage's labels at every point."""
    found = find_contours(torch.from_numpy(masks), engine=engine)
    real = found.real.numpy()
    assert not real[int(real.sum()):].any()  # the real points first, padding after
    points, contour, image = found.points.numpy()[real], found.contour.numpy()[real], found.image.numpy()[real]
    expected = [(b, c, hole) for b, m in enumerate(masks) for c, hole in zip(*_reference(m))]
    assert contour.tolist() == [k for k, (_, c, _) in enumerate(expected) for _ in c], masks.shape
    assert image.tolist() == [b for b, c, _ in expected for _ in c]
    assert found.hole.numpy()[real].tolist() == [hole for _, c, hole in expected for _ in c]
    assert np.array_equal(points, np.concatenate([c for _, c, _ in expected]) if expected else np.zeros((0, 2)))
    labels = [label(m, connectivity=2) for m in masks]
    assert found.component.numpy()[real].tolist() == [int(labels[b][y, x]) for b, (x, y) in zip(image, points)]
    assert found.components.tolist() == [int(lab.max()) for lab in labels]
    padding = ~found.real
    assert (found.image[padding] == len(masks)).all() and (found.contour[padding] == -1).all()
    assert not found.hole[padding].any() and not found.component[padding].any()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("index", range(len(STRESS)))
def test_stress_set(index: int, engine: str) -> None:
    _assert_same(STRESS[index][None], engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_random_noise_masks(engine: str) -> None:
    rng = np.random.default_rng(7)
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        _assert_same((rng.random((h, w)) < rng.uniform(0.2, 0.8))[None], engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_realistic_shapes_and_their_errors(engine: str) -> None:
    pairs = real_pairs((96, 130), 5 if engine == "data_sized" else 2, seed=2)
    _assert_same(np.stack([gt > 128 for _, gt in pairs] + [(p > 128) ^ (g > 128) for p, g in pairs]), engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_batch_with_empty_and_full_images(engine: str) -> None:
    rng = np.random.default_rng(4)
    _assert_same(np.stack([rng.random((17, 26)) < d for d in (0.0, 0.3, 0.6, 1.0)]), engine)


def test_auto_picks_the_data_sized_form_on_cpu_and_the_fixed_form_makes_no_host_sync() -> None:
    mask = torch.from_numpy(np.random.default_rng(3).random((2, 20, 31)) < 0.5)
    assert find_contours(mask).real.all()  # "auto" on CPU: the unpadded list
    find_contours(mask, engine="fixed")  # warm-up: the cached direction offsets of this frame are made once
    with HostSyncRecorder() as recorder:
        fixed = find_contours(mask, engine="fixed")
    assert not recorder.hits, recorder.hits
    assert fixed.real.numel() == 8 * 2 * 22 * 33


def test_two_dimensional_empty_and_errors() -> None:
    for engine in ENGINES:
        found = find_contours(torch.zeros(3, 5, dtype=torch.bool), engine=engine)
        assert not found.real.any() and found.points.shape[1] == 2 and found.components.tolist() == [0]
    with pytest.raises(TypeError, match="mask"):
        find_contours(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="mask"):
        find_contours(torch.zeros(3, dtype=torch.bool))
    with pytest.raises(ValueError, match="engine"):
        find_contours(torch.zeros(3, 3, dtype=torch.bool), engine="gpu")
