"""The size-invariant classes: the shared tester against PySODMetrics, DDP, fixed-size states,
``SizeInvariant(metric)``, one compute group for many values, the registry entries, no host sync on the device paths,
``max_targets``."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import nobg_metrics as nm
from nobg_metrics import functional as F
from nobg_metrics.collection import make_collection, size_invariant_collection
from nobg_metrics.functional.sod import si_family
from nobg_metrics.functional.sod.size_invariance import SI_ENTRIES
from nobg_metrics.metrics.sod.size_invariance import SizeInvariantConfusion, SizeInvariantMAE
from nobg_metrics.ops import host_reads
from tests.helpers.ddp import check_ddp
from tests.helpers.syncs import HostSyncRecorder
from tests.helpers.tester import check_metric, saved
from tests.sod.test_size_invariance import reference_values, si_pairs

ATOL = 1e-12
PROTOCOL = {"normalize": True, "empty_gt": "reference"}
"""PySODMetrics' protocol on uint8 inputs."""

SI_REGISTRY = ("si_mae", "si_f_measure_max", "si_f_measure_mean", "si_f_measure_adaptive", "si_f_measure_max_overall",
               "si_iou_binary", "si_iou_pooled", "si_pr_auc", "si_roc_auc")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small images: thread start-up dominates, and the machine is shared
    yield
    torch.set_num_threads(threads)


@functools.cache
def _samples() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Multi-target uint8 pairs, without those whose boxes cover the image (the reference's SI-MAE is NaN there)."""
    pairs = si_pairs(2, shapes=[(37, 53), (1, 17), (5, 5), (33, 70), (64, 48)])
    pairs = [pair for pair in pairs if np.isfinite(reference_values([pair], normalize=True)["si_mae"])]
    return [(torch.from_numpy(p), torch.from_numpy(g)) for p, g in pairs]


@functools.cache
def _reference() -> dict:
    return reference_values([(p.numpy(), g.numpy()) for p, g in _samples()], normalize=True)


CASES = [  # (class factory kwargs, reference name, functional)
    (SizeInvariantMAE, {"normalize": True}, "si_mae", functools.partial(F.si_mae, normalize=True)),
    *[(SizeInvariantConfusion, {"measure": m, "mode": mode, "sample_based": sb, **PROTOCOL}, name,
       functools.partial(F.size_invariant, m, mode=mode, sample_based=sb, **PROTOCOL))
      for name, m, mode, sb in [("si_f_measure_max", "f_measure", "max", True),
                                ("si_kappa_adaptive", "kappa", "adaptive", True),
                                ("si_iou_pooled", "iou", "binary", False),
                                ("si_ber_mean_overall", "ber", "mean", False),
                                ("si_precision_curve_overall", "precision", "curve", False),
                                ("si_recall_curve", "recall", "curve", True),
                                ("si_pr_auc", "pr_auc", "max", True),
                                ("si_roc_auc_overall", "roc_auc", "max", False)]],
]


@pytest.mark.parametrize("cls, kwargs, name, function", CASES, ids=[case[2] for case in CASES])
def test_class_passes_the_shared_tester(cls, kwargs, name, function):
    expected = torch.as_tensor(np.asarray(_reference()[name]), dtype=torch.float64)
    check_metric(functools.partial(cls, **kwargs), _samples(), expected, functional=function, atol=ATOL)


def test_size_invariant_wraps_a_configured_metric():
    pred, gt = _samples()[3]
    pairs = [
        (nm.MAE(normalize=True), SizeInvariantMAE(normalize=True)),
        (nm.FMeasure("mean", beta2=1.0, **PROTOCOL),
         SizeInvariantConfusion("f_measure", "mean", beta2=1.0, **PROTOCOL)),
        (nm.IoU(0.3, reduction="pooled"), SizeInvariantConfusion("iou", "binary", threshold=0.3, sample_based=False)),
        (nm.Kappa("adaptive", **PROTOCOL), SizeInvariantConfusion("kappa", "adaptive", **PROTOCOL)),
        (nm.PRAUC(num_thresholds=64), SizeInvariantConfusion("pr_auc", num_thresholds=64)),
    ]
    for plain, expected in pairs:
        wrapped = nm.SizeInvariant(plain)
        assert isinstance(wrapped, nm.SizeInvariant) and type(wrapped) is type(expected)
        assert sorted(wrapped.metric_state) == sorted(expected.metric_state), type(plain).__name__
        assert torch.equal(wrapped(pred, gt), expected(pred, gt)), type(plain).__name__
    assert not nm.SizeInvariant(nm.Precision("max"), sample_based=False).sample_based
    with pytest.raises(TypeError, match="EMeasure"):
        nm.SizeInvariant(nm.EMeasure())
    with pytest.raises(ValueError, match="pooled"):
        nm.SizeInvariant(nm.Dice(reduction="pooled"), sample_based=True)
    assert nm.SizeInvariant(nm.FPR()).higher_is_better is False


def test_state_size_depends_on_neither_images_nor_targets():
    """Every state keeps its shape whatever the number of images and targets (no list states)."""
    collection = size_invariant_collection(**PROTOCOL)

    def shapes():
        return {name: (tuple(value.shape), value.dtype) for name, metric in collection.items(keep_base=True)
                for name, value in metric.metric_state.items()}

    first = shapes()
    pred, gt = _samples()[0]
    collection.update(pred, gt)
    assert shapes() == first
    many = torch.zeros(60, 240, dtype=torch.uint8)  # 100 targets in one image, then 30 images
    for i in range(5):
        for j in range(20):
            many[2 + 12 * i:10 + 12 * i, 2 + 12 * j:10 + 12 * j] = 255
    collection.update(many, many)
    collection.update([p for p, _ in _samples()], [g for _, g in _samples()])
    assert shapes() == first
    assert all(len(shape) <= 1 for shape, _ in first.values())


def test_one_compute_group_labels_each_batch_once(monkeypatch):
    names = ["si_mae", "si_f_measure_max", "si_iou_pooled", "si_pr_auc_overall", "si_kappa_adaptive"]
    collection = size_invariant_collection(names, **PROTOCOL)
    calls = []
    original = si_family.find_targets
    monkeypatch.setattr(si_family, "find_targets", lambda *a, **k: calls.append(1) or original(*a, **k))
    preds, gts = [p for p, _ in _samples()], [g for _, g in _samples()]
    collection.update(preds, gts)
    assert len(calls) == len({tuple(p.shape) for p in preds})  # one labelling per size group, for all members
    values = collection.compute()
    for name in names[1:]:
        measure, mode, sample_based = SI_ENTRIES[name]
        assert torch.equal(values[name], F.size_invariant(measure, preds, gts, mode, sample_based=sample_based,
                                                          **PROTOCOL)), name
    assert torch.equal(values["si_mae"], F.si_mae(preds, gts, normalize=True))


def test_registry_entries_equal_the_functions():
    preds, gts = [p for p, _ in _samples()], [g for _, g in _samples()]
    collection = make_collection(metrics=list(SI_REGISTRY), **PROTOCOL)
    collection.update(preds, gts)
    values = collection.compute()
    expected = F.size_invariant_values(preds, gts, list(SI_REGISTRY[1:]), **PROTOCOL)
    expected["si_mae"] = F.si_mae(preds, gts, normalize=True)
    for name in SI_REGISTRY:
        assert torch.equal(values[name], expected[name]), name
        assert abs(values[name].item() - _reference()[name]) <= ATOL, name


def test_every_value_of_one_group_makes_no_host_sync_on_the_device_paths(monkeypatch):
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    collection = size_invariant_collection(validate_args=False)
    pred, gt = torch.rand(2, 1, 12, 30, dtype=torch.float64), torch.rand(2, 1, 12, 30) > 0.6
    collection.update(pred, gt)
    with HostSyncRecorder() as recorder:
        collection.update(pred, gt)
    assert not recorder.hits, recorder.hits


def test_too_many_targets_on_the_device_path_raise_at_compute(monkeypatch):
    gt = torch.zeros(12, 60, dtype=torch.bool)
    for j in range(5):
        gt[2:10, 2 + 11 * j:10 + 11 * j] = True  # five 64-px targets
    pred = gt.double() * 0.7
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    for metric in (SizeInvariantMAE(max_targets=4), SizeInvariantConfusion("dice", "binary", max_targets=4)):
        metric.update(pred, gt)
        metric.update(pred[:6], gt[:6])  # the top half: five tied 32-px components, all of them targets
        assert int(metric.metric_state[next(n for n in metric.metric_state if n.endswith("overflow"))]) == 2
        with pytest.raises(ValueError, match=r"2 image\(s\) had more targets than `max_targets`=4"):
            metric.compute()
    roomy = SizeInvariantMAE(max_targets=5)
    roomy.update(pred, gt)
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: tensor.device.type == "cpu")
    cpu = F.si_mae(pred, gt, max_targets=1)  # the CPU path has no bound
    assert abs(roomy.compute().item() - cpu.item()) <= 1e-15


def test_options_are_fingerprinted():
    with pytest.raises(ValueError, match="other options"):
        SizeInvariantMAE(max_targets=64).load_state_dict(saved(SizeInvariantMAE()))
    with pytest.raises(ValueError, match="other options"):
        SizeInvariantConfusion("iou", "binary", threshold=0.3).load_state_dict(
            saved(SizeInvariantConfusion("iou", "binary")))
    same = [sorted(SizeInvariantConfusion("precision", mode).metric_state) for mode in ("max", "mean")]
    assert same[0] != same[1]  # different statistics, different state names
    # never the plain ones
    assert not set(SizeInvariantConfusion("iou", "binary").metric_state) & set(nm.IoU().metric_state)
    with pytest.raises(ValueError, match="adaptive mode is per sample"):
        SizeInvariantConfusion("recall", "adaptive", sample_based=False)


@pytest.mark.slow
def test_size_invariant_classes_under_ddp():
    make = functools.partial(size_invariant_collection, ["si_mae", "si_f_measure_max", "si_iou_pooled",
                                                         "si_precision_mean_overall", "si_roc_auc", "si_dice_adaptive"],
                             **PROTOCOL)
    check_ddp(make, _samples(), atol=ATOL)
