"""PanopticQuality and panoptic_quality against the port of panopticapi / boundary-iou-api (tests/reference/
panoptic_port.py) on generated scenes — real object shapes on stuff bands, void rings and blobs, crowd things,
swapped classes, missed and spurious segments, odd sizes — and on hand-made edge cases of every rule."""

from __future__ import annotations

import pytest
import torch

from nobg_metrics import PanopticQuality
from nobg_metrics.functional import panoptic_quality
from tests.panoptic.helpers import COCO, assert_matches, port_result, scenes
from tests.panoptic.scenes import STUFFS, THINGS


def _ours(forms, iou_type, ratio=0.02, **options):
    return panoptic_quality([f[0] for f in forms], [f[1] for f in forms], THINGS, STUFFS,
                            iscrowd=[f[2] for f in forms], iou_type=iou_type, dilation_ratio=ratio,
                            allow_unknown_preds_category=True, **COCO, **options)


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_generated_scenes_equal_the_port(iou_type):
    forms = [item[1:] for item in scenes()]
    assert_matches(_ours(forms, iou_type), port_result(forms, iou_type))


@pytest.mark.parametrize("ratio", [0.005, 0.05])
def test_other_band_widths(ratio):
    forms = [item[1:] for item in scenes()[:3]]
    assert_matches(_ours(forms, "boundary", ratio), port_result(forms, "boundary", ratio))


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_the_device_paths_give_the_same_values(iou_type):
    """What CUDA runs (sort-based slots and pair counts, tables of one slot per pixel: ``engine="fixed"``) on CPU;
    ``"data_sized"`` is what CPU runs by default."""
    forms = [item[1:] for item in scenes()[:4]]
    expected = _ours(forms, iou_type)
    sized = _ours(forms, iou_type, engine="data_sized")
    assert all(torch.equal(value, expected[name]) for name, value in sized.items())
    device = _ours(forms, iou_type, engine="fixed")
    for name, value in expected.items():
        assert torch.equal(device[name], value), name


def _image(cats, insts=None):
    """An (H, W, 2) image from a category grid (and an instance grid)."""
    cat = torch.tensor(cats, dtype=torch.int64)
    inst = torch.zeros_like(cat) if insts is None else torch.tensor(insts, dtype=torch.int64)
    return torch.stack([cat, inst], dim=-1)


def _both(preds, target, iscrowd=None, things=frozenset({1, 2}), stuffs=frozenset({7}), iou_type="segm"):
    """Ours and the port on one image."""
    from tests.panoptic.scenes import port_form
    from tests.reference import panoptic_port

    ours = panoptic_quality(preds, target, set(things), set(stuffs), iscrowd=iscrowd, iou_type=iou_type,
                            allow_unknown_preds_category=True, **COCO)
    view = port_form(preds, target, iscrowd, set(things), set(stuffs))
    stats = panoptic_port.score_image(view.gt, view.pred, view.gt_segments, view.pred_segments, iou_type)
    return ours, stats


def test_iou_of_exactly_one_half_is_no_match():
    # gt thing 4 px, prediction 2 of them + 0 more: IoU 2 / 4 = 0.5, not > 0.5 -> one FN and one FP
    target = _image([[1, 1, 1, 1, 7, 7]], [[1, 1, 1, 1, 0, 0]])
    preds = _image([[1, 1, 7, 7, 7, 7]], [[1, 1, 0, 0, 0, 0]])
    ours, stats = _both(preds[None], target[None])
    assert stats[1][1:] == [0, 1, 1]
    assert ours["pq_per_class"][0] == 0 and int(ours["n"]) == 2


def test_a_prediction_mostly_on_void_is_no_false_positive_but_half_is():
    # category 9 is neither thing nor stuff: void in the target
    target = _image([[9, 9, 9, 7, 7, 7, 7, 7]])
    over = _image([[1, 1, 1, 1, 7, 7, 7, 7]], [[5, 5, 5, 5, 0, 0, 0, 0]])  # 3 of 4 on void: ignored
    half = _image([[7, 1, 1, 1, 1, 1, 1, 7]], [[0, 5, 5, 5, 5, 5, 5, 0]])  # 2 of 6 on void: an FP
    ours, stats = _both(over[None], target[None])
    assert int(ours["n_things"]) == 0 and 1 not in stats
    ours, stats = _both(half[None], target[None])
    assert stats[1][2] == 1 and float(ours["pq_per_class"][0]) == 0.0 and int(ours["n_things"]) == 1


def test_the_union_leaves_out_the_predictions_void_pixels():
    # gt thing of 4 px next to void; the prediction covers it and 2 void pixels: IoU 4 / (6 - 2) = 1
    target = _image([[9, 9, 1, 1, 1, 1, 7, 7]], [[0, 0, 3, 3, 3, 3, 0, 0]])
    preds = _image([[1, 1, 1, 1, 1, 1, 7, 7]], [[3, 3, 3, 3, 3, 3, 0, 0]])
    ours, stats = _both(preds[None], target[None])
    assert stats[1] == [1.0, 1, 0, 0] and float(ours["pq_per_class"][0]) == 1.0


def test_the_last_crowd_region_of_a_category_is_its_crowd_region():
    # two crowd segments of thing 1 (instances 3 and 4); a prediction over the first is an FP (the reference
    # keeps only the last crowd region of a category), one over the second is ignored
    target = _image([[1, 1, 1, 7, 1, 1, 1, 7]], [[3, 3, 3, 0, 4, 4, 4, 0]])
    crowd = (target[..., 0] == 1)[None]
    on_first = _image([[1, 1, 1, 7, 7, 7, 7, 7]], [[8, 8, 8, 0, 0, 0, 0, 0]])
    on_last = _image([[7, 7, 7, 7, 1, 1, 1, 7]], [[0, 0, 0, 0, 8, 8, 8, 0]])
    _, stats = _both(on_first[None], target[None], crowd)
    assert stats[1][2] == 1
    ours, stats = _both(on_last[None], target[None], crowd)
    assert 1 not in stats or stats[1][2] == 0
    assert int(ours["n_things"]) == 0  # crowd gts are never FNs: thing 1 has no TP, FP or FN


def test_crowd_segments_are_never_matched():
    target = _image([[1, 1, 1, 1, 7, 7]], [[2, 2, 2, 2, 0, 0]])
    crowd = (target[..., 0] == 1)[None]
    ours, _ = _both(target[None].clone(), target[None], crowd)
    assert float(ours["pq"]) == 1.0 and int(ours["n"]) == 1  # only the stuff counts


def test_classes_without_segments_are_left_out_and_an_empty_group_is_zero():
    target = _image([[7, 7, 7]])
    ours, _ = _both(target[None].clone(), target[None])
    assert float(ours["pq"]) == 1.0 and int(ours["n"]) == 1
    assert float(ours["pq_things"]) == 0.0 and int(ours["n_things"]) == 0  # panopticapi: ZeroDivisionError


def test_stuff_instance_ids_are_ignored_and_swapped_classes_do_not_match():
    target = _image([[7, 7, 1, 1]], [[1, 2, 5, 5]])
    preds = _image([[7, 7, 2, 2]], [[9, 9, 5, 5]])  # stuff instances differ (ignored); the thing's class swapped
    ours, stats = _both(preds[None], target[None])
    assert stats[7] == [1.0, 1, 0, 0] and stats[1][3] == 1 and stats[2][2] == 1
    assert float(ours["pq_stuff"]) == 1.0 and float(ours["pq_things"]) == 0.0


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_the_class_after_one_update_equals_the_functional(iou_type):
    forms = [item[1:] for item in scenes()[:3]]
    metric = PanopticQuality(THINGS, STUFFS, iou_type=iou_type, allow_unknown_preds_category=True, **COCO)
    metric.update([f[0] for f in forms], [f[1] for f in forms], [f[2] for f in forms])
    expected = _ours(forms, iou_type)
    for name, value in metric.compute().items():
        assert torch.equal(value, expected[name]), name


def test_large_and_negative_category_ids_are_searched():
    """Category ids beyond the lookup table's range (here shifted by 2^40, one negative) give the same values."""
    forms = [item[1:] for item in scenes()[:3]]
    shift = {c: c + 2**40 for c in THINGS | STUFFS}
    shift[min(STUFFS)] = -5
    moved = []
    for preds, target, crowd in forms:
        maps = []
        for value in (preds, target):
            value = value.clone()
            for old, new in shift.items():
                value[..., 0][value[..., 0] == old] = new
            maps.append(value)
        moved.append((*maps, crowd))
    things, stuffs = {shift[c] for c in THINGS}, {shift[c] for c in STUFFS}
    ours = panoptic_quality([m[0] for m in moved], [m[1] for m in moved], things, stuffs,
                            iscrowd=[m[2] for m in moved], iou_type="boundary", allow_unknown_preds_category=True,
                            **COCO)
    expected = _ours(forms, "boundary")
    order = torch.tensor([shift[c] for c in expected["classes"].tolist()])
    for name in ("pq", "sq", "rq", "n", "pq_things", "pq_stuff"):
        assert torch.equal(ours[name], expected[name]), name
    by_id = dict(zip(ours["classes"].tolist(), ours["pq_per_class"].tolist()))
    assert [by_id[c] for c in order.tolist()] == expected["pq_per_class"].tolist()
