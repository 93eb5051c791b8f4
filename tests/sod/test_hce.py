"""HCE image for image == PySODMetrics 1.6.2 HumanCorrectionEffortMeasure(relax=5, epsilon=2.0), and == the
DIS authors' tool (tests/reference/hce_dis.py) under protocol "dis"; the HCE class through the shared tester."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from py_sod_metrics import HumanCorrectionEffortMeasure
from py_sod_metrics.utils import validate_and_normalize_input
from scipy import ndimage

from benchmarks.shapes import real_pairs
from nobg_metrics.functional.sod.hce import hce, hce_per_image
from nobg_metrics.metrics.sod.hce import HCE
from tests.helpers.data import SHAPES, gt_uint8, pred_uint8
from tests.helpers.tester import check_metric
from tests.reference.hce_dis import hce_dis


def _stroke_gt(rng: np.random.Generator, h: int, w: int, kind: str) -> np.ndarray:
    """Thin structures DIS5K is made of: wires, text-like strokes, fences, many small components, holes."""
    m = np.zeros((h, w), bool)
    if kind == "wires":
        for _ in range(4):
            r0, r1 = rng.integers(0, h, 2)
            cols = np.arange(w)
            m[np.clip(np.round(np.linspace(r0, r1, w)).astype(int), 0, h - 1), cols] = True
    elif kind == "fence":
        m[:, ::6] = True
        m[h // 3:h // 3 + 2, :] = True
        m[2 * h // 3, :] = True
    elif kind == "text":
        for _ in range(8):
            y, x = rng.integers(0, h - 6), rng.integers(0, w - 5)
            m[y:y + 6, x] = m[y, x:x + 4] = m[y + 3, x:x + 3] = True
            if rng.random() < 0.5:
                m[y:y + 6, x + 3] = m[y + 5, x:x + 4] = True  # a closed letter: a hole
    elif kind == "dots":
        m[rng.integers(0, h, 40), rng.integers(0, w, 40)] = True
        m |= ndimage.binary_dilation(rng.random((h, w)) < 0.01)
    else:  # "holes": a border-touching object with holes, holes in holes
        m[:, : w * 2 // 3] = True
        m[h // 4:3 * h // 4, w // 6:w // 2] = False
        m[h // 3:2 * h // 3, w // 4:w // 3] = True
        m[rng.integers(0, h, 15), rng.integers(0, w * 2 // 3, 15)] = False
    return m


def _degrade(rng: np.random.Generator, gt: np.ndarray) -> np.ndarray:
    """A uint8 prediction with FN gaps, FP blobs next to true edges, shifted edges and soft levels."""
    pred = gt.copy()
    pred &= rng.random(gt.shape) > 0.05
    pred = ndimage.binary_dilation(pred) if rng.random() < 0.5 else ndimage.binary_erosion(pred, border_value=1)
    pred |= ndimage.binary_dilation(rng.random(gt.shape) < 0.003, iterations=2)
    levels = np.where(pred, rng.integers(100, 256, gt.shape), rng.integers(0, 160, gt.shape))
    return levels.astype(np.uint8)


def _cases() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(19)
    cases = []
    for i, (h, w) in enumerate(SHAPES * 3):
        gt = gt_uint8(rng, h, w, ("blob", "thin", "empty", "full")[i % 4])
        cases.append((pred_uint8(rng, gt, ("noisy", "lowrange", "random", "perfect", "constant")[i % 5]), gt))
    for i, kind in enumerate(["wires", "fence", "text", "dots", "holes"] * 2):
        h, w = (41, 67) if i % 2 else (58, 35)
        gt = _stroke_gt(rng, h, w, kind)
        cases.append((_degrade(rng, gt), np.where(gt, 255, 0).astype(np.uint8)))
    cases.extend(real_pairs((120, 150), 5, seed=4))
    return cases


CASES = _cases()
PYSOD = HumanCorrectionEffortMeasure(relax=5, epsilon=2.0)


def _pysod_hce(pred: np.ndarray, gt: np.ndarray) -> int:
    return int(PYSOD.cal_hce(*validate_and_normalize_input(pred, gt, True)))


@pytest.fixture(scope="module")
def ours_pysod() -> list[float]:
    return hce_per_image([torch.from_numpy(p) for p, _ in CASES], [torch.from_numpy(g) for _, g in CASES],
                         normalize=True).tolist()


def test_equals_pysodmetrics_image_for_image(ours_pysod: list[float]) -> None:
    expected = [_pysod_hce(p, g) for p, g in CASES]
    assert ours_pysod == expected
    assert sum(expected) > 100  # the data exercises the measure


def _dis_cases() -> tuple[list[tuple[np.ndarray, np.ndarray]], list[int]]:
    """The cases the tool scores (it raises IndexError on a whole-image region with a kept point)."""
    cases, values = [], []
    for p, g in CASES:
        try:
            values.append(hce_dis(g, p))
        except IndexError:
            continue
        cases.append((p, g))
    return cases, values


def test_equals_dis_tool_image_for_image() -> None:
    cases, expected = _dis_cases()
    assert len(cases) >= len(CASES) - 3
    ours = hce_per_image([torch.from_numpy(p) for p, _ in cases], [torch.from_numpy(g) for _, g in cases],
                         protocol="dis").tolist()
    assert ours == expected


def test_dis_cached_skeleton() -> None:
    rng = np.random.default_rng(2)
    pred, gt = CASES[-1]
    skeleton = np.where(ndimage.binary_dilation(rng.random(gt.shape) < 0.02) & (gt > 128), 255, 0).astype(np.uint8)
    ours = hce(torch.from_numpy(pred), torch.from_numpy(gt), protocol="dis", gt_skeleton=torch.from_numpy(skeleton))
    assert float(ours) == hce_dis(gt, pred, skeleton)
    as_bool = hce(torch.from_numpy(pred), torch.from_numpy(gt), protocol="dis",
                  gt_skeleton=torch.from_numpy(skeleton > 128))
    assert float(as_bool) == float(ours)


def test_tiny_images_every_case() -> None:
    """Every gt/pred pair of 1x1, 1x2, 2x1 and 2x2 images, and the first 64 of 1x7, 7x1, 3x3 (one call)."""
    preds, gts = [], []
    for h, w in [(1, 1), (1, 2), (2, 1), (1, 7), (7, 1), (2, 2), (3, 3)]:
        for code in range(min(2 ** (2 * h * w), 256 if h * w <= 4 else 64)):
            bits = np.array([(code >> k) & 1 for k in range(2 * h * w)], bool)
            gts.append(np.where(bits[: h * w].reshape(h, w), 255, 0).astype(np.uint8))
            preds.append(np.where(bits[h * w: 2 * h * w].reshape(h, w), 200, 30).astype(np.uint8))
    ours = hce_per_image([torch.from_numpy(p) for p in preds], [torch.from_numpy(g) for g in gts], normalize=True)
    assert ours.tolist() == [_pysod_hce(p, g) for p, g in zip(preds, gts)]


def test_class_through_shared_tester(ours_pysod: list[float]) -> None:
    picked = [2, 3, 5, 6, 28]  # mixed sizes, 1xN, thin and full gts, strokes
    samples = [(torch.from_numpy(CASES[i][0]), torch.from_numpy(CASES[i][1])) for i in picked]
    check_metric(lambda: HCE(normalize=True), samples, float(np.mean([ours_pysod[i] for i in picked])),
                 functional=lambda p, g: hce(p, g, normalize=True), atol=1e-12)


def test_options_fingerprint_and_errors() -> None:
    assert set(HCE().metric_state) != set(HCE(protocol="dis").metric_state)
    with pytest.raises(ValueError, match="protocol"):
        HCE(protocol="birefnet")
    with pytest.raises(ValueError, match="relax"):
        HCE(relax=-1)
    with pytest.raises(TypeError, match="relax"):
        HCE(relax=2.5)
    with pytest.raises(ValueError, match="epsilon"):
        hce(torch.zeros(4, 4), torch.zeros(4, 4), epsilon=-1.0)
    with pytest.raises(ValueError, match="normalize"):
        HCE(protocol="dis", normalize=True)
    with pytest.raises(TypeError, match="pred"):
        hce(torch.zeros(4, 4), torch.zeros(4, 4), protocol="dis")
    with pytest.raises(ValueError, match=r"pred\[1\]"):
        hce([torch.zeros(4, 4), torch.full((4, 4), 2.0)], [torch.zeros(4, 4)] * 2)
    with pytest.raises(TypeError, match="gt_skeleton"):
        hce(torch.zeros(4, 4), torch.zeros(4, 4), gt_skeleton=torch.zeros(4, 4))
