"""Zhang–Suen thinning == skimage.morphology.skeletonize, bit for bit, on a stress set, from both forms of
:func:`skeletonize` (``engine``).

``stress_masks`` is the shared stress set of the HCE primitives (thinning, cross morphology, contours):
non-square, 1×N, N×1, thin lines, one-pixel components, holes in holes, border-touching shapes, spirals,
random blobs and random noise.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import ndimage
from skimage.morphology import skeletonize as sk_skeletonize

from nobg_metrics.ops.thinning import skeletonize
from tests.helpers.syncs import HostSyncRecorder

ENGINES = ["data_sized", "fixed"]


def _spiral(h: int, w: int) -> np.ndarray:
    m = np.zeros((h, w), bool)
    top, left, bottom, right = 0, 0, h - 1, w - 1
    while top <= bottom and left <= right:
        m[top, left:right + 1] = True
        m[top:bottom + 1, right] = True
        if bottom - top >= 2:
            m[bottom, left:right + 1] = True
        if right - left >= 2:
            m[top + 2:bottom + 1, left] = True
        top, left, bottom, right = top + 2, left + 2, bottom - 2, right - 2
        if top <= bottom:
            m[top - 1, left - 2 if left >= 2 else 0] = True
    return m


def stress_masks(seed: int = 0) -> list[np.ndarray]:
    """Seeded bool masks that stress border following and thinning."""
    rng = np.random.default_rng(seed)
    masks = [np.ones((1, 1), bool), np.zeros((1, 1), bool), np.ones((1, 9), bool), np.ones((9, 1), bool),
             np.array([[1, 0, 1, 1, 0, 1]], bool), np.array([[1], [0], [1], [1]], bool), np.ones((2, 2), bool),
             np.ones((3, 5), bool), np.ones((6, 4), bool), np.eye(7, dtype=bool), np.eye(7, dtype=bool)[::-1].copy()]
    rings = np.zeros((23, 29), bool)  # holes in holes, a dot in the middle, border-touching frame
    for k, value in enumerate([1, 0, 1, 0, 1, 0]):
        rings[2 * k:23 - 2 * k, 2 * k:29 - 2 * k] = value
    rings[11, 14] = True
    masks.append(rings)
    masks.append(_spiral(25, 31))
    masks.append(_spiral(18, 18))
    lines = np.zeros((20, 33), bool)  # thin lines, a cross, a diagonal, single pixels, a 2-wide bar
    lines[3, 2:30] = True
    lines[:, 16] = True
    lines[np.arange(20), np.arange(20) + 5] = True
    lines[[1, 18, 10], [1, 31, 28]] = True
    lines[14:16, 0:10] = True
    masks.append(lines)
    checker = (np.add.outer(np.arange(9), np.arange(12)) % 2 == 0)  # diagonal-only connections
    masks.append(checker)
    yy, xx = np.mgrid[0:40, 0:57]
    masks.append(((yy - 20) ** 2 / 300 + (xx - 28) ** 2 / 500) < 1)  # a disc with an inner hole
    masks[-1] &= ((yy - 20) ** 2 + (xx - 30) ** 2) > 16
    for _ in range(14):
        h, w = (int(v) for v in rng.integers(1, 48, 2))
        kind = rng.integers(0, 3)
        if kind == 0:
            m = rng.random((h, w)) < rng.uniform(0.2, 0.9)
        elif kind == 1:
            m = ndimage.binary_dilation(rng.random((h, w)) < 0.04, iterations=int(rng.integers(1, 5)))
        else:
            m = ndimage.gaussian_filter(rng.random((h, w)), 1.5) > 0.5
        masks.append(m)
    return masks


STRESS = stress_masks()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("index", range(len(STRESS)))
def test_skeletonize_equals_skimage(index: int, engine: str) -> None:
    mask = STRESS[index]
    skeleton, converged = skeletonize(torch.from_numpy(mask), engine=engine)
    assert np.array_equal(skeleton.numpy(), sk_skeletonize(mask)) and bool(converged)


@pytest.mark.parametrize("engine", ENGINES)
def test_skeletonize_batch_and_thick_shapes(engine: str) -> None:
    rng = np.random.default_rng(3)
    masks = np.stack([ndimage.binary_dilation(rng.random((61, 45)) < 0.01, iterations=6) for _ in range(3)])
    masks[1, :20] = False  # one image's foreground away from the top: the data-sized form's box is not the frame
    ours, converged = skeletonize(torch.from_numpy(masks), engine=engine)
    assert converged.tolist() == [True] * 3
    for mask, skel in zip(masks, ours.numpy()):
        assert np.array_equal(skel, sk_skeletonize(mask))


@pytest.mark.parametrize("engine", ENGINES)
def test_skeletonize_empty_and_errors(engine: str) -> None:
    assert skeletonize(torch.zeros(0, 4, 4, dtype=torch.bool), engine=engine).skeleton.shape == (0, 4, 4)
    assert not skeletonize(torch.zeros(3, 4, dtype=torch.bool), engine=engine).skeleton.any()
    with pytest.raises(TypeError, match="mask"):
        skeletonize(torch.zeros(3, 4), engine=engine)
    with pytest.raises(ValueError, match="mask"):
        skeletonize(torch.zeros(3, dtype=torch.bool), engine=engine)


def test_a_short_fixed_budget_is_flagged_and_the_fixed_form_makes_no_host_sync() -> None:
    """The fixed form's budget is not a proof: too few iterations are flagged, per image, never silently wrong."""
    rings = next(m for m in STRESS if m.shape == (23, 29))
    batch = torch.from_numpy(np.stack([rings, np.zeros((23, 29), bool)]))
    _, converged = skeletonize(batch, engine="fixed", iterations=1)
    assert converged.tolist() == [False, True]  # the rings need more than one iteration; the empty image not
    with HostSyncRecorder() as recorder:
        skeletonize(batch, engine="fixed")
    assert not recorder.hits, recorder.hits
