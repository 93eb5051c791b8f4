"""``nearest_in_band`` returns scipy's nearest feature pixel (its choice among equidistant ones: the smallest
column, then row) for every pixel with ``1 <= D <= 18``, on tie-heavy masks, on both paths; so does the first hit
among the 60 offsets with ``dy² + dx² <= 18`` sorted by ``(D, dx, dy)`` (the band argument's enumeration)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.distance import bounded_nearest
from nobg_metrics.ops.nearest_band import nearest_in_band
from tests.helpers.syncs import HostSyncRecorder


def _tie_heavy_masks(rng: np.random.Generator) -> list[np.ndarray]:
    """Grids, checkerboards, diagonals, single pixels, thin lines, 1 x N and N x 1: many equidistant pixels."""
    masks = []
    for h, w in [(23, 31), (16, 16), (1, 40), (40, 1), (9, 2), (7, 30)]:
        yy, xx = np.mgrid[0:h, 0:w]
        masks += [yy % 3 == 0, (yy % 4 == 0) & (xx % 5 == 0), (yy + xx) % 2 == 0, (yy + xx) % 7 == 0,
                  (yy - xx) % 6 == 0, rng.random((h, w)) < 0.08]
        single = np.zeros((h, w), bool)
        single[h // 2, w // 2] = True
        masks.append(single)
        corners = np.zeros((h, w), bool)
        corners[0, 0] = corners[-1, -1] = corners[0, -1] = True
        masks.append(corners)
    return [m for m in masks if m.any()]


def _check(mask: np.ndarray, band, rows: slice, cols: slice) -> None:
    squared, (near_rows, near_cols) = ndi.distance_transform_edt(~mask, return_indices=True)
    squared = np.rint(squared**2)
    crop = squared[rows, cols]
    width = crop.shape[1]
    expected = ((near_rows - rows.start) * width + near_cols - cols.start)[rows, cols]  # in the crop
    in_band = (crop >= 1) & (crop <= 18)
    if band.targets is None:  # every crop pixel: the band ones at their nearest, the others at themselves
        sources = band.sources.numpy().reshape(crop.shape)
        own = np.arange(crop.size).reshape(crop.shape)
        assert np.array_equal(sources[in_band], expected[in_band])
        assert np.array_equal(sources[~in_band], own[~in_band])
    else:
        assert np.array_equal(band.targets.numpy(), np.flatnonzero(in_band))
        assert np.array_equal(band.sources.numpy(), expected[in_band])


@pytest.mark.parametrize("device_path", [False, True], ids=["cpu", "device"])
def test_tie_heavy_masks_equal_scipy(device_path, monkeypatch):
    rng = np.random.default_rng(0)
    if device_path:
        monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    for mask in _tie_heavy_masks(rng):
        features = torch.from_numpy(mask)[None]
        squared = bounded_nearest(features, 265)
        h, w = mask.shape
        ys, xs = np.nonzero(mask)  # a crop that holds every feature pixel, and the whole image
        box = (slice(max(0, ys.min() - 2), min(h, ys.max() + 3)), slice(max(0, xs.min() - 1), min(w, xs.max() + 2)))
        for rows, cols in [(slice(0, h), slice(0, w)), box]:
            _check(mask, nearest_in_band(features, squared, 18, rows, cols), rows, cols)


def test_a_batch_indexes_into_the_whole_batch():
    rng = np.random.default_rng(1)
    masks = np.stack([rng.random((11, 13)) < p for p in (0.05, 0.2, 0.5)])
    masks[:, :2] = masks[:, :, :1] = masks[:, :, 12:] = False  # every feature pixel inside the crop
    features = torch.from_numpy(masks)
    band = nearest_in_band(features, bounded_nearest(features, 265), 18, slice(2, 11), slice(1, 12))
    for b, mask in enumerate(masks):  # split the batch's flat indices back into images
        crop_size = 9 * 11
        mine = (band.targets >= b * crop_size) & (band.targets < (b + 1) * crop_size)
        single = type(band)(band.targets[mine] - b * crop_size, band.sources[mine] - b * crop_size)
        _check(mask, single, slice(2, 11), slice(1, 12))


def test_an_empty_crop_or_band():
    features = torch.zeros(2, 5, 6, dtype=torch.bool)
    squared = bounded_nearest(features, 265)
    for rows in (slice(0, 0), slice(0, 5)):
        band = nearest_in_band(features, squared, 18, rows, slice(0, 6))
        assert band.targets.numel() == band.sources.numel() == 0


def test_the_device_path_makes_no_host_sync(monkeypatch):
    features = torch.rand(2, 30, 40, generator=torch.Generator().manual_seed(2)) > 0.9
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    squared = bounded_nearest(features, 265)
    nearest_in_band(features, squared, 18, slice(0, 30), slice(0, 40))  # the shift tables, once per device
    with HostSyncRecorder() as recorder:
        nearest_in_band(features, squared, 18, slice(0, 30), slice(0, 40))
    assert not recorder.hits, recorder.hits


def _sorted_offsets() -> list[tuple[int, int, int]]:
    """The 60 offsets ``(D, dx, dy)`` with ``0 < dy² + dx² <= 18``, sorted: the candidates a band pixel can have."""
    return sorted((dy * dy + dx * dx, dx, dy)
                  for dy in range(-4, 5) for dx in range(-4, 5) if 0 < dy * dy + dx * dx <= 18)


def test_the_first_of_the_sorted_offsets_on_a_feature_is_scipys_and_ours():
    """The band argument's enumeration: for a pixel with D <= 18 the nearest feature is the first of the 60 sorted
    offsets that lands on one (including every offset of Chebyshev distance 4: (±4, 0), (±4, ±1), ...)."""
    offsets = _sorted_offsets()
    assert len(offsets) == 60 and max(max(abs(dx), abs(dy)) for _, dx, dy in offsets) == 4
    rng = np.random.default_rng(3)
    for mask in _tie_heavy_masks(rng)[::2]:
        h, w = mask.shape
        features = torch.from_numpy(mask)[None]
        band = nearest_in_band(features, bounded_nearest(features, 265), 18, slice(0, h), slice(0, w))
        for target, source in zip(band.targets.tolist(), band.sources.tolist()):
            i, j = divmod(target, w)
            first = next((i + dy) * w + j + dx for _, dx, dy in offsets
                         if 0 <= i + dy < h and 0 <= j + dx < w and mask[i + dy, j + dx])
            assert source == first


def test_max_squared_out_of_range():
    features = torch.zeros(1, 3, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="max_squared"):
        nearest_in_band(features, bounded_nearest(features, 265), 25, slice(0, 3), slice(0, 3))
