"""PanopticQuality / ModifiedPanopticQuality and their functions as drop-ins for torchmetrics 1.9's: the same positional
arguments, the same tensor output (shape, dtype, NaN) for every flag, inputs of any spatial rank, the same errors;
values side by side with torchmetrics' classes on generated scenes.

Tolerance: torchmetrics divides int64 areas into **float32** IoUs (and its RQ is float32), ours are float64, so
against its classes the counts (TP / FP / FN) are asserted equal and the values within 1e-6. Against torchmetrics'
own code run in float64 (its areas as float64, its counts as float64 in ``compute``) the values agree within 1e-12.
"""

from __future__ import annotations

import inspect
import itertools
import math
import re

import pytest
import torch
import torchmetrics.functional.detection._panoptic_quality_common as tm_common
from torchmetrics.detection import ModifiedPanopticQuality as TmModified
from torchmetrics.detection import PanopticQuality as TmPQ
from torchmetrics.functional.detection import modified_panoptic_quality as tm_modified_fn
from torchmetrics.functional.detection import panoptic_quality as tm_pq_fn

from nobg_metrics import ModifiedPanopticQuality, PanopticQuality
from nobg_metrics.functional import modified_panoptic_quality, panoptic_quality

THINGS, STUFFS = {0, 1, 4}, {6, 7, 9}
COUNTS = ("true_positives", "false_positives", "false_negatives")
FLAGS = list(itertools.product([False, True], repeat=2))
SPATIAL = [(97,), (23, 31), (6, 9, 11), (3, 4, 5, 6)]
"""Point clouds, images, volumes and a 4-D grid."""


def _blocks(generator: torch.Generator, spatial: tuple[int, ...], high: int, low: int = 0) -> torch.Tensor:
    """A random coarse grid of values in [low, high), upsampled by 1-4 per axis and cropped to ``spatial``."""
    factors = [int(torch.randint(1, 5, (1,), generator=generator)) for _ in spatial]
    coarse = torch.randint(low, high, tuple(math.ceil(s / f) for s, f in zip(spatial, factors)), generator=generator)
    for axis, factor in enumerate(factors):
        coarse = coarse.repeat_interleave(factor, dim=axis)
    return coarse[tuple(slice(0, s) for s in spatial)]


def _scene(seed: int, spatial: tuple[int, ...], batch: int = 2, unknown: bool = True):
    """``(preds, target)`` of shape ``(batch, *spatial, 2)``: blocky segments of known and (in the target: void,
    with ``unknown`` also in the predictions) unknown categories; the prediction is the target with blocks
    relabelled, instances split and merged, and scattered points changed."""
    generator = torch.Generator().manual_seed(seed)
    known = sorted(THINGS | STUFFS)
    targets, preds = [], []
    for _ in range(batch):
        category = torch.tensor([*known, 2, 3])[_blocks(generator, spatial, len(known) + 2)]  # 2, 3: void
        target = torch.stack([category, _blocks(generator, spatial, 3)], dim=-1)
        pred = target.clone()
        changed = _blocks(generator, spatial, 4) == 0
        pred[..., 0][changed] = torch.tensor(known)[_blocks(generator, spatial, len(known))][changed]
        pred[..., 1][_blocks(generator, spatial, 3) == 0] += 1
        noise = torch.rand(spatial, generator=generator) < 0.05
        pred[..., 0][noise] = torch.tensor(known)[torch.randint(0, len(known), spatial, generator=generator)][noise]
        pred[..., 0][~torch.isin(pred[..., 0], torch.tensor(known))] = known[0]
        if unknown:  # prediction void: unknown categories
            pred[..., 0][_blocks(generator, spatial, 5) == 0] = 11
        targets.append(target)
        preds.append(pred)
    return torch.stack(preds), torch.stack(targets)


def _float64_torchmetrics(monkeypatch, metric, batches):
    """torchmetrics' own metric run with its areas (so its IoUs) and, in ``compute``, its counts in float64."""
    original = tm_common._get_color_areas
    monkeypatch.setattr(tm_common, "_get_color_areas",
                        lambda inputs: {key: area.double() for key, area in original(inputs).items()})
    for preds, target in batches:
        metric.update(preds, target)
    monkeypatch.undo()
    for name in COUNTS:
        setattr(metric, name, getattr(metric, name).double())
    return metric.compute()


def _positional(function) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()
            if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.name != "self"]


@pytest.mark.parametrize(("ours", "theirs"), [(PanopticQuality.__init__, TmPQ.__init__),
                                              (ModifiedPanopticQuality.__init__, TmModified.__init__),
                                              (panoptic_quality, tm_pq_fn),
                                              (modified_panoptic_quality, tm_modified_fn)])
def test_the_positional_arguments_are_torchmetrics(ours, theirs):
    assert _positional(ours) == _positional(theirs)
    keyword_only = {p.name for p in inspect.signature(ours).parameters.values()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert {"iou_type", "dilation_ratio", "output", "rules", "category_order", "engine"} <= keyword_only


@pytest.mark.parametrize("spatial", SPATIAL)
@pytest.mark.parametrize(("sq_rq", "per_class"), FLAGS)
def test_the_class_equals_torchmetrics_for_every_flag_and_rank(spatial, sq_rq, per_class, monkeypatch):
    batches = [_scene(seed, spatial) for seed in range(3)]
    ours = PanopticQuality(THINGS, STUFFS, True, sq_rq, per_class)
    theirs = TmPQ(THINGS, STUFFS, True, sq_rq, per_class)
    for preds, target in batches:
        ours.update(preds, target)
        theirs.update(preds, target)
    got, expected = ours.compute(), theirs.compute()
    assert got.shape == expected.shape and got.dtype == expected.dtype == torch.float64
    for name in COUNTS:  # the same matches, FPs and FNs
        assert torch.equal(getattr(ours, name), getattr(theirs, name).long()), name
    assert torch.allclose(got, expected, rtol=0, atol=1e-6)  # torchmetrics' float32 IoUs (module notes)
    exact = _float64_torchmetrics(monkeypatch, TmPQ(THINGS, STUFFS, True, sq_rq, per_class), batches)
    assert torch.allclose(got, exact, rtol=0, atol=1e-12)
    coco = PanopticQuality(THINGS, STUFFS, True, rules="panopticapi")
    for preds, target in batches:
        coco.update(preds, target)
    assert int(ours.true_positives.sum()) > 0  # segments match, and prediction void changes FNs / IoUs:
    assert not all(torch.equal(getattr(coco, n), getattr(ours, n)) for n in ("false_negatives", "iou_sum_low"))


@pytest.mark.parametrize("spatial", SPATIAL)
def test_modified_pq_equals_torchmetrics(spatial, monkeypatch):
    batches = [_scene(seed, spatial) for seed in range(10, 13)]
    ours, theirs = ModifiedPanopticQuality(THINGS, STUFFS, True), TmModified(THINGS, STUFFS, True)
    for preds, target in batches:
        ours.update(preds, target)
        theirs.update(preds, target)
    for name in COUNTS:  # stuff: TP counts the gt segments, no FP / FN
        assert torch.equal(getattr(ours, name), getattr(theirs, name).long()), name
    got = ours.compute()
    assert got.shape == () and abs(float(got) - float(theirs.compute())) <= 1e-6
    exact = _float64_torchmetrics(monkeypatch, TmModified(THINGS, STUFFS, True), batches)
    assert abs(float(got) - float(exact)) <= 1e-12
    preds, target = batches[0]
    assert abs(float(modified_panoptic_quality(preds, target, THINGS, STUFFS, True))
               - float(tm_modified_fn(preds, target, THINGS, STUFFS, True))) <= 1e-6


@pytest.mark.parametrize("spatial", SPATIAL[:3])
@pytest.mark.parametrize(("sq_rq", "per_class"), FLAGS)
def test_the_functional_equals_torchmetrics(spatial, sq_rq, per_class):
    preds, target = _scene(7, spatial, unknown=False)
    got = panoptic_quality(preds, target, THINGS, STUFFS, False, sq_rq, per_class)
    expected = tm_pq_fn(preds, target, THINGS, STUFFS, False, sq_rq, per_class)
    assert got.shape == expected.shape and torch.allclose(got, expected, rtol=0, atol=1e-6)


def test_no_class_with_a_segment_is_nan_as_in_torchmetrics_and_zero_with_panopticapis_rules():
    assert torch.isnan(PanopticQuality([0], []).compute())
    assert torch.isnan(ModifiedPanopticQuality([0], []).compute())
    assert float(PanopticQuality([0], [], rules="panopticapi").compute()) == 0.0
    preds, target = _scene(3, (5, 5))  # categories 2 and 3 only: all void for these classes
    assert torch.isnan(panoptic_quality(preds, target, {2}, {3}, True))


@pytest.mark.parametrize("metric", [PanopticQuality, ModifiedPanopticQuality])
def test_errors_carry_torchmetrics_wording(metric):
    with pytest.raises(ValueError, match="At least one of `things` and `stuffs` must be non-empty"):
        metric(things=[], stuffs=[])
    with pytest.raises(TypeError, match="Expected argument `stuffs` to contain `int` categories"):
        metric(things={0}, stuffs={"sky"})
    with pytest.raises(ValueError, match="Expected arguments `things` and `stuffs` to have distinct keys"):
        metric(things={0}, stuffs={0})
    with pytest.warns(UserWarning, match="`things` categories contained duplicates"):
        metric(things=[0, 0], stuffs=[1])
    instance = metric(things={0, 1, 3}, stuffs={2, 8}, allow_unknown_preds_category=True)
    images = torch.randint(0, 9, (2, 16, 16, 2))
    for bad, args in ((TypeError, ([], images)), (TypeError, (images, []))):
        with pytest.raises(bad, match=r"Expected argument `(preds|target)` to be of type `torch.Tensor`"):
            instance.update(*args)
    with pytest.raises(ValueError, match="Expected argument `preds` and `target` to have the same shape"):
        instance.update(images, images[:, :8])
    with pytest.raises(ValueError, match="Expected argument `preds` to have at least one spatial dimension"):
        instance.update(images[:, 0, 0], images[:, 0, 0])
    with pytest.raises(ValueError, match="Expected argument `preds` to have exactly 2 channels in the last dimension"):
        instance.update(torch.zeros(1, 4, 4, 8, dtype=torch.long), torch.zeros(1, 4, 4, 8, dtype=torch.long))
    strict = metric(things=[0], stuffs=[1])
    preds = torch.zeros(1, 100, 2, dtype=torch.long)
    preds[0, 0, 0] = 2
    with pytest.raises(ValueError, match="Unknown categories found"):
        strict.update(preds, preds)


@pytest.mark.parametrize("spatial", [(40,), (4, 5, 6)])
def test_boundary_pq_needs_2d_images(spatial):
    preds, target = _scene(1, spatial)
    dims = f"{len(spatial)} spatial dim{'s' if len(spatial) > 1 else ''}"
    expected = (f"`iou_type='boundary'` needs 2-D images: `preds` must have shape (B, H, W, 2), "
                f"got {(2, *spatial, 2)} ({dims})")
    with pytest.raises(ValueError, match=re.escape(expected)):
        panoptic_quality(preds, target, THINGS, STUFFS, True, iou_type="boundary")
    with pytest.raises(ValueError, match=re.escape(f"`preds[0]` must have shape (B, H, W, 2), got {(*spatial, 2)}")):
        PanopticQuality(THINGS, STUFFS, True, iou_type="boundary").update(list(preds), list(target))
    image_preds, image_target = _scene(1, (12, 14))
    assert panoptic_quality(image_preds, image_target, THINGS, STUFFS, True, iou_type="boundary").shape == ()


def test_the_output_options_hold_the_same_numbers():
    preds, target = _scene(5, (30, 20))
    tensor = panoptic_quality(preds, target, THINGS, STUFFS, True, True, True)
    values = panoptic_quality(preds, target, THINGS, STUFFS, True, output="dict")
    coco = panoptic_quality(preds, target, THINGS, STUFFS, True, output="panopticapi")
    per_class = [values[f"{name}_per_class"] for name in ("pq", "sq", "rq")]
    assert torch.equal(tensor, torch.stack(per_class, dim=-1))
    assert coco["All"]["pq"] == float(values["pq"]) and coco["Things"]["n"] == int(values["n_things"])
    assert [coco["per_class"][c]["rq"] for c in values["classes"].tolist()] == values["rq_per_class"].tolist()
    with pytest.raises(ValueError, match="output='tensor'"):
        PanopticQuality(THINGS, STUFFS, return_sq_and_rq=True, output="dict")


def test_the_former_positional_order_still_works_with_a_warning():
    preds, target = _scene(2, (16, 16), unknown=False)
    with pytest.warns(FutureWarning, match="former positional order"):
        legacy = PanopticQuality(THINGS, STUFFS, "boundary", 0.05)
    named = PanopticQuality(THINGS, STUFFS, iou_type="boundary", dilation_ratio=0.05)
    assert (legacy.iou_type, legacy.dilation_ratio, legacy.allow_unknown_preds_category) == ("boundary", 0.05, False)
    assert torch.equal(legacy(preds, target), named(preds, target))


def test_torchscript_and_crowd_with_torchmetrics_rules():
    torch.jit.script(PanopticQuality(THINGS, STUFFS))
    torch.jit.script(ModifiedPanopticQuality(THINGS, STUFFS))
    preds, target = _scene(4, (10, 12), unknown=False)
    no_crowd = panoptic_quality(preds, target, THINGS, STUFFS, output="dict")
    with_crowd = panoptic_quality(preds, target, THINGS, STUFFS, output="dict",
                                  iscrowd=torch.zeros(target.shape[:-1], dtype=torch.bool))
    assert all(torch.equal(no_crowd[k], with_crowd[k]) for k in no_crowd)


@pytest.mark.parametrize("metric", [PanopticQuality, ModifiedPanopticQuality])
@pytest.mark.parametrize("spatial", [(50,), (13, 17)])
def test_the_device_path_gives_the_same_values_under_torchmetrics_rules(metric, spatial):
    """``engine="fixed"`` (what a GPU runs: sorted slots and pairs, nothing read back) on CPU, with crowd marks."""
    preds, target = _scene(6, spatial)
    crowd = torch.isin(target[..., 0], torch.tensor([4]))  # every segment of thing 4 is crowd
    values = []
    for engine in ("data_sized", "fixed"):
        instance = metric(THINGS, STUFFS, True, output="dict", engine=engine)
        instance.update(preds, target, crowd)
        values.append(instance.compute())
    for name, value in values[0].items():
        assert torch.equal(values[1][name], value), name
    assert int(values[0]["n"]) > 0
