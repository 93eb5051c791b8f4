"""Open Douglas–Peucker == cv2.approxPolyDP(curve, eps, closed=False), point for point, many curves at once."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from nobg_metrics.ops.hce_fixed import approx_poly_dp_fixed
from nobg_metrics.ops.polyline import approx_poly_dp_open

_STEPS = np.array([[1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1], [0, -1], [1, -1]])


def _distinct(c: np.ndarray) -> np.ndarray:
    return c[np.r_[True, (np.diff(c, axis=0) != 0).any(axis=1)]]


def _curves(seed: int = 1, count: int = 1200) -> list[np.ndarray]:
    """Contour-like walks, random jumps, arcs, tiny grids (ties), closed-looking ones (first == last)."""
    rng = np.random.default_rng(seed)
    curves = [np.array([[3, 4]]), np.array([[0, 0], [1, 1]]), np.array([[0, 0], [5, 0], [0, 0]]),
              np.array([[0, 0], [1, 0], [2, 0], [3, 0]]), np.array([[0, 0], [2, 1], [4, 0], [6, 1], [8, 0]])]
    for i in range(count):
        n, kind = int(rng.integers(1, 40)), i % 4
        if kind == 0:
            c = np.cumsum(_STEPS[rng.integers(0, 8, n)], axis=0)
        elif kind == 1:
            c = _distinct(rng.integers(0, 12, (n, 2)))
        elif kind == 2:
            t = np.linspace(0, rng.uniform(1, 7), n)
            r = rng.uniform(2, 30)
            c = _distinct(np.round(np.c_[r * np.cos(t), r * np.sin(t)]).astype(int))
        else:
            c = _distinct(rng.integers(0, 6, (n, 2)))
            if len(c) > 2 and (c[-1] != c[0]).any() and rng.random() < 0.5:
                c = np.r_[c, c[:1]]
        curves.append(c.astype(np.int32))
    return curves


CURVES = _curves()


@pytest.mark.parametrize("epsilon", [2.0, 1.0, 0.5, 0.0, 3.7, 40.0])
def test_equals_opencv(epsilon: float) -> None:
    points = torch.from_numpy(np.concatenate(CURVES))
    keep = approx_poly_dp_open(points, torch.tensor([len(c) for c in CURVES]), epsilon).numpy()
    offsets = np.r_[0, np.cumsum([len(c) for c in CURVES])]
    for k, curve in enumerate(CURVES):
        expected = cv2.approxPolyDP(curve.reshape(-1, 1, 2), epsilon, False).reshape(-1, 2)
        assert np.array_equal(curve[keep[offsets[k]:offsets[k + 1]]], expected), curve.tolist()


def test_long_contour_like_curve() -> None:
    rng = np.random.default_rng(5)
    curve = np.cumsum(_STEPS[rng.integers(0, 3, 5000)], axis=0).astype(np.int32)
    keep = approx_poly_dp_open(torch.from_numpy(curve), torch.tensor([len(curve)]), 2.0).numpy()
    assert np.array_equal(curve[keep], cv2.approxPolyDP(curve.reshape(-1, 1, 2), 2.0, False).reshape(-1, 2))


def test_empty_and_errors() -> None:
    assert approx_poly_dp_open(torch.zeros(0, 2, dtype=torch.int64), torch.zeros(0), 2.0).numel() == 0
    with pytest.raises(ValueError, match="epsilon"):
        approx_poly_dp_open(torch.zeros(1, 2, dtype=torch.int64), torch.tensor([1]), -1.0)
    with pytest.raises(ValueError, match="points"):
        approx_poly_dp_open(torch.zeros(3, dtype=torch.int64), torch.tensor([3]), 1.0)
    with pytest.raises(ValueError, match="lengths"):
        approx_poly_dp_open(torch.zeros(3, 2, dtype=torch.int64), torch.tensor([2]), 1.0)


@pytest.mark.parametrize("epsilon", [2.0, 0.5, 0.0, 40.0])
def test_fixed_levels_equal_the_data_sized_path(epsilon: float) -> None:
    """The sync-free variant (padded list, fixed levels) keeps the same points; padding keeps none."""
    curves = CURVES[:400]
    points = torch.from_numpy(np.concatenate(curves + [np.zeros((7, 2), np.int32)])).long()
    lengths = [len(c) for c in curves]
    total = sum(lengths)
    first = torch.ones(points.shape[0], dtype=torch.bool)
    first[:total] = False
    first[torch.tensor(np.r_[0, np.cumsum(lengths)[:-1]])] = True
    real = torch.arange(points.shape[0]) < total
    keep, exhausted = approx_poly_dp_fixed(points, first, real, epsilon, levels=40)
    expected = approx_poly_dp_open(points[:total], torch.tensor(lengths), epsilon)
    assert torch.equal(keep[:total], expected) and not keep[total:].any() and not exhausted.any()


def test_fixed_levels_flag_a_short_budget() -> None:
    rng = np.random.default_rng(5)
    curve = torch.from_numpy(np.cumsum(_STEPS[rng.integers(0, 3, 300)], axis=0)).long()
    first = torch.zeros(300, dtype=torch.bool)
    first[0] = True
    real = torch.ones(300, dtype=torch.bool)
    expected = approx_poly_dp_open(curve, torch.tensor([300]), 1.0)
    keep, exhausted = approx_poly_dp_fixed(curve, first, real, 1.0, levels=2)
    assert exhausted.any()
    keep, exhausted = approx_poly_dp_fixed(curve, first, real, 1.0, levels=64)
    assert torch.equal(keep, expected) and not exhausted.any()
