"""make_collection: cumulative tiers with the exact keys, options routed, explicit compute groups, and
values equal to the metrics run one by one, whatever the batching, after a state_dict round trip and
on 2 gloo ranks."""

from __future__ import annotations

import inspect

import pytest
import torch

import nobg_metrics as nm
from nobg_metrics.collection import TIERS
from tests.helpers.ddp import run_ddp

CHEAP = ["mae", "iou_metric", "dice", "accuracy", "ber", "sad", "mse_metric", "boundary_iou"]
MEDIUM = [*CHEAP, "f_measure_max", "f_measure_mean", "f_measure_adaptive", "e_measure_max", "e_measure_mean",
          "e_measure_adaptive", "gradient_error", "trimap_iou", "boundary_f_measure"]
EXPENSIVE = [*MEDIUM, "s_measure", "weighted_f_measure", "connectivity_error", "msiou_max", "msiou_mean",
             "context_measure", "hce"]


def samples(count: int = 7, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    out = []
    for index in range(count):
        h, w = (17, 23) if index % 3 else (12, 9)
        gt = (torch.rand(h, w, generator=generator) > 0.6).to(torch.uint8) * 255
        pred = (gt.float() * 0.7 + torch.rand(h, w, generator=generator) * 80).clamp(0, 255).to(torch.uint8)
        trimap = torch.full((h, w), 128, dtype=torch.uint8)
        trimap[0] = 0
        out.append((pred, gt, trimap))
    return out


def update_all(collection, chunk):
    preds, gts, trimaps = (list(column) for column in zip(*chunk))
    collection.update(preds, gts, trimap=trimaps)


def test_tiers_are_cumulative_with_exact_keys():
    assert list(TIERS["cheap"]) == CHEAP and list(TIERS["medium"]) == MEDIUM and list(TIERS["expensive"]) == EXPENSIVE
    keys = list(nm.make_collection("medium", prefix="val/", postfix="_x").keys())
    assert sorted(keys) == sorted(f"val/{n}_x" for n in MEDIUM) and len(keys) == len(MEDIUM)


def test_options_reach_the_metrics_that_take_them():
    collection = nm.make_collection("expensive", normalize=True, empty_gt="reference", threshold=0.3)
    assert collection["iou_metric"].threshold == 0.3 and collection["mae"].normalize
    assert collection["f_measure_max"].empty_gt == "reference"
    with pytest.raises(TypeError, match="taken by no metric"):
        nm.make_collection("cheap", bogus=1)
    with pytest.raises(ValueError, match="`tier`"):
        nm.make_collection("free")


def test_compute_groups_are_explicit():
    groups = [sorted(group) for group in nm.make_collection("expensive").compute_groups.values()]
    # the whole confusion family (overlap + F/E) in one group, one statistics pass per batch
    assert sorted(["accuracy", "ber", "dice", "iou_metric", *MEDIUM[8:14]]) in groups
    assert sorted(["mse_metric", "sad"]) in groups
    assert sorted(["msiou_max", "msiou_mean"]) in groups
    assert len(groups) == len(EXPENSIVE) - 10 - 2 - 2 + 3


@pytest.mark.slow
def test_expensive_collection_equals_metrics_one_by_one_whatever_the_batching():
    data = samples()
    options = {"normalize": True}
    whole = nm.make_collection("expensive", **options)
    update_all(whole, data)
    values = whole.compute()
    for name, metric in nm.make_collection("expensive", **options).items():
        preds, gts, trimaps = (list(column) for column in zip(*data))
        if "trimap" in inspect.signature(metric.update).parameters:
            metric.update(preds, gts, trimap=trimaps)
        else:
            metric.update(preds, gts)
        assert abs(metric.compute().item() - values[name].item()) <= 1e-9, name
    piecewise = nm.make_collection("expensive", **options)
    update_all(piecewise, data[:3])
    resumed = nm.make_collection("expensive", **options)
    piecewise.persistent(True)  # a collection's switch: every member's states in the state_dict
    resumed.load_state_dict(piecewise.state_dict())
    for index in range(3, len(data)):
        update_all(resumed, data[index:index + 1])
    for name, value in resumed.compute().items():
        assert abs(value.item() - values[name].item()) <= 1e-9, name


def _collection_worker(rank, world_size, shares):
    collection = nm.make_collection("expensive", normalize=True)
    if shares[rank]:
        update_all(collection, shares[rank])
    return {key: value.item() for key, value in collection.compute().items()}


@pytest.mark.slow
def test_expensive_collection_on_two_ranks_equals_one_process():
    data = samples(5, seed=3)
    single = nm.make_collection("expensive", normalize=True)
    update_all(single, data)
    expected = {key: value.item() for key, value in single.compute().items()}
    for shares in ([data[:2], data[2:]], [[], data]):
        for result in run_ddp(_collection_worker, 2, shares):
            for key, value in expected.items():
                assert abs(result[key] - value) <= 1e-6, (key, shares)


def test_metric_tracker_picks_the_best_epoch_by_higher_is_better():
    from torchmetrics.wrappers import MetricTracker

    # maximize=None: inferred from each member's higher_is_better (torchmetrics
    # 1.6 defaults to maximize=True, 1.7 on to None)
    tracker = MetricTracker(
        nm.make_collection("cheap", metrics=["mae", "iou_metric"]), maximize=None
    )
    gt = torch.zeros(1, 8, 8)
    gt[:, 2:6, 2:6] = 1
    for noise in (0.4, 0.1, 0.3):
        tracker.increment()
        tracker.update((gt * (1 - noise) + noise / 2).clamp(0, 1), gt)
    best, step = tracker.best_metric(return_step=True)
    assert step["mae"] == 1 and step["iou_metric"] in (0, 1, 2)
    assert best["mae"] == pytest.approx(0.05)


def test_every_metric_plots_a_figure():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    collection = nm.make_collection("expensive")
    update_all(collection, samples(2))
    for name, metric in collection.items():
        figure, _ = metric.plot()
        assert figure is not None, name
        plt.close(figure)
