"""PanopticQuality as a Metric: fixed-size integer state, any batching bit-identical, reset / pickle / clone /
state_dict / merge_state / forward, a rejected batch changes nothing, options and input errors named, and
torchmetrics' tensor layout (equal to torchmetrics where the two tools agree, different where they do not)."""

from __future__ import annotations

import pickle

import pytest
import torch
from torchmetrics.detection import PanopticQuality as TorchmetricsPQ

from nobg_metrics import PanopticQuality
from nobg_metrics.functional import panoptic_quality
from tests.panoptic.helpers import COCO, scenes
from tests.panoptic.scenes import STUFFS, THINGS


def _metric(iou_type: str = "boundary", **options) -> PanopticQuality:
    return PanopticQuality(THINGS, STUFFS, iou_type=iou_type, allow_unknown_preds_category=True, **COCO, **options)


SMALL = ((40, 52), (23, 31), (1, 29), (31, 9), (40, 52))
"""Small scenes (the first and last of one size): the class checks repeat many updates."""


def _forms():
    return [item[1:] for item in scenes(1, SMALL, 5)]


def _update(metric, forms):
    metric.update([f[0] for f in forms], [f[1] for f in forms], [f[2] for f in forms])
    return metric


def _same(first: dict, second: dict, what: str) -> None:
    for name, value in first.items():
        assert torch.equal(value, second[name]), f"{what}: {name}"


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_any_batching_gives_bit_identical_values(iou_type):
    forms = _forms()
    value = _update(_metric(iou_type), forms).compute()
    one_by_one = _metric(iou_type)
    for form in forms:
        _update(one_by_one, [form])
    _same(one_by_one.compute(), value, "image by image")
    stacked = _metric(iou_type)  # the first and last scene have one size: a (2, H, W, 2) tensor batch
    pair = [forms[0], forms[-1]]
    stacked.update(torch.stack([f[0] for f in pair]), torch.stack([f[1] for f in pair]),
                   torch.stack([f[2] for f in pair]))
    _update(stacked, forms[1:-1])
    _same(stacked.compute(), value, "stacked tensors")


def test_state_is_fixed_size_integer_and_survives_every_round_trip():
    forms = _forms()
    half = len(forms) // 2
    value = _update(_metric(), forms).compute()
    first = _update(_metric(), forms[:half])
    for name in ("iou_sum_high", "iou_sum_low", "true_positives", "false_positives", "false_negatives"):
        state = getattr(first, name)
        assert state.dtype == torch.int64 and state.shape == (len(THINGS) + len(STUFFS),), name
    shapes = {name: tuple(t.shape) for name, t in first.metric_state.items()}
    _update(first, forms[half:])
    assert {name: tuple(t.shape) for name, t in first.metric_state.items()} == shapes  # no growth
    first = _update(_metric(), forms[:half])
    for name, restore in (("pickle", lambda m: pickle.loads(pickle.dumps(m))), ("clone", lambda m: m.clone())):
        _same(_update(restore(first), forms[half:]).compute(), value, name)
    loaded = _metric()
    first.persistent(True)  # states are not persistent by default (as torchmetrics'): a mid-epoch resume asks
    loaded.load_state_dict(first.state_dict())
    _same(_update(loaded, forms[half:]).compute(), value, "state_dict")
    merged = _update(_metric(), forms[:half])
    merged.merge_state(_update(_metric(), forms[half:]))
    _same(merged.compute(), value, "merge_state")
    reset = _update(_metric(), forms)
    reset.reset()
    _same(_update(reset, forms).compute(), value, "reset")


def test_forward_returns_the_batch_value_and_accumulates():
    forms = _forms()[:3]
    metric = _metric()
    for form in forms:
        batch_value = metric([form[0]], [form[1]], [form[2]])
        _same(batch_value, panoptic_quality([form[0]], [form[1]], THINGS, STUFFS, iscrowd=[form[2]],
                                            iou_type="boundary", allow_unknown_preds_category=True, **COCO),
              "forward")
    _same(metric.compute(), _update(_metric(), forms).compute(), "forward accumulation")


def test_a_rejected_batch_changes_nothing():
    forms = _forms()
    metric = _update(_metric(), forms[:2])
    before = {name: value.clone() for name, value in metric.metric_state.items()}
    count = metric._update_count
    good, bad = forms[0], forms[1]
    for call in (metric.update, metric.forward):
        with pytest.raises(ValueError):  # the second image's prediction has the wrong size
            call([good[0], good[0]], [good[1], bad[1]])
        with pytest.raises(ValueError, match="neither things nor stuffs"):
            PanopticQuality(THINGS, STUFFS).update([good[0]], [good[1]])  # category 0 in the prediction
        assert metric._update_count == count
        for name, value in metric.metric_state.items():
            assert torch.equal(value, before[name]), name


def test_input_errors_name_the_argument():
    image = torch.zeros(4, 5, 2, dtype=torch.long)
    image[..., 0] = 12
    metric = PanopticQuality(THINGS, STUFFS)
    with pytest.raises(ValueError, match=r"Expected argument `preds` and `target` to have the same shape, but got "
                                         r"\(4, 5, 2\) and \(1, 4, 5, 2\)"):
        metric.update(image, image[None])
    with pytest.raises(ValueError, match=r"Expected argument `target\[0\]` to have exactly 2 channels in the last "
                                         r"dimension"):
        metric.update([image], [image[..., :1]])
    with pytest.raises(TypeError, match=r"`preds\[0\]` must be an integer tensor"):
        metric.update([image.float()], [image])
    with pytest.raises(TypeError, match="all be tensors or all be lists"):
        metric.update(image[None], [image])
    with pytest.raises(ValueError, match="same length"):
        metric.update([image, image], [image])
    with pytest.raises(ValueError, match=r"`iscrowd\[0\]` must have shape \(1, 4, 5\)"):
        metric.update([image], [image], [torch.zeros(5, 4, dtype=torch.bool)])
    with pytest.raises(TypeError, match=r"`iscrowd\[0\]` must be a bool tensor"):
        metric.update([image], [image], [torch.zeros(4, 5)])
    thing = image.clone()
    thing[0, 0] = torch.tensor([1, 2**31])
    with pytest.raises(ValueError, match=r"`preds\[0\]` thing instance ids must lie in \[0, 2\^31\), got 2147483648"):
        metric.update(thing[None], image[None])
    crowd = torch.zeros(1, 4, 5, dtype=torch.bool)
    crowd[0, 0, 0] = True  # one pixel of the stuff segment
    with pytest.raises(ValueError, match=r"`iscrowd\[0\]` marks only part of the gt segment \(category 12"):
        metric.update(image[None], image[None], crowd)
    unknown = image.clone()
    unknown[1, 2, 0] = 99
    with pytest.raises(ValueError, match=r"`preds\[0\]` holds category ids that are neither things nor stuffs: \[99\] "
                                         r"\(first at pixel \(1, 2\)\)"):
        metric.update(unknown[None], image[None])
    assert metric._update_count == 0


def test_options_are_checked_at_construction():
    with pytest.raises(ValueError, match="`iou_type` must be one of"):
        PanopticQuality({1}, {2}, iou_type="bbox")
    with pytest.raises(ValueError, match="disjoint"):
        PanopticQuality({1, 2}, {2})
    with pytest.raises(TypeError, match="int category ids"):
        PanopticQuality({1.5}, {2})
    with pytest.raises(ValueError, match="both empty"):
        PanopticQuality(set(), set())
    with pytest.raises(ValueError, match="output='tensor'"):
        PanopticQuality({1}, {2}, output="dict", return_per_class=True)
    with pytest.raises(TypeError, match="`allow_unknown_preds_category` must be a bool"):
        PanopticQuality({1}, {2}, allow_unknown_preds_category=1)
    with pytest.raises(ValueError, match="`dilation_ratio` must be >= 0"):
        PanopticQuality({1}, {2}, iou_type="boundary", dilation_ratio=-0.1)
    with pytest.raises(ValueError, match="`engine` must be one of"):
        PanopticQuality({1}, {2}, engine="gpu")


def test_category_order_orders_the_per_class_values_only():
    forms = _forms()
    default = _update(_metric("segm"), forms).compute()
    order = [*sorted(STUFFS, reverse=True), *sorted(THINGS)]
    ordered = _update(_metric("segm", category_order=order), forms).compute()
    assert ordered["classes"].tolist() == order
    position = [default["classes"].tolist().index(category) for category in order]
    for name in ("pq_per_class", "sq_per_class", "rq_per_class"):
        assert torch.equal(ordered[name], default[name][position]), name
    for name in ("pq", "sq", "rq", "pq_things", "pq_stuff"):
        assert torch.allclose(ordered[name], default[name], rtol=0, atol=1e-15), name
    with pytest.raises(ValueError, match="`category_order` must hold every id of `things` and `stuffs` once"):
        PanopticQuality({1, 3}, {2}, category_order=[1, 2])
    with pytest.raises(TypeError, match="`category_order` must be a sequence"):
        PanopticQuality({1, 3}, {2}, category_order={1, 2, 3})


def _without_pred_void(forms):
    """The scenes with prediction void painted as stuff 12 and no crowd: where torchmetrics and panopticapi agree."""
    out = []
    for preds, target, _ in forms:
        preds = preds.clone()
        void = ~torch.isin(preds[..., 0], torch.tensor(sorted(THINGS | STUFFS)))
        preds[void] = torch.tensor([12, 0])
        out.append((preds, target))
    return out


@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True), (True, True)])
def test_the_tensor_layout_is_torchmetrics_where_the_tools_agree(flags):
    """No crowd and no prediction void: the same matches, FPs and FNs; values within torchmetrics' float32."""
    sq_rq, per_class = flags
    forms = _without_pred_void([_forms()[i] for i in (0, 1, 3)])
    ours = PanopticQuality(THINGS, STUFFS, output="tensor", return_sq_and_rq=sq_rq, return_per_class=per_class)
    theirs = TorchmetricsPQ(THINGS, STUFFS, return_sq_and_rq=sq_rq, return_per_class=per_class)
    for preds, target in forms:
        ours.update(preds[None], target[None])
        theirs.update(preds[None], target[None])
    expected = theirs.compute()
    got = ours.compute()
    assert got.shape == expected.shape
    for name in ("true_positives", "false_positives", "false_negatives"):  # the matching agrees exactly
        assert torch.equal(getattr(ours, name), getattr(theirs, name).long()), name
    # torchmetrics divides int64 areas into float32 IoUs (then sums them in float64): 1e-7 relative
    assert torch.allclose(got, expected, atol=1e-6, rtol=0)


def test_torchmetrics_differs_with_crowd_and_prediction_void():
    """Documented (docs/panoptic.md): torchmetrics has no crowd, subtracts the gt's pixels on prediction void
    from the union and drops the FNs mostly on prediction void."""
    forms = _forms()[:4]
    ours = PanopticQuality(THINGS, STUFFS, output="tensor", allow_unknown_preds_category=True, rules="panopticapi")
    theirs = TorchmetricsPQ(THINGS, STUFFS, allow_unknown_preds_category=True)
    for preds, target, crowd in forms:
        ours.update(preds[None], target[None], crowd[None])
        theirs.update(preds[None], target[None])
    assert abs(float(ours.compute()) - float(theirs.compute())) > 1e-6
