"""The confusion family's classes: the shared tester against PySODMetrics, DDP, torchmetrics' automatic compute
groups (never merging metrics whose statistics differ, always merging those whose statistics are equal),
``make_collection(metrics=FAMILY)``, ``python -OO`` and ``plot()``."""

from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest
import torch
from torchmetrics import MetricCollection

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.collection import FAMILY
from tests.helpers.data import as_tensors, sod_pairs
from tests.helpers.ddp import check_ddp
from tests.helpers.tester import check_metric
from tests.sod.test_confusion_family import _expected as fmeasurev2_values
from tests.sod.test_confusion_family import _stress_uint8, auc_recipe

ATOL = 1e-12
PROTOCOL = {"normalize": True, "empty_gt": "reference"}
"""PySODMetrics' protocol on uint8 inputs."""


def _samples(seed: int = 1, count: int = 20) -> list[tuple[torch.Tensor, torch.Tensor]]:
    pairs = sod_pairs(seed)[:count] + [_stress_uint8()[i] for i in (3, 8, 10, 12)]  # 1-pixel gt, 1x1 images
    preds, gts = as_tensors(pairs)
    return list(zip(preds, gts))


@functools.cache
def _reference(seed: int = 1, count: int = 20) -> dict:
    return fmeasurev2_values([(p.numpy(), g.numpy()) for p, g in _samples(seed, count)], True)


def _auc(name: str, ref: dict) -> float:
    y, x = {"pr_auc": ("precision", "recall"), "roc_auc": ("recall", "fpr")}[name]
    return auc_recipe(ref[y]["curve"], ref[x]["curve"])


# (id, class, class kwargs, functional, functional kwargs, (reference member, reference mode))
CASES = [
    ("Precision-max", nm.Precision, {"mode": "max"}, F.precision, {"mode": "max"}, ("precision", "max")),
    ("Precision-curve", nm.Precision, {"mode": "curve"}, F.precision, {"mode": "curve"}, ("precision", "curve")),
    ("Recall-mean", nm.Recall, {"mode": "mean"}, F.recall, {"mode": "mean"}, ("recall", "mean")),
    ("Recall-binary", nm.Recall, {}, F.recall, {}, ("recall", "binary")),
    ("Specificity-adaptive", nm.Specificity, {"mode": "adaptive"}, F.specificity, {"mode": "adaptive"},
     ("specificity", "adaptive")),
    ("Specificity-pooled", nm.Specificity, {"reduction": "pooled"}, F.specificity, {"reduction": "pooled"},
     ("specificity", "pooled")),
    ("FPR-binary", nm.FPR, {}, F.fpr, {}, ("fpr", "binary")),
    ("FPR-max", nm.FPR, {"mode": "max"}, F.fpr, {"mode": "max"}, ("fpr", "max")),
    ("Kappa-binary", nm.Kappa, {}, F.kappa, {}, ("kappa", "binary")),
    ("Kappa-adaptive", nm.Kappa, {"mode": "adaptive"}, F.kappa, {"mode": "adaptive"}, ("kappa", "adaptive")),
    ("Kappa-cohen-pooled", nm.Kappa, {"chance": "cohen", "reduction": "pooled"}, F.kappa,
     {"chance": "cohen", "reduction": "pooled"}, ("kappa_cohen", "pooled")),
    ("Kappa-cohen-max", nm.Kappa, {"chance": "cohen", "mode": "max"}, F.kappa, {"chance": "cohen", "mode": "max"},
     ("kappa_cohen", "max")),
    ("F1-binary", nm.F1, {}, F.f_measure, {"mode": "binary", "beta2": 1.0}, ("f1", "binary")),
    ("F1-max", nm.F1, {"mode": "max"}, F.f_measure, {"mode": "max", "beta2": 1.0}, ("f1", "max")),
    ("F1-pooled", nm.F1, {"reduction": "pooled"}, F.f_measure, {"mode": "binary", "reduction": "pooled", "beta2": 1.0},
     ("f1", "pooled")),
    ("PRAUC", nm.PRAUC, {}, F.pr_auc, {}, ("pr_auc", None)),
    ("ROCAUC", nm.ROCAUC, {}, F.roc_auc, {}, ("roc_auc", None)),
    ("IoU-max", nm.IoU, {"mode": "max"}, F.iou_metric, {"mode": "max"}, ("iou", "max")),
    ("IoU-pooled", nm.IoU, {"reduction": "pooled"}, F.iou_metric, {"reduction": "pooled"}, ("iou", "pooled")),
    ("Dice-adaptive", nm.Dice, {"mode": "adaptive"}, F.dice, {"mode": "adaptive"}, ("dice", "adaptive")),
    ("Accuracy-mean", nm.Accuracy, {"mode": "mean"}, F.accuracy, {"mode": "mean"}, ("accuracy", "mean")),
    ("BER-pooled", nm.BER, {"reduction": "pooled"}, F.ber, {"reduction": "pooled"}, ("ber", "pooled")),
    ("FMeasure-adaptive", nm.FMeasure, {"mode": "adaptive"}, F.f_measure, {"mode": "adaptive"}, ("fm", "adaptive")),
    ("FMeasure-binary-pooled", nm.FMeasure, {"mode": "binary", "reduction": "pooled"}, F.f_measure,
     {"mode": "binary", "reduction": "pooled"}, ("fm", "pooled")),
    ("FMeasure-beta1-mean", nm.FMeasure, {"mode": "mean", "beta2": 1.0}, F.f_measure, {"mode": "mean", "beta2": 1.0},
     ("f1", "mean")),
]


@pytest.mark.parametrize(("cls", "kwargs", "function", "function_kwargs", "reference"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_class_passes_the_shared_tester(cls, kwargs, function, function_kwargs, reference):
    samples = _samples()
    ref = _reference()
    member, mode = reference
    expected = _auc(member, ref) if mode is None else ref[member][mode]
    value = check_metric(functools.partial(cls, **kwargs, **PROTOCOL), samples,
                         torch.tensor(expected, dtype=torch.float64),
                         functional=functools.partial(function, **function_kwargs, **PROTOCOL), atol=ATOL)
    assert value.dtype == torch.float64


def test_float64_inputs_pass_the_shared_tester():
    from tests.helpers.data import float_pairs

    pairs = float_pairs(5)[:16]
    samples = [(torch.from_numpy(p), torch.from_numpy(g)) for p, g in pairs]
    ref = fmeasurev2_values(pairs, False)
    options = {"normalize": False, "empty_gt": "reference"}
    check_metric(functools.partial(nm.Kappa, mode="max", **options), samples, ref["kappa"]["max"],
                 functional=functools.partial(F.kappa, mode="max", **options), atol=ATOL)
    check_metric(functools.partial(nm.ROCAUC, **options), samples, _auc("roc_auc", ref),
                 functional=functools.partial(F.roc_auc, **options), atol=ATOL)


# ---------------------------------------------------------------------------------------------------- DDP


def family_collection(**options) -> MetricCollection:
    """Several family classes in one collection with torchmetrics' automatic compute groups (picklable factory)."""
    return MetricCollection({
        "precision_max": nm.Precision("max", **options), "precision_mean": nm.Precision("mean", **options),
        "recall_binary": nm.Recall(**options), "specificity_adaptive": nm.Specificity("adaptive", **options),
        "fpr_curve": nm.FPR("curve", **options), "kappa_pooled": nm.Kappa(reduction="pooled", **options),
        "kappa_cohen": nm.Kappa(chance="cohen", **options), "f1": nm.F1(**options), "pr_auc": nm.PRAUC(**options),
        "roc_auc": nm.ROCAUC(**options), "iou_max": nm.IoU(mode="max", **options),
        "dice_pooled": nm.Dice(reduction="pooled", **options), "fm_adaptive": nm.FMeasure("adaptive", **options),
        "fm_binary": nm.FMeasure("binary", **options),
    })


@pytest.mark.slow
def test_family_classes_under_ddp():
    samples = _samples(2, 14)
    make = functools.partial(family_collection, **PROTOCOL)
    check_ddp(make, samples, atol=ATOL)
    # and the single-process values are PySODMetrics'
    collection = make()
    collection.update(*[list(column) for column in zip(*samples)])
    values, ref = collection.compute(), _reference(2, 14)
    expected = {"precision_max": ref["precision"]["max"], "precision_mean": ref["precision"]["mean"],
                "recall_binary": ref["recall"]["binary"], "specificity_adaptive": ref["specificity"]["adaptive"],
                "fpr_curve": ref["fpr"]["curve"], "kappa_pooled": ref["kappa"]["pooled"],
                "kappa_cohen": ref["kappa_cohen"]["binary"], "f1": ref["f1"]["binary"],
                "pr_auc": _auc("pr_auc", ref), "roc_auc": _auc("roc_auc", ref), "iou_max": ref["iou"]["max"],
                "dice_pooled": ref["dice"]["pooled"], "fm_adaptive": ref["fm"]["adaptive"],
                "fm_binary": ref["fm"]["binary"]}
    for name, value in expected.items():
        assert np.abs(values[name].numpy() - value).max() <= ATOL, name


# ---------------------------------------------------------------------------------------------------- compute groups


def _first_batch(kind: str) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Hard 0/1 float predictions equal to their gt: ``"perfect"`` (gts with both classes) or ``"degenerate"``
    (all-background and all-foreground gts). After it, many differently-configured metrics hold equal values."""
    generator = torch.Generator().manual_seed(7)
    if kind == "perfect":
        gts = [torch.rand(11, 13, generator=generator) > 0.5 for _ in range(3)]
    else:
        gts = [torch.zeros(11, 13, dtype=torch.bool), torch.ones(11, 13, dtype=torch.bool)]
    return [gt.double() for gt in gts], gts


def _later_batches() -> list[tuple[list[torch.Tensor], list[torch.Tensor]]]:
    preds, gts = as_tensors(sod_pairs(3)[:20])
    float_preds = [p.double() / 255 * 0.6 + 0.2 for p in preds]  # soft, never 0 or 1: the stretch matters
    bool_gts = [g > 128 for g in gts]
    return [(float_preds[i : i + 5], bool_gts[i : i + 5]) for i in range(0, 20, 5)]


PAIRS = {
    "threshold": (lambda: nm.IoU(threshold=0.3), lambda: nm.IoU(threshold=0.7), "perfect"),
    "beta2": (lambda: nm.FMeasure(beta2=0.3), lambda: nm.FMeasure(beta2=1.0), "degenerate"),
    "normalize": (lambda: nm.IoU(normalize=True), lambda: nm.IoU(normalize=False), "perfect"),
    "normalize-max": (lambda: nm.Precision("max", normalize=True), lambda: nm.Precision("max"), "perfect"),
    "empty_gt": (lambda: nm.IoU(empty_gt="agreement"), lambda: nm.IoU(empty_gt="reference"), "perfect"),
    "empty_gt-max": (lambda: nm.FMeasure(empty_gt="agreement"), lambda: nm.FMeasure(empty_gt="reference"), "perfect"),
    "chance": (lambda: nm.Kappa(chance="cohen"), lambda: nm.Kappa(chance="reference"), "perfect"),
    "chance-pooled": (lambda: nm.Kappa(chance="cohen", reduction="pooled"),
                      lambda: nm.Kappa(chance="reference", reduction="pooled"), "perfect"),
    "num_thresholds": (lambda: nm.Precision("max", num_thresholds=256), lambda: nm.Precision("max", num_thresholds=64),
                       "perfect"),
    "measure": (lambda: nm.Precision("max"), lambda: nm.Recall("max"), "degenerate"),
    "measure-binary": (lambda: nm.IoU(), lambda: nm.Dice(), "perfect"),
    "pooled-vs-mean": (lambda: nm.Precision(), lambda: nm.Precision(reduction="pooled"), "perfect"),
    "pooled-threshold": (lambda: nm.IoU(0.3, reduction="pooled"), lambda: nm.IoU(0.7, reduction="pooled"), "perfect"),
}


def _state_values(metric) -> list[tuple]:
    return sorted((tuple(v.shape), v.double().flatten().tolist()) for v in metric.metric_state.values())


@pytest.mark.parametrize("pair", PAIRS.values(), ids=PAIRS.keys())
def test_automatic_compute_groups_never_merge_different_statistics(pair):
    make_a, make_b, kind = pair
    first = _first_batch(kind)
    alone = {"a": make_a(), "b": make_b()}
    for metric in alone.values():
        metric.update(*first)
    shapes = [[shape for shape, _ in _state_values(metric)] for metric in alone.values()]
    if shapes[0] == shapes[1]:
        # after the first batch the two hold equal numbers: only the state names can keep them apart
        assert _state_values(alone["a"]) == _state_values(alone["b"])
    collection = MetricCollection({"a": make_a(), "b": make_b()})  # compute_groups=True: torchmetrics' detection
    collection.update(*first)
    assert sorted(sorted(group) for group in collection.compute_groups.values()) == [["a"], ["b"]]
    for batch in _later_batches():
        collection.update(*batch)
        for metric in alone.values():
            metric.update(*batch)
    values = collection.compute()
    for name, metric in alone.items():
        assert torch.equal(values[name], metric.compute()), name
    # the later batches tell the two apart (a wrong merge would have changed one of them)
    assert (_state_values(alone["a"]) != _state_values(alone["b"])
            or not torch.equal(values["a"], values["b"])), "the pair should differ on the later batches"


MERGING = {
    "precision-max-mean": {"max": lambda: nm.Precision("max"), "mean": lambda: nm.Precision("mean"),
                           "curve": lambda: nm.Precision("curve"),
                           "max-t03": lambda: nm.Precision("max", threshold=0.3)},
    "f-and-e": {"f_max": lambda: nm.FMeasure("max"), "f_adaptive": lambda: nm.FMeasure("adaptive"),
                "e_mean": lambda: nm.EMeasure("mean")},
    "binary": {"iou": lambda: nm.IoU(), "iou_mode": lambda: nm.IoU(mode="binary", beta2=1.0)},
    "auc": {"pr": lambda: nm.PRAUC(), "pr_options": lambda: nm.PRAUC(threshold=0.2, beta2=1.0, chance="reference")},
    "kappa-curve": {"max": lambda: nm.Kappa("max", threshold=0.1), "mean": lambda: nm.Kappa("mean")},
}


@pytest.mark.parametrize("members", MERGING.values(), ids=MERGING.keys())
def test_automatic_compute_groups_merge_equal_statistics(members):
    collection = MetricCollection({name: make() for name, make in members.items()})
    first = _first_batch("perfect")
    collection.update(*first)
    assert [sorted(group) for group in collection.compute_groups.values()] == [sorted(members)]
    alone = {name: make() for name, make in members.items()}
    for metric in alone.values():
        metric.update(*first)
    for batch in _later_batches():
        collection.update(*batch)
        for metric in alone.values():
            metric.update(*batch)
    values = collection.compute()
    for name, metric in alone.items():
        assert torch.equal(values[name], metric.compute()), name


# ---------------------------------------------------------------------------------------------------- make_collection


def _reference_key(name: str) -> tuple[str, str | None]:
    """FAMILY name -> (FmeasureV2 member, mode) or (AUC, None); ``None`` when PySODMetrics' FmeasureV2 has no such
    value."""
    fixed = {"iou_metric": ("iou", "binary"), "dice": ("dice", "binary"), "accuracy": ("accuracy", "binary"),
             "ber": ("ber", "binary"), "pr_auc": ("pr_auc", None), "roc_auc": ("roc_auc", None)}
    if name in fixed:
        return fixed[name]
    measure, mode = name.rsplit("_", 1)
    if measure == "e_measure":
        return None
    return {"f_measure": "fm"}.get(measure, measure), mode


def test_make_collection_of_the_whole_family():
    samples = _samples(4, 16)
    chunks = [samples[i : i + 5] for i in range(0, len(samples), 5)]
    collection = nm.make_collection(metrics=FAMILY, **PROTOCOL)
    for index, chunk in enumerate(chunks):
        collection.update(*[list(column) for column in zip(*chunk)])
        if index == 0:
            groups = [sorted(group) for group in collection.compute_groups.values()]
            assert sorted(FAMILY) in groups, groups
    values = collection.compute()
    assert sorted(values) == sorted(FAMILY)
    ref = _reference(4, 16)
    checked = 0
    for name in FAMILY:
        alone = nm.make_collection(metrics=[name], **PROTOCOL)
        for chunk in chunks:
            alone.update(*[list(column) for column in zip(*chunk)])
        assert torch.equal(values[name], alone.compute()[name]), name
        key = _reference_key(name)
        if key is None:
            continue
        member, mode = key
        expected = _auc(member, ref) if mode is None else ref[member][mode]
        diff = float(np.abs(values[name].numpy() - expected).max())
        assert diff <= ATOL, (name, values[name], expected)
        checked += 1
    assert checked == len(FAMILY) - 3  # all but the E-measure's three


# ---------------------------------------------------------------------------------------------------- -OO, plot


@pytest.mark.slow  # a fresh interpreter; with PYTHONDONTWRITEBYTECODE it recompiles torch under -OO (~10 s)
def test_import_under_python_OO():
    result = subprocess.run([sys.executable, "-OO", "-c", "import nobg_metrics; nobg_metrics.Precision('max')"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("make", [lambda: nm.Precision(mode="max"), lambda: nm.PRAUC(), lambda: nm.ROCAUC(),
                                  lambda: nm.FMeasure(), lambda: nm.Kappa(), lambda: nm.IoU(mode="curve")],
                         ids=["Precision-max", "PRAUC", "ROCAUC", "FMeasure", "Kappa-binary", "IoU-curve"])
def test_plot_returns_figure_and_axes(make):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = make()
    samples = _samples(5, 6)
    metric.update(*[list(column) for column in zip(*samples)])
    figure, axes = metric.plot()
    try:
        assert isinstance(figure, matplotlib.figure.Figure)
        assert axes is not None
        assert figure.axes, "nothing was drawn"
    finally:
        plt.close(figure)
    plt.close("all")
