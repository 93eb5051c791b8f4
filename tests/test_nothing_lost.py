"""Nothing lost, nothing silent: rejected batches change no state (update, forward, collections), compute with
no accepted image warns, states load only into a metric of the same configuration, errors name list elements,
meta tensors are refused, and Boundary IoU's memory does not grow with the aspect ratio."""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings

import pytest
import torch
from torchmetrics import MetricCollection

import nobg_metrics as nm
from nobg_metrics.catalog import descriptor
from nobg_metrics.collection import METRIC_NAMES, make_collection, metric_class
from tests.helpers.tester import saved


def _pair(seed: int = 0, size=(2, 1, 24, 30)):
    generator = torch.Generator().manual_seed(seed)
    pred = torch.rand(size, generator=generator)
    return pred, (torch.rand(size, generator=generator) > 0.5).float()


def _states(metric) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in metric.metric_state.items()}


def _same(before: dict, metric) -> bool:
    return all(torch.equal(before[name], value) for name, value in metric.metric_state.items())


def _bad_pred():
    pred, _ = _pair()
    pred[1, 0, 3, 4] = float("nan")
    return pred


def _bad_batches(pred: torch.Tensor, gt: torch.Tensor, arguments: dict, uint8: bool) -> list[tuple]:
    """``(pred, gt, arguments, message)`` batches every metric must reject: a NaN prediction (a float range error; for
    8-bit-only metrics a prediction one column wider than its gt instead), a prediction and gt of different
    shapes, and a list whose second element is bad (out of range, or for 8-bit-only metrics one column wider)."""
    wider = torch.cat([pred, pred[..., :1]], dim=-1)
    as_list = {key: list(value) for key, value in arguments.items()}  # (B, C, H, W) -> B tensors (C, H, W)
    second = wider[1] if uint8 else pred[1] * 3
    return [(wider if uint8 else _bad_pred(), gt, arguments, "shape" if uint8 else r"`pred` must be finite"),
            (wider, gt, arguments, "shape"),
            ([pred[0], second], list(gt), as_list, r"pred`?\[1\]")]


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_a_rejected_batch_changes_nothing_through_update_and_forward(name):
    metric = make_collection(metrics=[name])[name]
    pred, gt = _pair()
    trimap = torch.where(gt > 0.5, 1.0, 0.0)
    trimap[:, :, 8:16] = 0.5  # known foreground, background and an unknown band: every region is non-empty
    uint8 = descriptor(name).uint8_only
    if uint8:  # PNG bytes
        pred, gt = (pred * 255).to(torch.uint8), (gt * 255).to(torch.uint8)
    parameters = inspect.signature(metric.update).parameters
    arguments = {"trimap": trimap} if "trimap" in parameters else {}
    if "image" in parameters:  # CCm's RGB images
        arguments["image"] = torch.randint(0, 256, (pred.shape[0], 3, *pred.shape[-2:]), dtype=torch.uint8,
                                           generator=torch.Generator().manual_seed(3))
    metric.update(pred, gt, **arguments)
    before, count, value = _states(metric), metric.update_count, metric.compute()
    for bad, bad_gt, bad_arguments, message in _bad_batches(pred, gt, arguments, uint8):
        for call in (metric.update, metric.forward):
            with pytest.raises(ValueError, match=message):
                call(bad, bad_gt, **bad_arguments)
            assert _same(before, metric) and metric.update_count == count, (call.__name__, message)
    assert torch.equal(metric.compute(), value)


def test_a_collection_rejects_a_batch_whole_even_when_only_the_last_member_reads_the_bad_argument():
    collection = make_collection("expensive")
    pred, gt = _pair()
    collection.update(pred, gt)
    collection.update(pred, gt)
    members = dict(collection.items(keep_base=True))
    before = {name: (_states(member), member.update_count) for name, member in members.items()}
    trimap = torch.full_like(pred, 0.5)
    trimap[0, 0, 0, 0] = 0.3
    for call in (collection.update, collection.forward):
        with pytest.raises(ValueError, match="trimap"):
            call(pred, gt, trimap=trimap)
        for name, member in members.items():
            assert _same(before[name][0], member) and member.update_count == before[name][1], (call.__name__, name)
    # the compute groups still share one update afterwards
    collection.update(pred, gt)
    alone = nm.IoU()
    for _ in range(3):
        alone.update(pred, gt)
    assert torch.equal(collection.compute()["iou_metric"], alone.compute())
    assert members["dice"].update_count == members["iou_metric"].update_count == 3


def test_compute_after_only_rejected_updates_warns_and_is_nan():
    metric = nm.MAE()
    with pytest.raises(ValueError):
        metric.update(_bad_pred(), _pair()[1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = metric.compute()
    assert torch.isnan(value) and any("before the ``update``" in str(w.message) for w in caught)


def test_state_dicts_load_only_into_the_same_configuration():
    with pytest.raises(ValueError, match="other options"):
        nm.FMeasure().load_state_dict(saved(nm.FMeasure(num_thresholds=64)))
    with pytest.raises(ValueError, match="other options"):
        nm.IoU(0.5).load_state_dict(saved(nm.IoU(0.3)))
    float32 = {key: value.float() if value.is_floating_point() else value
               for key, value in saved(nm.MAE()).items()}
    with pytest.raises(ValueError, match=r"`mae_sum` of this MAE must be a torch.float64 tensor"):
        nm.MAE().load_state_dict(float32)
    state = saved(nm.SMeasure())
    state.pop("smeasure_count")
    with pytest.raises(ValueError, match="has no `smeasure_count`"):
        nm.SMeasure().load_state_dict(state)
    source = nm.Precision("max")
    source.update(*_pair())
    target = nm.Precision("max")
    target.load_state_dict(saved(source))
    assert torch.equal(target.compute(), source.compute())


def test_errors_name_the_list_element():
    preds = [torch.rand(5, 6), torch.rand(5, 6), torch.rand(4, 4)]
    gts = [torch.rand(5, 6) > 0.5, torch.rand(5, 6) > 0.5, torch.rand(4, 4) > 0.5]
    preds[2][0, 0] = 1.5
    with pytest.raises(ValueError, match=r"`pred\[2\]` float values must lie in \[0, 1\]"):
        nm.functional.mae(preds, gts)
    with pytest.raises(TypeError, match=r"`gt\[1\]`"):
        nm.functional.iou_metric(preds[:2], [gts[0], gts[1].int()])
    trimaps = [torch.full((5, 6), 0.5), torch.full((5, 6), 0.7)]
    with pytest.raises(ValueError, match=r"`trimap\[1\]` values"):
        nm.functional.sad(preds[:2], [g.float() for g in gts[:2]], trimaps)


@pytest.mark.parametrize("validate_args", [True, False])
def test_meta_tensors_are_refused_up_front(validate_args):
    pred = torch.empty(1, 1, 8, 8, device="meta")
    for name in ("mae", "connectivity_error", "f_measure_max"):
        metric = metric_class(name)(validate_args=validate_args)
        with pytest.raises(ValueError, match="meta device"):
            metric.update(pred, pred)
        assert metric.update_count == 0


def test_automatic_compute_groups_of_a_users_collection_never_merge_different_options():
    pred, gt = _pair()
    hard = (pred > 0.5).float()
    pairs = {"iou": (nm.IoU(threshold=0.3), nm.IoU(threshold=0.7)), "s": (nm.SMeasure(), nm.SMeasure(alpha=0.3)),
             "mae": (nm.MAE(), nm.MAE(normalize=True)), "wf": (nm.WeightedFMeasure(), nm.WeightedFMeasure(beta2=0.3)),
             "biou": (nm.BoundaryIoU(), nm.BoundaryIoU(dilation_pixels=1))}
    for key, (first, second) in pairs.items():
        collection = MetricCollection({"a": first, "b": second})
        alone = (first.clone(), second.clone())
        for batch in ((hard, gt), (pred, gt)):
            collection.update(*batch)
            for metric in alone:
                metric.update(*batch)
        values = collection.compute()
        assert torch.equal(values["a"], alone[0].compute()) and torch.equal(values["b"], alone[1].compute()), key


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1, 1_000_000), (1_000_000, 1)])
def test_boundary_iou_memory_does_not_grow_with_the_aspect_ratio(shape):
    script = f"""
import resource, torch, nobg_metrics as nm
pred, gt = torch.rand(1, 1, *{shape}), torch.rand(1, 1, *{shape}) > 0.5
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
metric = nm.BoundaryIoU()
metric.update(pred, gt)
assert 0 < float(metric.compute()) < 1
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""
    used = float(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout)
    assert used < 200, f"{used:.0f} MiB"


def test_a_plain_metric_collection_counts_half_a_batch_that_make_collection_rejects_whole():
    """docs/training.md's example: the reason to prefer make_collection (or NobgCollection)."""
    pred, gt = _pair()
    bad_trimap = torch.full_like(pred, 0.3)  # no trimap level: only SAD reads it
    plain = MetricCollection({"mae": nm.MAE(), "sad": nm.SAD()})
    ours = make_collection(metrics=["mae", "sad"])
    for collection in (plain, ours):
        with pytest.raises(ValueError, match="trimap"):
            collection.update(pred, gt, trimap=bad_trimap)
    assert plain["mae"].update_count == 1 and ours["mae"].update_count == 0


def test_a_list_state_added_without_a_layout_refuses_a_non_tensor_record_with_a_value_error():
    from nobg_metrics.metrics.base import NobgMetric

    class Records(NobgMetric):
        def __init__(self) -> None:
            super().__init__()
            self.add_state("records", default=[], dist_reduce_fx="cat", persistent=True)  # no _add_list layout

    with pytest.raises(ValueError, match=r"`records` of this Records must be a list of tensors; .* holds str"):
        Records().load_state_dict({"records": ["not a tensor"]})
