"""All threshold levels at once: the count of leading levels whose largest component holds a pixel equals
labelling every level set {n >= m} with MATLAB's largest-component rule, one level at a time — from both forms of
:func:`connected_level_count` (``engine``: exact lists and union-find to convergence, or padded lists and fixed
rounds)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics.ops.level_components import connected_level_count
from tests.helpers.syncs import HostSyncRecorder
from tests.ops.test_components import SHAPES, snake, spiral
from tests.reference.dim_matting import largest_component_matlab


def level_count_one_level_at_a_time(level_map: np.ndarray, num_levels: int) -> np.ndarray:
    """The definition: k(p) = number of leading levels m whose largest component (MATLAB rule) holds p."""
    counts = np.zeros(level_map.shape, np.int32)
    for b, image in enumerate(level_map):
        still = np.ones(image.shape, bool)
        for m in range(1, num_levels + 1):
            mask = image >= m
            omega = largest_component_matlab(mask) if mask.any() else np.zeros_like(mask)
            still &= omega
            counts[b] += still
    return counts


ENGINES = ["data_sized", "fixed"]


def check(level_map: np.ndarray, num_levels: int, engine: str) -> None:
    expected = level_count_one_level_at_a_time(level_map, num_levels)
    ours = connected_level_count(torch.from_numpy(level_map), num_levels, engine=engine).numpy()
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("num_levels", [1, 3, 10])
def test_random_level_maps_equal_the_per_level_definition(shape, num_levels, engine):
    rng = np.random.default_rng(hash((shape, num_levels)) % 2**32)
    for density in (0.3, 0.7, 1.0):
        level_map = rng.integers(0, num_levels + 1, size=(3, *shape))
        level_map[rng.random(level_map.shape) > density] = 0
        check(level_map, num_levels, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_smooth_blobs_with_noise_many_runs_per_level(engine):
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:90, 0:131]
    value = np.exp(-((yy - 40) ** 2 + (xx - 60) ** 2) / 900) + rng.normal(0, 0.08, yy.shape)
    level_map = np.clip(np.floor(value * 10), 0, 10).astype(np.int64)[None]
    check(level_map, 10, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_ties_go_to_the_first_component_in_column_major_order(engine):
    level_map = np.zeros((1, 5, 7), np.int64)
    level_map[0, 0, 4:6] = 2  # row-major first, column-major second
    level_map[0, 3, 1:3] = 2  # column-major first: wins the tie at both levels
    check(level_map, 2, engine)
    assert connected_level_count(torch.from_numpy(level_map), 2, engine=engine)[0, 3, 1] == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_long_paths_spiral_and_snake_at_two_levels(engine):
    for mask in (spiral(41, 37), snake(40, 23)):
        level_map = mask.astype(np.int64)[None] * 2
        level_map[0, mask.shape[0] // 2] = np.minimum(level_map[0, mask.shape[0] // 2], 1)  # cut at level 2
        check(level_map, 2, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_levels_count_zero_and_full_levels_count_all(engine):
    empty = np.zeros((2, 6, 9), np.int64)
    assert connected_level_count(torch.from_numpy(empty), 10, engine=engine).sum() == 0
    full = np.full((2, 6, 9), 10)
    assert (connected_level_count(torch.from_numpy(full), 10, engine=engine) == 10).all()
    gap = full.copy()
    gap[:, :, 4] = 5  # levels 6..10 split into two equal halves: the left one (column-major first) wins
    check(gap, 10, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_level_map_with_a_box_the_data_sized_form_crops_to(engine):
    """On CPU the data-sized form labels only the box of level 1; the fixed form the whole frame."""
    rng = np.random.default_rng(3)
    level_map = np.zeros((2, 40, 50), np.int64)
    level_map[:, 10:30, 5:35] = rng.integers(0, 6, size=(2, 20, 30))
    check(level_map, 5, engine)


def test_the_fixed_form_makes_no_host_sync():
    level_map = torch.from_numpy(np.random.default_rng(2).integers(0, 4, size=(1, 7, 9)))
    connected_level_count(level_map, 3, engine="fixed")  # warm-up
    with HostSyncRecorder() as recorder:
        connected_level_count(level_map, 3, engine="fixed")
    assert not recorder.hits, recorder.hits


def test_strided_views_are_accepted():
    """Transposed and cropped views label like their contiguous copies (both labelling ops)."""
    from nobg_metrics.ops.components import connected_components, largest_component

    rng = np.random.default_rng(11)
    level_map = torch.from_numpy(rng.integers(0, 4, size=(2, 29, 23)))
    views = [level_map.transpose(1, 2).contiguous().transpose(1, 2),
             torch.nn.functional.pad(level_map, (2, 3))[..., 2:-3]]
    for view in views:
        assert not view.is_contiguous()
        assert torch.equal(connected_level_count(view, 3), connected_level_count(level_map, 3))
        assert torch.equal(connected_components(view >= 2), connected_components(level_map >= 2))
        assert torch.equal(largest_component(view >= 1), largest_component(level_map >= 1))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("num_levels", [254, 255, 300])
def test_many_levels_cross_the_small_sort_dtypes(num_levels, engine):
    """Levels are sorted as uint8 up to 254 (the device path pads at M + 1 <= 255), as int16 beyond."""
    rng = np.random.default_rng(num_levels)
    level_map = rng.integers(0, num_levels + 1, size=(2, 9, 11))
    level_map[0, 2:7, 3:9] = num_levels  # a block at the top level, with ragged lower levels around it
    check(level_map, num_levels, engine)


def test_the_fixed_form_labels_large_batches_in_blocks_of_images(monkeypatch):
    """The padding grows with B · H · W · M: beyond FIXED_SLOTS_PER_CALL slots the batch goes in blocks."""
    from nobg_metrics.ops import level_components

    rng = np.random.default_rng(5)
    level_map = torch.from_numpy(rng.integers(0, 4, size=(5, 13, 17)))
    whole = connected_level_count(level_map, 3)
    monkeypatch.setattr(level_components, "FIXED_SLOTS_PER_CALL", 2 * 13 * 9 * 3)  # two images a block
    assert torch.equal(connected_level_count(level_map, 3, engine="fixed"), whole)
