"""``bounded_squared_distance`` equals ``min(D, (radius + 1)^2)`` of scipy's exact EDT, on both paths, at any aspect
ratio; its int32 arithmetic cannot wrap (a 92 681 x 1 image's squared distances do not fit int32)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from nobg_metrics.ops import envelope, host_reads
from nobg_metrics.ops.distance import bounded_nearest, bounded_squared_distance, nearest_feature
from tests.helpers.syncs import HostSyncRecorder

SHAPES = [(37, 53), (64, 48), (1, 17), (17, 1), (1, 1), (2, 3), (33, 70), (70, 33)]
DENSITIES = [0.0005, 0.01, 0.1, 0.5, 0.97]


def _expected(mask: np.ndarray, radius: int) -> np.ndarray:
    """``min(D, (radius + 1)^2)`` from scipy (an empty mask: the cap everywhere)."""
    cap = (radius + 1) ** 2
    if not mask.any():
        return np.full(mask.shape, cap)
    squared = np.rint(ndi.distance_transform_edt(~mask) ** 2).astype(np.int64)
    return np.minimum(squared, cap)


def _check(masks: np.ndarray, radius: int) -> None:
    result = bounded_squared_distance(torch.from_numpy(masks), radius)
    assert result.dtype == torch.int32 and result.shape == masks.shape
    for image, values in zip(masks, result.numpy()):
        assert np.array_equal(values, _expected(image, radius))


def _random_masks(shape: tuple[int, int]) -> np.ndarray:
    rng = np.random.default_rng(sum(shape))
    masks = np.stack([rng.random(shape) < density for density in DENSITIES])
    masks[0, shape[0] // 2, shape[1] // 2] = True
    return np.concatenate([masks, np.zeros((1, *shape), bool), np.ones((1, *shape), bool)])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("radius", [0, 1, 4, 265])
def test_random_masks_equal_scipy_capped(shape, radius):
    _check(_random_masks(shape), radius)


@pytest.mark.parametrize("shape", [(1, 700), (700, 1), (201, 289)])
def test_distances_that_straddle_the_radius(shape):
    """Single pixels and lines far apart: squared distances run from 0 past the cap (266² = 70 756, 101²)."""
    masks = np.zeros((3, *shape), bool)
    masks[0, 0, 0] = True
    masks[1, shape[0] // 2, shape[1] // 3] = masks[1, -1, -1] = True
    masks[2, 0, :] = True
    masks[2, :, 0] = True
    _check(masks, 265)
    _check(masks, 100)


@pytest.mark.parametrize("shape", [(3, 17, 23), (2, 1, 40), (2, 40, 1)])
def test_device_path_equals_the_cpu_path(shape, monkeypatch):
    """Off CPU every column is a site, in order (no sort, no host read): same values."""
    generator = torch.Generator().manual_seed(shape[1])
    features = torch.rand(shape, generator=generator) > 0.93
    features[:, :, shape[2] // 2 :] = False  # columns without a feature
    features[0] = False  # an image without any
    cpu = bounded_squared_distance(features, 6)
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    with HostSyncRecorder() as recorder:
        device = bounded_squared_distance(features, 6)
    assert not recorder.hits, recorder.hits
    assert torch.equal(cpu, device)


def test_strips_and_batch_do_not_change_the_values(monkeypatch):
    """The row pass runs in strips of rows (a batch's images together); tiny strips give the same result."""
    masks = _random_masks((29, 47))
    whole = bounded_squared_distance(torch.from_numpy(masks), 265)
    monkeypatch.setattr(envelope, "STRIP_ELEMENTS", 1)  # one row per strip
    assert torch.equal(bounded_squared_distance(torch.from_numpy(masks), 265), whole)
    alone = torch.cat([bounded_squared_distance(torch.from_numpy(m[None]), 265) for m in masks])
    assert torch.equal(alone, whole)


def test_equals_the_full_transform_below_the_cap():
    masks = torch.from_numpy(_random_masks((40, 61)))
    full = nearest_feature(masks).squared
    capped = bounded_squared_distance(masks, 9)
    assert torch.equal(capped.double(), full.clamp(max=100.0))


@pytest.mark.parametrize("shape", [(100_000, 1), (1, 100_000), (92_681, 2)])
def test_tall_and_wide_images(shape):
    """Squared distances up to ~10^10 (int32 wraps from 46 341² on): capped, never wrapped."""
    mask = np.zeros(shape, bool)
    mask[0, 0] = True
    mask[shape[0] // 3, -1] = True
    _check(mask[None], 265)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1_000_000, 1), (1, 1_000_000)])
def test_million_pixel_strips(shape):
    mask = np.zeros(shape, bool)
    mask[tuple(s // 2 for s in shape)] = True
    mask[-1, -1] = True
    _check(mask[None], 265)


def test_radius_out_of_range():
    with pytest.raises(ValueError, match="radius"):
        bounded_squared_distance(torch.zeros(1, 2, 2, dtype=torch.bool), 46_340)


@pytest.mark.parametrize("device_path", [False, True], ids=["cpu", "device"])
def test_the_nearest_column_is_scipys_below_the_cap(device_path, monkeypatch):
    """``bounded_nearest``'s site is the leftmost column of a nearest feature (scipy's choice of column)."""
    if device_path:
        monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    masks = _random_masks((31, 45))[:-2]  # non-empty masks
    masks[2] = (np.add.outer(np.arange(31), np.arange(45)) % 4) == 0  # ties everywhere
    result = bounded_nearest(torch.from_numpy(masks), 9)
    columns = result.positions.expand(-1, 31, -1).gather(2, result.site.long())
    for b, mask in enumerate(masks):
        _, (_, scipy_cols) = ndi.distance_transform_edt(~mask, return_indices=True)
        exact = result.squared[b].numpy() < 100
        assert np.array_equal(columns[b].numpy()[exact], scipy_cols[exact])
