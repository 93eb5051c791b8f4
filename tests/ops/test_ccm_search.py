"""CCm's exact 1-NN search (:func:`nearest_background`) == sklearn's brute-force ``NearestNeighbors(1)``, from both
forms (``engine``): exact ties (duplicates, mirror images) go to the lowest index, positions are interleaved queries
and candidates, some neither, in a batch of images with their own roles."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.neighbors import NearestNeighbors

from nobg_metrics.ops.ccm_search import nearest_background
from tests.helpers.syncs import HostSyncRecorder


def _batch() -> tuple[torch.Tensor, np.ndarray]:
    rng = np.random.default_rng(11)
    points = rng.integers(0, 4, (2, 120, 3)).astype(np.float64)
    points[0, :8] = [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0], [0, 0, 0], [2, 0, 0], [1, 0, 0]]
    points[1] = np.round(rng.random((120, 3)) * 1000)  # the second image: spread out, no candidates near-tied
    role = rng.integers(0, 3, (2, 120))
    role[0, :8] = [1, 0, 1, 0, 1, 1, 1, 0]  # 0: query, 1: candidate, 2: neither
    return torch.from_numpy(points), role


@pytest.mark.parametrize("engine", ["data_sized", "fixed"])
def test_equals_sklearn_with_ties_to_the_lowest_index(engine):
    features, role = _batch()
    index, overflow = nearest_background(features, torch.from_numpy(role == 0), torch.from_numpy(role == 1),
                                         engine=engine, near_candidates=64)
    assert overflow.tolist() == [False, False]
    for image in range(2):
        queries, candidates = np.flatnonzero(role[image] == 0), np.flatnonzero(role[image] == 1)
        reference = NearestNeighbors(n_neighbors=1, algorithm="brute").fit(features[image, candidates].numpy())
        expected = candidates[reference.kneighbors(features[image, queries].numpy())[1][:, 0]]
        assert index[image, queries].tolist() == expected.tolist()


@pytest.mark.parametrize("engine", ["data_sized", "fixed"])
def test_flat_patches_the_coordinates_decide(engine):
    """CCm's layout on its data-sized path: candidates first, then queries (one image). Exact ties go to the lower
    candidate index (sklearn's heap keeps the first of equal distances)."""
    rng = np.random.default_rng(11)
    candidates = np.concatenate([np.zeros((6, 3)), rng.integers(0, 4, (40, 3))]).astype(np.float32)
    candidates[:6, 0] = [0, 2, 2, 0, 4, 4]  # duplicates and mirror images around the queries
    queries = np.concatenate([np.array([[1, 0, 0], [3, 0, 0]]), rng.integers(0, 4, (60, 3))]).astype(np.float32)
    features = torch.from_numpy(np.concatenate([candidates, queries])).double()[None]
    is_candidate = (torch.arange(features.shape[1]) < len(candidates))[None]
    index, _ = nearest_background(features, ~is_candidate, is_candidate, engine=engine, near_candidates=46)
    reference = NearestNeighbors(n_neighbors=1, algorithm="brute")  # what "auto" picks for CCm's 149 features
    expected = reference.fit(candidates).kneighbors(queries)[1][:, 0]
    assert index[0, len(candidates):].tolist() == expected.tolist()


def test_the_fixed_form_flags_an_overflowing_near_set_and_makes_no_host_sync():
    features, role = _batch()
    queries, candidates = torch.from_numpy(role == 0), torch.from_numpy(role == 1)
    with HostSyncRecorder() as recorder:
        _, overflow = nearest_background(features, queries, candidates, engine="fixed", near_candidates=2)
    assert not recorder.hits, recorder.hits
    assert overflow.tolist() == [True, False]  # the first image's duplicates tie beyond a near set of 2
