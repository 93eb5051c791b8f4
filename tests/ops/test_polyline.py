"""Open Douglas–Peucker == cv2.approxPolyDP(curve, eps, closed=False), point for point, many curves at once, from both
forms of :func:`approx_poly_dp_open` (``engine``)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from nobg_metrics.ops.polyline import approx_poly_dp_open
from tests.helpers.syncs import HostSyncRecorder

ENGINES = ["data_sized", "fixed"]

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


def _first(lengths: list[int], size: int | None = None) -> torch.Tensor:
    """The ``first`` flags of polylines of these lengths laid end to end (``size`` entries: padding after)."""
    first = torch.zeros(sum(lengths) if size is None else size, dtype=torch.bool)
    first[torch.tensor(np.r_[0, np.cumsum(lengths)[:-1]], dtype=torch.int64)] = True
    return first


def _check(curves: list[np.ndarray], epsilon: float, engine: str, padding: int = 0) -> None:
    """Our kept points of every curve equal OpenCV's; padding entries (after the curves) keep nothing."""
    lengths = [len(c) for c in curves]
    total = sum(lengths)
    points = torch.from_numpy(np.concatenate([*curves, np.full((padding, 2), 3, np.int32)]))
    real = torch.arange(total + padding) < total if padding else None
    keep, exhausted = approx_poly_dp_open(points, _first(lengths, total + padding), epsilon, real=real,
                                          engine=engine, levels=40)
    assert not exhausted.any() and not keep[total:].any()
    offsets = np.r_[0, np.cumsum(lengths)]
    for k, curve in enumerate(curves):
        expected = cv2.approxPolyDP(curve.reshape(-1, 1, 2), epsilon, False).reshape(-1, 2)
        assert np.array_equal(curve[keep[offsets[k]:offsets[k + 1]].numpy()], expected), curve.tolist()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("epsilon", [2.0, 1.0, 0.5, 0.0, 3.7, 40.0])
def test_equals_opencv(epsilon: float, engine: str) -> None:
    _check(CURVES, epsilon, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_padding_keeps_nothing_and_changes_nothing(engine: str) -> None:
    _check(CURVES[:400], 2.0, engine, padding=7)


@pytest.mark.parametrize("engine", ENGINES)
def test_long_contour_like_curve(engine: str) -> None:
    rng = np.random.default_rng(5)
    curve = np.cumsum(_STEPS[rng.integers(0, 3, 5000)], axis=0).astype(np.int32)
    keep, _ = approx_poly_dp_open(torch.from_numpy(curve), _first([len(curve)]), 2.0, engine=engine)
    assert np.array_equal(curve[keep.numpy()], cv2.approxPolyDP(curve.reshape(-1, 1, 2), 2.0, False).reshape(-1, 2))


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_and_errors(engine: str) -> None:
    keep, exhausted = approx_poly_dp_open(torch.zeros(0, 2, dtype=torch.int64), torch.zeros(0, dtype=torch.bool), 2.0,
                                          engine=engine)
    assert keep.numel() == 0 and exhausted.numel() == 0
    one = torch.ones(1, dtype=torch.bool)
    with pytest.raises(ValueError, match="epsilon"):
        approx_poly_dp_open(torch.zeros(1, 2, dtype=torch.int64), one, -1.0, engine=engine)
    with pytest.raises(ValueError, match="points"):
        approx_poly_dp_open(torch.zeros(3, dtype=torch.int64), one.expand(3), 1.0, engine=engine)
    with pytest.raises(ValueError, match="first"):
        approx_poly_dp_open(torch.zeros(3, 2, dtype=torch.int64), one, 1.0, engine=engine)
    with pytest.raises(ValueError, match="first"):  # the data-sized form checks that every point has a polyline
        approx_poly_dp_open(torch.zeros(3, 2, dtype=torch.int64), torch.zeros(3, dtype=torch.bool), 1.0,
                            engine="data_sized")


def test_the_fixed_form_flags_a_short_budget_and_makes_no_host_sync() -> None:
    rng = np.random.default_rng(5)
    curve = torch.from_numpy(np.cumsum(_STEPS[rng.integers(0, 3, 300)], axis=0)).long()
    first = _first([300])
    expected, _ = approx_poly_dp_open(curve, first, 1.0, engine="data_sized")
    _, exhausted = approx_poly_dp_open(curve, first, 1.0, engine="fixed", levels=2)
    assert exhausted.any()
    with HostSyncRecorder() as recorder:
        keep, exhausted = approx_poly_dp_open(curve, first, 1.0, engine="fixed", levels=16)  # 14 needed
    assert not recorder.hits, recorder.hits
    assert torch.equal(keep, expected) and not exhausted.any()
