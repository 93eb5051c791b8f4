"""MSIoU equals PySODMetrics 1.6.2 ``MSIoU`` in every mode (dynamic curve, adaptive, binary), image by image and
over datasets, on uint8 (``normalize=True``), float64 and float32 (``normalize=False``) inputs; the edge map, the
float16 denominators and ``np.trapz`` bit for bit; the device paths (forced on CPU) give the same numbers without a
host sync; the shared tester and one real DDP run."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import torch
from py_sod_metrics import MSIoU as ReferenceMSIoU
from torchmetrics import Metric

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.collection import METRIC_NAMES, make_collection
from nobg_metrics.functional.sod.msiou import _msiou_update, binary_edges, trapezoid
from nobg_metrics.ops import host_reads
from tests.helpers.data import SHAPES, as_tensors, float_pairs, sod_pairs
from tests.helpers.ddp import check_ddp
from tests.helpers.syncs import HostSyncRecorder
from tests.helpers.tester import check_metric

EXTRA_SHAPES = [(3, 300), (130, 67), (1, 1), (2, 2)]
ALL = frozenset({"curve", "adaptive", "binary"})
REFERENCE = {"normalize": True, "empty_gt": "reference"}


def _reference(pred: np.ndarray, gt: np.ndarray, normalize: bool = True) -> tuple[np.ndarray, float, float]:
    """PySODMetrics' per-image ``(dynamic curve (257,), adaptive, binary)``."""
    metric = ReferenceMSIoU(with_dynamic=True, with_adaptive=True, with_binary=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # np.trapz
        metric.step(pred, gt, normalize=normalize)
    return np.asarray(metric.dynamic_results[0]), float(metric.adaptive_results[0]), float(metric.binary_results[0])


def _stress_gt(rng: np.random.Generator, kind: str, height: int, width: int) -> np.ndarray:
    """Fine structures: noise (many edges: float16 rounding and overflow), dots, 1-px grids, checkers, stripes."""
    rows, cols = np.arange(height)[:, None], np.arange(width)[None]
    if kind == "noise":
        return rng.uniform(size=(height, width)) < rng.uniform(0.2, 0.8)
    if kind == "dots":
        return rng.uniform(size=(height, width)) < 0.03
    if kind == "grid":
        return (rows % 3 == 0) ^ (cols % 5 == 0)
    if kind == "checker":
        return (rows + cols) % 2 == 1
    return (cols + rows // 2) % 2 == 1  # "stripes": every interior Sobel response cancels


def _stress_pred(rng: np.random.Generator, kind: str, gt: np.ndarray) -> np.ndarray:
    height, width = gt.shape
    if kind == "few":
        return (rng.integers(0, 4, gt.shape) * 85).astype(np.uint8)
    if kind == "smooth":
        return ((np.sin(np.arange(height)[:, None] / 7) * np.cos(np.arange(width)[None] / 5) + 1) * 127.5).astype(
            np.uint8)
    if kind == "thin":
        pred = np.zeros(gt.shape, np.uint8)
        pred[rng.integers(0, height, 3), :] = 200
        pred[:, rng.integers(0, width, 3)] = 90
        return pred
    return np.clip(gt * 180 + rng.normal(40, 40, gt.shape), 0, 255).astype(np.uint8)


def stress_pairs(seed: int, shapes) -> list[tuple[np.ndarray, np.ndarray]]:
    """uint8 (pred, gt) pairs of fine structures (gt on 0/255, some background pixels 128)."""
    rng = np.random.default_rng(seed)
    gts, preds = ["noise", "dots", "grid", "checker", "stripes"], ["few", "smooth", "thin", "noisy"]
    pairs = []
    for index, (height, width) in enumerate(shapes):
        gt = _stress_gt(rng, gts[index % len(gts)], height, width)
        pred = _stress_pred(rng, preds[index % len(preds)], gt)
        pairs.append((pred, np.where(gt, 255, rng.choice(np.array([0, 128], np.uint8), gt.shape)).astype(np.uint8)))
    return pairs


@functools.cache
def _dataset(name: str) -> tuple[list, list]:
    """``(pairs, reference values)`` of a named dataset (computed once per session: the reference is slow)."""
    if name == "uint8":
        pairs = sod_pairs(0, SHAPES + EXTRA_SHAPES) + stress_pairs(1, [(37, 53), (64, 48), (17, 1), (33, 70), (5, 5)])
    elif name == "float64":
        pairs = float_pairs(2, SHAPES)
    elif name == "float32":
        pairs = [(p.astype(np.float32), g) for p, g in float_pairs(3, SHAPES[:5])]
    elif name == "fine":
        pairs = stress_pairs(4, [(300, 301), (129, 257), (96, 96), (1, 40), (40, 1)])
    else:  # pragma: no cover
        raise KeyError(name)
    return pairs, [_reference(p, g, normalize=p.dtype == np.uint8) for p, g in pairs]


def _ours(pred: np.ndarray, gt: np.ndarray) -> tuple[np.ndarray, float, float]:
    sums, _ = _msiou_update(torch.from_numpy(pred), torch.from_numpy(gt), ALL, 0.5, pred.dtype == np.uint8,
                            "reference", True)
    return sums["curve"].numpy(), sums["adaptive"].item(), sums["binary"].item()


@pytest.mark.parametrize(
    "dataset", ["uint8", *(pytest.param(d, marks=pytest.mark.slow) for d in ("float64", "float32", "fine"))])
def test_per_image_values_equal_the_reference_in_every_mode(dataset):
    pairs, expected = _dataset(dataset)
    worst = np.zeros(3)
    for (pred, gt), (curve, adaptive, binary) in zip(pairs, expected):
        ours = _ours(pred, gt)
        worst = np.maximum(worst, [np.abs(ours[0] - curve).max(), abs(ours[1] - adaptive), abs(ours[2] - binary)])
    assert worst.max() <= 1e-12, f"worst |diff| curve / adaptive / binary: {worst}"


@pytest.mark.parametrize("dataset", ["uint8", "float64"])
def test_dataset_values_equal_the_reference(dataset):
    pairs, expected = _dataset(dataset)
    normalize = dataset == "uint8"
    preds, gts = as_tensors(pairs)
    curve = np.mean([values[0] for values in expected], axis=0)  # the reference's get_results()
    options = {"normalize": normalize, "empty_gt": "reference"}
    assert np.abs(F.msiou_curve(preds, gts, **options).numpy() - curve).max() <= 1e-12
    assert abs(F.msiou(preds, gts, "max", **options).item() - curve.max()) <= 1e-12
    assert abs(F.msiou(preds, gts, "mean", **options).item() - curve.mean()) <= 1e-12
    for index, mode in [(1, "adaptive"), (2, "binary")]:
        value = np.mean([values[index] for values in expected])
        assert abs(F.msiou(preds, gts, mode, **options).item() - value) <= 1e-12, mode


def test_edges_are_the_integer_sobel_response_with_its_cancellations():
    """scipy's ``sobel`` of a bool array stores the derivative's -1 as the byte 255 and sums bytes modulo 256: the
    reference's edge map is ``Sx != 0 or Sy != 0`` of the integer Sobel, cancellations included."""
    rng = np.random.default_rng(0)
    reference = ReferenceMSIoU(with_dynamic=False, with_adaptive=False)
    cancelled = 0
    for _ in range(300):
        height, width = rng.integers(1, 20, 2)
        mask = rng.uniform(size=(height, width)) < rng.uniform()
        expected = reference.get_edge(mask) > 0
        ours = binary_edges(torch.from_numpy(mask)[None])[0].numpy().astype(bool)
        assert np.array_equal(ours, expected), (height, width)
        padded = np.pad(mask, 1)
        differs = (padded[2:] != padded[:-2])[:, :-2] | (padded[2:] != padded[:-2])[:, 1:-1] | (
            padded[2:] != padded[:-2])[:, 2:]
        differs |= (padded[:, 2:] != padded[:, :-2])[:-2] | (padded[:, 2:] != padded[:, :-2])[1:-1] | (
            padded[:, 2:] != padded[:, :-2])[2:]
        cancelled += int((differs & ~expected).any())
    assert cancelled > 50  # the "no cancellation" reading of the reference would be wrong on these


def test_trapezoid_is_numpys_bit_for_bit():
    rng = np.random.default_rng(1)
    ratios = np.concatenate([rng.uniform(0, 2, (500, 10)), 1 / rng.integers(1, 70000, (500, 10))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        expected = np.array([np.trapz(row, dx=1 / 9) for row in ratios])
    assert np.array_equal(trapezoid(torch.from_numpy(ratios)).numpy(), expected)


def test_float16_denominators_round_and_overflow_as_the_reference():
    """A noise gt of 300 x 301 has > 65520 edge pixels (float16 ``inf``: the scale-1 ratio is 0) and thousands of
    edge cells at the next scales (rounded to float16)."""
    pairs, expected = _dataset("fine")
    gt = torch.from_numpy(pairs[0][1])[None] > 128
    assert int(binary_edges(gt).sum()) >= 65520
    curve = _ours(*pairs[0])[0]
    assert np.abs(curve - expected[0][0]).max() <= 1e-12


def test_device_paths_give_the_cpu_values_on_the_stress_pairs_and_float_maps_without_a_host_sync(monkeypatch):
    """Beyond tests/test_sync_free.py (every entry, uint8, the default policy): MSIoU's own stress pairs, both empty-gt
    policies, and float predictions."""
    pairs = sod_pairs(5, [*SHAPES[:6], (130, 67)]) + stress_pairs(6, [(40, 56), (9, 70)])
    preds, gts = as_tensors(pairs)
    host = {policy: _msiou_update(preds, gts, ALL, 0.5, True, policy, True)[0] for policy in ("reference", "agreement")}
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    for policy, values in host.items():
        device = _msiou_update(preds, gts, ALL, 0.5, True, policy, False)[0]
        for name, value in values.items():
            assert torch.equal(device[name], value), (policy, name)
    floats = [p.double() / 255 for p in preds[:3]]
    with HostSyncRecorder() as recorder:
        F.msiou(floats, gts[:3], "adaptive", validate_args=False)
    assert not recorder.hits, recorder.hits


def test_empty_and_full_gt_policies():
    empty, full = torch.zeros(6, 9, dtype=torch.bool), torch.ones(6, 9, dtype=torch.bool)
    some = torch.zeros(6, 9)
    some[1:3, 2:6] = 0.9
    for mode in ("max", "mean", "adaptive", "binary"):  # the reference: no gt edge, every ratio (0 + 1) / (0 + 1)
        assert F.msiou(some, empty, mode, empty_gt="reference").item() == 1.0
    # agreement: a perfect (all-zero) prediction scores 1 at every threshold but t = 0 (u8 >= 0 is everything); its
    # adaptive threshold min(2 * 0, 1) = 0 also predicts everything
    assert F.msiou(empty.float(), empty, "max").item() == 1.0 and F.msiou(empty.float(), empty, "binary").item() == 1.0
    assert F.msiou(empty.float(), empty, "mean").item() == pytest.approx(256 / 257, abs=1e-15)
    assert F.msiou(empty.float(), empty, "adaptive").item() == 0.0
    assert F.msiou(some, empty, "binary").item() == pytest.approx(1 - 8 / 54, abs=1e-15)
    assert F.msiou(some, full, "binary").item() == pytest.approx(8 / 54, abs=1e-15)
    assert F.msiou(full.float(), full, "binary").item() == 1.0
    # the curve: #(u8 < t) / N on an empty gt (t = 0: everything predicted), #(u8 >= t) / N on a full one
    curve = F.msiou_curve(some, empty)
    assert curve[0].item() == 0.0 and curve[229].item() == pytest.approx(46 / 54) and curve[230].item() == 1.0
    assert F.msiou(some, empty, "max").item() == 1.0 and F.msiou(some, full, "max").item() == 1.0
    reference = _reference((some.numpy() * 255).astype(np.uint8), full.numpy().astype(np.uint8) * 255)
    assert F.msiou(some, full, "binary", empty_gt="reference").item() == pytest.approx(reference[2], abs=1e-12)


def test_uint8_and_float_inputs_agree():
    pairs = sod_pairs(7, SHAPES[:5])
    preds, gts = as_tensors(pairs)
    floats = [p.double() / 255 for p in preds]
    bools = [g > 128 for g in gts]
    for mode in ("max", "mean", "adaptive", "binary"):
        assert F.msiou(preds, gts, mode).item() == F.msiou(floats, bools, mode).item(), mode


def _samples(seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    preds, gts = as_tensors(sod_pairs(seed, SHAPES[:6]))
    return list(zip(preds, gts))


@pytest.mark.parametrize("mode", ["max", "mean", "adaptive", "binary"])
def test_class_passes_the_shared_tester(mode):
    pairs, expected = _dataset("uint8")
    samples = list(zip(*as_tensors(pairs[:30])))
    expected = expected[:30]
    if mode in ("max", "mean"):
        curve = np.mean([values[0] for values in expected], axis=0)
        value = curve.max() if mode == "max" else curve.mean()
    else:
        value = np.mean([values[1 if mode == "adaptive" else 2] for values in expected])
    check_metric(functools.partial(nm.MSIoU, mode, **REFERENCE), samples, value,
                 functional=functools.partial(F.msiou, mode=mode, **REFERENCE), atol=1e-12, invariance_atol=1e-12)


def test_options_states_and_registry():
    for name in ("msiou_max", "msiou_mean", "msiou_adaptive", "msiou_binary"):
        assert name in METRIC_NAMES
    collection = make_collection(metrics=["msiou_max", "msiou_mean", "msiou_binary"], normalize=True)
    assert ["msiou_max", "msiou_mean"] in list(collection.compute_groups.values())
    samples = _samples(9)
    collection.update(*map(list, zip(*samples)))
    values = collection.compute()
    assert values["msiou_max"].item() == F.msiou(*map(list, zip(*samples)), "max", normalize=True).item()
    assert values["msiou_mean"].item() == F.msiou(*map(list, zip(*samples)), "mean", normalize=True).item()
    def names(metric: Metric) -> list[str]:
        return sorted(metric.metric_state)

    assert names(nm.MSIoU("max")) == names(nm.MSIoU("mean"))
    assert names(nm.MSIoU("binary", threshold=0.3)) != names(nm.MSIoU("binary"))
    assert names(nm.MSIoU("max", threshold=0.3)) == names(nm.MSIoU("max"))  # the curve does not read it
    assert nm.MSIoU("mean").msiou_curve_sum.shape == (257,)
    with pytest.raises(ValueError, match="mode"):
        nm.MSIoU("curve")
    with pytest.raises(ValueError, match="threshold"):
        F.msiou(torch.zeros(3, 3), torch.zeros(3, 3), "binary", threshold=1.5)
    with pytest.raises(ValueError, match="empty_gt"):
        nm.MSIoU(empty_gt="nan")
    with pytest.raises(ValueError, match="curve"):
        nm.MSIoU("adaptive").curve()


@pytest.mark.slow
def test_msiou_under_two_process_ddp():
    check_ddp(functools.partial(nm.MSIoU, "max", **REFERENCE), _samples(10)[:7], atol=1e-12)


@pytest.mark.slow
def test_large_non_square_images_equal_the_reference():
    """Sizes past one 512 cell, not multiples of it (the top / left padding of every grid)."""
    pairs = sod_pairs(11, [(600, 520), (1030, 17)])[::3] + stress_pairs(12, [(513, 700)])
    for pred, gt in pairs:
        curve, adaptive, binary = _reference(pred, gt)
        ours = _ours(pred, gt)
        assert np.abs(ours[0] - curve).max() <= 1e-12
        assert abs(ours[1] - adaptive) <= 1e-12 and abs(ours[2] - binary) <= 1e-12
