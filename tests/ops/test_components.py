"""Connected components equal scipy.ndimage.label label for label; the largest component follows MATLAB's tie rule."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import ndimage

from nobg_metrics.ops.components import connected_components, largest_component
from tests.reference.dim_matting import largest_component_matlab

STRUCTURE = {4: ndimage.generate_binary_structure(2, 1), 8: ndimage.generate_binary_structure(2, 2)}
SHAPES = [(37, 53), (64, 48), (1, 17), (17, 1), (5, 5), (2, 3), (1, 1), (33, 70)]


def spiral(h: int, w: int) -> np.ndarray:
    """A one-pixel-wide square spiral with one-pixel gaps: one long 4-connected path."""
    mask = np.zeros((h, w), bool)
    k = 0
    while True:
        top, left, bottom, right = 2 * k, 2 * k, h - 1 - 2 * k, w - 1 - 2 * k
        if top > bottom or left > right:
            return mask
        mask[top, left:right + 1] = True
        mask[top:bottom + 1, right] = True
        mask[bottom, left:right + 1] = True
        mask[top + 2:bottom + 1, left] = True
        if top + 2 <= bottom and left + 1 <= right:
            mask[top + 2, left + 1] = True
        k += 1


def snake(h: int, w: int) -> np.ndarray:
    """Boustrophedon: full even rows joined at alternating ends: a path of length ~ h * w / 2."""
    mask = np.zeros((h, w), bool)
    mask[::2] = True
    for row in range(1, h, 2):
        mask[row, w - 1 if (row // 2) % 2 == 0 else 0] = True
    return mask


def diagonal_staircase(h: int, w: int) -> np.ndarray:
    """Pixels touching only by corners: one component under 8-connectivity, many under 4."""
    yy, xx = np.mgrid[0:h, 0:w]
    return (xx + yy) % 4 == 0


def _check_labels(masks: list[np.ndarray], connectivity: int) -> None:
    for mask in masks:
        ours = connected_components(torch.from_numpy(np.ascontiguousarray(mask)), connectivity).numpy()
        expected, _ = ndimage.label(mask, STRUCTURE[connectivity])
        np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("connectivity", [4, 8])
def test_random_masks_equal_scipy_label(connectivity):
    rng = np.random.default_rng(connectivity)
    masks = [rng.random(shape) < density for shape in SHAPES for density in (0.0, 0.3, 0.55, 0.8, 1.0)]
    _check_labels(masks, connectivity)


@pytest.mark.parametrize("connectivity", [4, 8])
def test_batched_labels_restart_per_image(connectivity):
    rng = np.random.default_rng(7)
    batch = rng.random((5, 29, 41)) < 0.5
    batch[2] = False
    ours = connected_components(torch.from_numpy(batch), connectivity).numpy()
    for index in range(5):
        np.testing.assert_array_equal(ours[index], ndimage.label(batch[index], STRUCTURE[connectivity])[0])


@pytest.mark.parametrize("connectivity", [4, 8])
def test_spirals_snakes_and_staircases(connectivity):
    shapes = [(63, 97), (97, 63), (2, 40), (40, 3)]
    masks = []
    for h, w in shapes:
        for make in (spiral, snake, diagonal_staircase):
            mask = make(h, w)
            masks += [mask, mask[::-1], mask[:, ::-1], mask.T.copy()]
    _check_labels(masks, connectivity)
    assert ndimage.label(spiral(63, 97))[1] == 1 and ndimage.label(snake(63, 97))[1] == 1


@pytest.mark.slow
def test_1024_spiral_and_snake():
    for mask in (spiral(1024, 1024), snake(1024, 1001)[::-1].copy()):
        _check_labels([mask], 4)
        assert largest_component(torch.from_numpy(mask)).numpy().sum() == mask.sum()


def test_largest_component_matches_matlab_rule():
    rng = np.random.default_rng(3)
    masks = [rng.random(shape) < density for shape in SHAPES for density in (0.0, 0.4, 0.6, 1.0)]
    for mask in masks:
        ours = largest_component(torch.from_numpy(mask)).numpy()
        np.testing.assert_array_equal(ours, largest_component_matlab(mask))


def test_largest_component_ties_go_to_the_first_in_column_major_order():
    mask = np.zeros((6, 8), bool)
    mask[0, 5:8] = True  # first in raster order
    mask[3:6, 1] = True  # same size, first in column-major order: MATLAB's choice
    ours = largest_component(torch.from_numpy(mask)).numpy()
    expected = np.zeros_like(mask)
    expected[3:6, 1] = True
    np.testing.assert_array_equal(ours, expected)
    np.testing.assert_array_equal(largest_component_matlab(mask), expected)


def test_largest_component_batched_with_empty_and_full_images():
    batch = torch.zeros(3, 4, 5, dtype=torch.bool)
    batch[1] = True
    batch[2, 0, 0] = batch[2, 3, 4] = batch[2, 2, 2] = True
    batch[2, 1, 2] = True
    out = largest_component(batch)
    assert not out[0].any() and out[1].all()
    assert out[2].sum() == 2 and out[2, 1, 2] and out[2, 2, 2]


def test_eight_connectivity_largest_component():
    mask = diagonal_staircase(9, 11)
    ours = largest_component(torch.from_numpy(mask), connectivity=8).numpy()
    labels, _ = ndimage.label(mask, STRUCTURE[8])
    sizes = np.bincount(labels.ravel())[1:]
    assert ours.sum() == sizes.max()


def test_rejects_bad_arguments():
    with pytest.raises(TypeError, match="bool"):
        connected_components(torch.zeros(3, 3))
    with pytest.raises(ValueError, match="connectivity"):
        largest_component(torch.zeros(3, 3, dtype=torch.bool), connectivity=6)
    with pytest.raises(ValueError, match="shape"):
        connected_components(torch.zeros(1, 1, 3, 3, dtype=torch.bool))
