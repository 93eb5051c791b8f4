"""The cheap tier equals PySODMetrics 1.6.2 (MAE and FmeasureV2's binary handlers) on generated data."""

from __future__ import annotations

import functools

import numpy as np
import py_sod_metrics as psm
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from tests.helpers.data import as_tensors, float_pairs, sod_pairs
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric

HANDLERS = {"iou": psm.IOUHandler, "dice": psm.DICEHandler, "accuracy": psm.OverallAccuracyHandler,
            "ber": psm.BERHandler}
CLASSES = {"iou": nm.IoU, "dice": nm.Dice, "accuracy": nm.Accuracy, "ber": nm.BER}
FUNCTIONS = {"iou": F.iou_metric, "dice": F.dice, "accuracy": F.accuracy, "ber": F.ber}


def reference(pairs, normalize=True, sample_based=True) -> dict[str, float]:
    """PySODMetrics' values on (pred, gt) numpy pairs."""
    mae = psm.MAE()
    fm = psm.FmeasureV2({name: cls(False, False, with_binary=True, sample_based=sample_based)
                         for name, cls in HANDLERS.items()})
    for pred, gt in pairs:
        mae.step(pred, gt, normalize=normalize)
        fm.step(pred, gt, normalize=normalize)
    results = {name: float(value["binary"]) for name, value in fm.get_results().items()}
    results["mae"] = float(mae.get_results()["mae"])
    return results


@pytest.mark.parametrize("seed", [0, 1])
def test_uint8_protocol_equals_pysodmetrics(seed):
    pairs = sod_pairs(seed)
    expected = reference(pairs)
    preds, gts = as_tensors(pairs)
    assert abs(F.mae(preds, gts, normalize=True).item() - expected["mae"]) <= 1e-12
    for name, function in FUNCTIONS.items():
        ours = function(preds, gts, normalize=True, empty_gt="reference").item()
        assert abs(ours - expected[name]) <= 1e-12, name


def test_pooled_reduction_equals_dataset_based_handlers():
    pairs = sod_pairs(3)
    expected = reference(pairs, sample_based=False)
    preds, gts = as_tensors(pairs)
    for name, function in FUNCTIONS.items():
        ours = function(preds, gts, normalize=True, empty_gt="reference", reduction="pooled").item()
        assert abs(ours - expected[name]) <= 1e-12, name


def test_float64_inputs_without_normalize_equal_pysodmetrics():
    pairs = float_pairs(5)
    expected = reference(pairs, normalize=False)
    preds = [torch.from_numpy(p) for p, _ in pairs]
    gts = [torch.from_numpy(g) for _, g in pairs]
    assert abs(F.mae(preds, gts).item() - expected["mae"]) <= 1e-12
    for name, function in FUNCTIONS.items():
        assert abs(function(preds, gts, empty_gt="reference").item() - expected[name]) <= 1e-12, name


def test_float32_inputs_match_within_tolerance():
    pairs = float_pairs(6)
    expected = reference(pairs, normalize=False)
    preds = [torch.from_numpy(p).float() for p, _ in pairs]
    gts = [torch.from_numpy(g) for _, g in pairs]
    assert abs(F.mae(preds, gts).item() - expected["mae"]) <= 1e-6


def _samples(seed=0):
    preds, gts = as_tensors(sod_pairs(seed))
    return list(zip(preds, gts))


@pytest.mark.parametrize("name", ["mae", *CLASSES])
def test_cheap_metrics_pass_the_shared_tester(name):
    samples = _samples(2)
    expected = reference([(p.numpy(), g.numpy()) for p, g in samples])[name]
    if name == "mae":
        make = functools.partial(nm.MAE, normalize=True)
        function = functools.partial(F.mae, normalize=True)
    else:
        make = functools.partial(CLASSES[name], normalize=True, empty_gt="reference")
        function = functools.partial(FUNCTIONS[name], normalize=True, empty_gt="reference")
    check_metric(make, samples, expected, functional=function)


def test_matting_sad_mse_pass_the_shared_tester():
    rng = np.random.default_rng(4)
    samples = []
    for h, w in [(9, 13), (9, 13), (4, 7), (1, 5)]:
        pred = torch.from_numpy(rng.integers(0, 256, (h, w)).astype(np.uint8))
        gt = torch.from_numpy(rng.integers(0, 256, (h, w)).astype(np.uint8))
        tri = torch.from_numpy(rng.choice(np.array([0, 128, 255], np.uint8), (h, w)))
        samples.append((pred, gt, tri))
    for cls, function in [(nm.SAD, F.sad), (nm.MSE, F.mse_metric)]:
        check_metric(cls, samples, functional=function)


@pytest.mark.slow
def test_cheap_metrics_under_two_process_ddp():
    samples = _samples(7)[:9]
    check_ddp(functools.partial(nm.make_collection, metrics=["mae", "iou_metric", "dice", "accuracy", "ber"],
                                normalize=True), samples)
