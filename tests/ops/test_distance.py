"""The pure-torch EDT equals scipy.ndimage.distance_transform_edt (distances bit for bit, indices at the same
distance)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi
import torch

from nobg_metrics.ops.distance import distance_transform, nearest_feature

SHAPES = [(37, 53), (64, 48), (1, 17), (17, 1), (1, 1), (2, 3), (5, 5), (33, 70), (70, 33)]
DENSITIES = [0.0005, 0.01, 0.1, 0.5, 0.97]


def _check_image(features: np.ndarray, squared: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
    h, w = features.shape
    if not features.any():
        assert np.isinf(squared).all() and (rows == -1).all() and (cols == -1).all()
        return
    expected, (scipy_rows, scipy_cols) = ndi.distance_transform_edt(~features, return_indices=True)
    assert np.array_equal(np.sqrt(squared), expected)  # == : bit for bit
    # same tie-break as scipy (upper row in a column, then leftmost column): the weighted F depends on it
    assert np.array_equal(rows, scipy_rows) and np.array_equal(cols, scipy_cols)
    assert features[rows, cols].all()  # the index is a feature pixel ...
    own = (rows - np.arange(h)[:, None]) ** 2 + (cols - np.arange(w)[None]) ** 2
    assert np.array_equal(own, squared)  # ... at exactly that distance


@pytest.mark.parametrize("shape", SHAPES)
def test_random_masks_match_scipy(shape):
    rng = np.random.default_rng(sum(shape))
    masks = np.stack([rng.random(shape) < density for density in DENSITIES])
    masks[0, shape[0] // 2, shape[1] // 2] = True  # single pixel (density 0.0005 is usually one or none)
    masks = np.concatenate([masks, np.zeros((1, *shape), bool), np.ones((1, *shape), bool)])
    result = nearest_feature(torch.from_numpy(masks))
    for b in range(masks.shape[0]):
        _check_image(masks[b], result.squared[b].numpy(), result.rows[b].numpy(), result.cols[b].numpy())
    assert torch.equal(distance_transform(torch.from_numpy(masks)), result.squared.sqrt())


def test_structures_that_stress_the_row_pass():
    """Far corners, thin lines, diagonal dots: the argmin jumps across a row."""
    h, w = 45, 131
    masks = np.zeros((4, h, w), bool)
    masks[0, 0, 0] = True
    masks[1, :, 60] = True
    masks[1, 20, :] = True
    masks[2, np.arange(h), (np.arange(h) * 3) % w] = True
    masks[3, ::7, ::11] = True
    result = nearest_feature(torch.from_numpy(masks))
    for b in range(4):
        _check_image(masks[b], result.squared[b].numpy(), result.rows[b].numpy(), result.cols[b].numpy())


@pytest.mark.parametrize("max_distance", [0.0, 1.0, 2.5, 4.0, 7.9, 40.0])
def test_max_distance_saturates_exactly_beyond_the_cap(max_distance):
    rng = np.random.default_rng(3)
    masks = rng.random((3, 29, 47)) < np.array([0.002, 0.02, 0.2])[:, None, None]
    masks[0, 0, 0] = True
    full = nearest_feature(torch.from_numpy(masks))
    capped = nearest_feature(torch.from_numpy(masks), max_distance=max_distance)
    far = full.squared > max_distance**2
    assert torch.equal(capped.squared, torch.where(far, torch.full_like(full.squared, np.inf), full.squared))
    assert ((capped.rows == -1) == far).all() and ((capped.cols == -1) == far).all()
    near = ~far
    assert torch.equal(capped.rows[near], full.rows[near]) and torch.equal(capped.cols[near], full.cols[near])


def test_two_dim_input_and_errors():
    mask = torch.zeros(4, 6, dtype=torch.bool)
    mask[1, 2] = True
    assert nearest_feature(mask).squared.shape == (4, 6)
    with pytest.raises(TypeError, match="bool"):
        nearest_feature(mask.float())
    with pytest.raises(ValueError, match="shape"):
        nearest_feature(mask[None, None])


@pytest.mark.slow
def test_1024_blob_matches_scipy():
    yy, xx = np.mgrid[0:1024, 0:1000]
    mask = ((yy - 500) ** 2 + (xx - 430) ** 2 <= 210**2) | ((yy == 3) & (xx > 900))
    result = nearest_feature(torch.from_numpy(mask)[None])
    _check_image(mask, result.squared[0].numpy(), result.rows[0].numpy(), result.cols[0].numpy())


@pytest.mark.parametrize("width", [2, 4, 5, 8, 9, 16, 17, 31, 32, 33, 65, 129, 300])
def test_row_pass_levels_and_brute_force_queries(width):
    """Every width around a power of two (brute-force stride, last query past the edge)."""
    rng = np.random.default_rng(width)
    masks = rng.random((4, 7, width)) < np.array([0.01, 0.05, 0.2, 0.6])[:, None, None]
    masks[0, 3, width // 2] = True
    masks[1, :, :] = False
    masks[1, 0, 0] = masks[1, 6, width - 1] = True  # argmin jumps across the whole row
    result = nearest_feature(torch.from_numpy(masks))
    for b in range(masks.shape[0]):
        _check_image(masks[b], result.squared[b].numpy(), result.rows[b].numpy(), result.cols[b].numpy())


@pytest.mark.parametrize("shape", [(3, 9, 40), (2, 33, 70), (1, 1, 17)])
def test_row_pass_on_all_columns_equals_the_feature_columns_only(shape):
    """Other devices keep every column as a site (no host read); the argmin must not change."""
    from nobg_metrics.ops.distance import _column_pass
    from nobg_metrics.ops.envelope import feature_columns, lower_envelope_bisection

    batch, height, width = shape
    features = torch.rand(shape, generator=torch.Generator().manual_seed(width)) > 0.97
    features[:, :, width // 3 :] = False  # many columns without a feature
    features[0, 0, 0] = True
    gap, _ = _column_pass(features)
    cost = gap * gap
    far = height + width + 1
    positions, sites = feature_columns(features)
    few = lower_envelope_bisection(cost.gather(2, positions.expand(batch, height, sites)), positions, width, far)
    every = torch.arange(width).expand(batch, 1, width)
    full = lower_envelope_bisection(cost, every, width, far)
    assert sites < width
    assert torch.equal(positions.expand(batch, height, sites).gather(2, few), full)
    # what feature_columns gives off CPU: all W columns, feature columns first (the rest out of order)
    order = torch.sort((~features.any(dim=1)).to(torch.uint8), dim=1, stable=True).indices[:, None, :]
    unsorted = lower_envelope_bisection(cost.gather(2, order.expand(batch, height, width)), order, width, far)
    assert torch.equal(order.expand(batch, height, width).gather(2, unsorted), full)


@pytest.mark.parametrize("shape", [(37, 53), (64, 48), (1, 17), (17, 1), (33, 70), (70, 33)])
def test_int32_and_int64_keys_agree(shape, monkeypatch):
    """One image at a time the row pass packs its keys in int32 (the real costs are known on CPU); without
    host reads it keeps int64 keys and every column. Both equal scipy, index for index."""
    from nobg_metrics.ops import envelope

    rng = np.random.default_rng(sum(shape) + 1)
    for density in DENSITIES:
        mask = rng.random(shape) < density
        mask[0, -1] = True
        narrow = nearest_feature(torch.from_numpy(mask)[None])
        with monkeypatch.context() as patch:
            patch.setattr(envelope.host_reads, "free_on", lambda tensor: False)
            wide = nearest_feature(torch.from_numpy(mask)[None])
        for ours in (narrow, wide):
            _check_image(mask, ours.squared[0].numpy(), ours.rows[0].numpy(), ours.cols[0].numpy())


def test_images_with_fewer_feature_columns_repeat_their_last_one():
    """In a batch the sites are cut to the widest image's count; the others repeat their last feature column
    (a tie that never wins), so every cost stays real and the keys narrow. Indices still equal scipy's."""
    from nobg_metrics.ops.envelope import feature_columns

    masks = np.zeros((3, 19, 41), bool)
    masks[0, 4, [2, 9, 30]] = True  # 3 columns
    masks[1, :, 5:40] = np.random.default_rng(0).random((19, 35)) < 0.3  # most columns
    masks[2, 18, 40] = True  # the last column only
    positions, sites = feature_columns(torch.from_numpy(masks))
    counts = masks.any(axis=1).sum(axis=1)
    assert sites == counts.max()
    assert positions[0, 0].tolist() == [2, 9, 30] + [30] * (sites - 3)
    assert positions[2, 0].tolist() == [40] * sites
    result = nearest_feature(torch.from_numpy(masks))
    for b in range(3):
        _check_image(masks[b], result.squared[b].numpy(), result.rows[b].numpy(), result.cols[b].numpy())


@pytest.mark.parametrize("shape", [(46_342, 1), (1, 46_342), (100_000, 1), (3, 50_000)])
@pytest.mark.parametrize("device_path", [False, True], ids=["cpu", "device"])
def test_squared_distances_past_int32_do_not_wrap(shape, device_path, monkeypatch):
    """A gap of 46 341+ rows squared would wrap in int32 (the farthest pixel of a 100 000 x 1 strip would read
    2 147 395 600 instead of 9 999 800 001); off CPU the columns without a feature cost (H + W + 1)^2, which
    would wrap too."""
    from nobg_metrics.ops import host_reads

    if device_path:
        monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    mask = np.zeros(shape, bool)
    mask[0, 0] = True
    result = nearest_feature(torch.from_numpy(mask)[None])
    rows, cols = np.indices(shape)
    assert np.array_equal(result.squared[0].numpy(), (rows**2 + cols**2).astype(np.float64))
    assert (result.rows == 0).all() and (result.cols == 0).all()
