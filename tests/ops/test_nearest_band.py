"""``nearest_in_band`` returns scipy's nearest feature pixel (its choice among equidistant ones: the smallest
column, then row) for every pixel with ``1 <= D <= 18``, on tie-heavy masks, on both paths."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.distance import bounded_squared_distance
from nobg_metrics.ops.nearest_band import candidate_offsets, nearest_in_band
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
        squared = bounded_squared_distance(features, 265)
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
    band = nearest_in_band(features, bounded_squared_distance(features, 265), 18, slice(2, 11), slice(1, 12))
    for b, mask in enumerate(masks):  # split the batch's flat indices back into images
        crop_size = 9 * 11
        mine = (band.targets >= b * crop_size) & (band.targets < (b + 1) * crop_size)
        single = type(band)(band.targets[mine] - b * crop_size, band.sources[mine] - b * crop_size)
        _check(mask, single, slice(2, 11), slice(1, 12))


def test_an_empty_crop_or_band():
    features = torch.zeros(2, 5, 6, dtype=torch.bool)
    squared = bounded_squared_distance(features, 265)
    for rows in (slice(0, 0), slice(0, 5)):
        band = nearest_in_band(features, squared, 18, rows, slice(0, 6))
        assert band.targets.numel() == band.sources.numel() == 0


def test_the_device_path_makes_no_host_sync(monkeypatch):
    features = torch.rand(2, 30, 40, generator=torch.Generator().manual_seed(2)) > 0.9
    squared = bounded_squared_distance(features, 265)
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    nearest_in_band(features, squared, 18, slice(0, 30), slice(0, 40))  # the shift tables, once per device
    with HostSyncRecorder() as recorder:
        nearest_in_band(features, squared, 18, slice(0, 30), slice(0, 40))
    assert not recorder.hits, recorder.hits


def test_candidate_offsets_are_every_lattice_point_in_scipys_order():
    table = candidate_offsets(18)
    flat = [(dy, dx) for offsets in table for dy, dx in offsets]
    assert len(flat) == len(set(flat)) == 60  # every (dy, dx) != 0 with dy² + dx² <= 18
    assert {(dy, dx) for dy in range(-4, 5) for dx in range(-4, 5) if 0 < dy * dy + dx * dx <= 18} == set(flat)
    for d, offsets in enumerate(table):
        assert all(dy * dy + dx * dx == d for dy, dx in offsets)
        assert list(offsets) == sorted(offsets, key=lambda o: (o[1], o[0]))  # column, then row
        assert len(offsets) <= 8
    with pytest.raises(ValueError, match="max_squared"):
        candidate_offsets(25)
