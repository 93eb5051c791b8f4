"""``MeanAveragePrecision(errors="tide")``: the class's TIDE state gives ``functional.tide_errors``' values for box,
mask and Boundary IoU over any batching (and so tidecv's), leaves AP unchanged, merges and rejects batches as the
other states do, and computes no IoU of its own."""

from __future__ import annotations

import pickle
from itertools import pairwise
from typing import Any

import pytest
import torch

from nobg_metrics import MeanAveragePrecision
from nobg_metrics.functional import tide_errors
from nobg_metrics.functional.instance import statistics, tide_match
from tests.instance.tide_state_data import tide_images

IOU_TYPES = ("bbox", "segm", "boundary")


def _fed(metric: MeanAveragePrecision, preds: list, target: list, cuts: tuple[int, ...]) -> MeanAveragePrecision:
    bounds = (0, *cuts, len(preds))
    for start, stop in pairwise(bounds):
        metric.update(preds[start:stop], target[start:stop])
    return metric


def assert_same(ours: dict[str, Any], expected: dict[str, Any], tolerance: float = 1e-9) -> None:
    """Every value of ``tide_errors``' dict: AP, dAP, counts, per-threshold AP."""
    assert set(ours) == set(expected)
    for group in ("main", "special", "counts"):
        assert set(ours[group]) == set(expected[group])
        for name, value in expected[group].items():
            assert abs(float(ours[group][name]) - float(value)) <= tolerance, (group, name)
    for key in ("ap", "ap_range", "thresholds", "ap_per_threshold"):
        assert torch.allclose(ours[key], expected[key], rtol=0, atol=tolerance), key


@pytest.mark.parametrize("iou_type", IOU_TYPES)
@pytest.mark.parametrize("seed, cuts", [(0, ()), (1, (3, 4, 9)), (2, (1,))])
def test_class_equals_the_function(iou_type, seed, cuts):
    preds, target = tide_images(seed)
    metric = _fed(MeanAveragePrecision(iou_type=iou_type, errors="tide", warn_on_many_detections=False), preds,
                  target, cuts)
    expected = tide_errors(preds, target, iou_type=iou_type, thresholds="coco")
    assert_same(metric.tide_errors(), expected, 0.0)  # the same IoUs and statistics: equal, not only close


@pytest.mark.parametrize("engine", ["data_sized", "fixed"])
def test_both_mask_engines_and_arrival_order(engine):
    """The CPU row-band counts (all pairs sharing rows) and the full products give the same TIDE values; without
    ``image_id`` images follow their arrival."""
    preds, target = tide_images(3, image_ids=False)
    expected = tide_errors(preds, target, iou_type="boundary", thresholds="coco")
    metric = MeanAveragePrecision(iou_type="boundary", errors="tide", engine=engine, warn_on_many_detections=False)
    assert_same(_fed(metric, preds, target, (5,)).tide_errors(), expected, 0.0)


def test_tuple_of_iou_types_gives_one_dict_per_type():
    preds, target = tide_images(4)
    metric = _fed(MeanAveragePrecision(iou_type=("bbox", "segm", "boundary"), errors="tide",
                                       warn_on_many_detections=False), preds, target, (6,))
    values = metric.tide_errors()
    assert list(values) == list(IOU_TYPES)
    for iou_type in IOU_TYPES:
        assert_same(values[iou_type], tide_errors(preds, target, iou_type=iou_type, thresholds="coco"), 0.0)


@pytest.mark.parametrize("options", [{"iou_type": "bbox"}, {"iou_type": "segm"}, {"iou_type": "boundary"},
                                     {"iou_type": ("bbox", "boundary"), "class_metrics": True},
                                     {"iou_type": "segm", "average": "micro"},
                                     {"iou_type": "segm", "protocol": "lvis"},
                                     {"iou_type": "boundary", "engine": "fixed", "extended_summary": True}])
def test_ap_is_unchanged_by_the_errors_state(options):
    preds, target = tide_images(5)
    plain = _fed(MeanAveragePrecision(**options, warn_on_many_detections=False), preds, target, (4,)).compute()
    with_errors = _fed(MeanAveragePrecision(**options, errors="tide", warn_on_many_detections=False), preds, target,
                       (4,)).compute()
    assert list(with_errors) == list(plain)
    for key, value in plain.items():
        if key == "ious":
            assert with_errors[key].keys() == value.keys()
            assert all(torch.equal(torch.as_tensor(with_errors[key][k]), torch.as_tensor(v)) for k, v in value.items())
        else:
            assert torch.equal(with_errors[key], value), key


@pytest.mark.parametrize("value", ["TIDE", "coco", True, 1])
def test_bad_errors_value_is_rejected(value):
    with pytest.raises(ValueError, match="`errors`"):
        MeanAveragePrecision(errors=value)


def test_state_dict_and_pickle_keep_the_tide_state():
    preds, target = tide_images(10)
    metric = _fed(MeanAveragePrecision(iou_type="segm", errors="tide", warn_on_many_detections=False), preds,
                  target, (6,))
    expected = metric.tide_errors()
    assert_same(pickle.loads(pickle.dumps(metric)).tide_errors(), expected, 0.0)
    metric.persistent(True)
    fresh = MeanAveragePrecision(iou_type="segm", errors="tide")
    fresh.load_state_dict(metric.state_dict())
    assert_same(fresh.tide_errors(), expected, 0.0)
    with pytest.raises(ValueError, match="other options"):  # a metric without the state does not load it
        MeanAveragePrecision(iou_type="segm").load_state_dict(metric.state_dict())


def test_repeated_image_id_is_an_error():
    preds, target = tide_images(10)
    metric = _fed(MeanAveragePrecision(iou_type="bbox", errors="tide", warn_on_many_detections=False), preds,
                  target, ())
    metric.update(preds[:1], target[:1])
    with pytest.raises(ValueError, match="must be unique"):
        metric.tide_errors()


def test_tide_errors_needs_the_option_and_data():
    with pytest.raises(RuntimeError, match="errors='tide'"):
        MeanAveragePrecision().tide_errors()
    metric = MeanAveragePrecision(iou_type="segm", errors="tide")
    empty = torch.zeros((0, 4, 5), dtype=torch.bool)
    metric.update([{"masks": empty, "scores": torch.zeros(0), "labels": torch.zeros(0, dtype=torch.int64)}],
                  [{"masks": empty, "labels": torch.zeros(0, dtype=torch.int64)}])
    with pytest.raises(ValueError, match="at least one detection"):
        metric.tide_errors()


def test_states_are_records_of_the_declared_layouts():
    preds, target = tide_images(6)
    metric = _fed(MeanAveragePrecision(iou_type="segm", errors="tide", warn_on_many_detections=False), preds,
                  target, (5,))
    names = [name for name in metric._list_layouts if name.startswith("tide_")]
    assert len(names) == 8
    for name in names:
        dtype, shape = metric._list_layouts[name]
        for record in getattr(metric, name):
            assert record.dtype == dtype and tuple(record.shape[1:]) == shape, name
    assert "tide_det_scores" not in MeanAveragePrecision(iou_type="segm")._list_layouts  # off: no state


def test_rejected_batch_changes_nothing():
    preds, target = tide_images(7)
    metric = _fed(MeanAveragePrecision(iou_type="boundary", errors="tide", warn_on_many_detections=False),
                  preds[:6], target[:6], (3,))
    expected, ap = metric.tide_errors(), metric.compute()
    bad = [dict(target[6]), {**target[7], "masks": target[7]["masks"].to(torch.complex64)}]
    with pytest.raises(TypeError, match=r'target\[1\]\["masks"\]'):
        metric.update(preds[6:8], bad)
    assert_same(metric.tide_errors(), expected, 0.0)
    assert all(torch.equal(value, ap[key]) for key, value in metric.compute().items())


@pytest.mark.parametrize("image_ids", [True, False])
def test_merge_state_equals_one_metric(image_ids):
    preds, target = tide_images(8, image_ids=image_ids)
    options = {"iou_type": "segm", "errors": "tide", "warn_on_many_detections": False}
    first = _fed(MeanAveragePrecision(**options), preds[:5], target[:5], (2,))
    second = _fed(MeanAveragePrecision(**options), preds[5:], target[5:], ())
    first.merge_state(second)
    assert_same(first.tide_errors(), tide_errors(preds, target, iou_type="segm", thresholds="coco"), 0.0)


@pytest.mark.parametrize("iou_type, engine", [("bbox", "auto"), ("segm", "data_sized"), ("segm", "fixed"),
                                              ("boundary", "data_sized"), ("boundary", "fixed")])
def test_no_second_iou_pass(monkeypatch, iou_type, engine):
    """The IoU code runs as often with the errors state as without, and TIDE's own IoU never runs."""
    calls = {"count": 0}

    def counted(function: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls["count"] += 1
            return function(*args, **kwargs)
        return wrapper

    for name in ("box_ious", "image_ious", "crop_counts", "ious_from_counts"):
        monkeypatch.setattr(statistics, name, counted(getattr(statistics, name)))

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("TIDE computed its own IoU")

    monkeypatch.setattr(tide_match, "image_iou_matrix", refused)
    preds, target = tide_images(9)
    counts = []
    for errors in (None, "tide"):
        calls["count"] = 0
        metric = _fed(MeanAveragePrecision(iou_type=iou_type, errors=errors, engine=engine,
                                           warn_on_many_detections=False), preds, target, (4,))
        counts.append(calls["count"])
    assert counts[0] == counts[1] > 0
    assert float(metric.tide_errors()["ap"]) > 0


def test_equals_tidecv(tmp_path):
    """One direct check against tidecv 1.0.1 (the function is checked on many more cases in test_tide.py)."""
    pytest.importorskip("tidecv")
    from tests.instance.test_tide import assert_same as assert_tidecv
    from tests.instance.test_tide import make_images, run_tidecv, to_torch, write_coco

    images = make_images(0)
    for iou_type, mask in (("bbox", False), ("segm", True)):
        (tmp_path / iou_type).mkdir()
        preds, target = to_torch(images, iou_type)
        metric = _fed(MeanAveragePrecision(iou_type=iou_type, errors="tide", warn_on_many_detections=False), preds,
                      target, (5, 9))
        assert_tidecv(metric.tide_errors(), run_tidecv(*write_coco(images, tmp_path / iou_type, mask), mask))


def test_the_command_reads_tide_off_the_metric(monkeypatch, tmp_path):
    """``instances --errors tide``: TIDE's values come from the AP metric's state; neither TIDE's own IoU nor its
    batch statistics function runs."""
    from nobg_metrics.functional.instance import tide
    from tests.cli.instances.instances_data import make_dataset, write_dataset
    from tests.cli.instances.test_instances import _run

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a second TIDE pass")

    monkeypatch.setattr(tide_match, "image_iou_matrix", refused)
    monkeypatch.setattr(tide, "tide_error_statistics", refused)
    gt_path, dt_path = write_dataset(tmp_path, *make_dataset(1))
    status, _, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--iou-type", "boundary",
                          "--errors", "tide", "--out", str(tmp_path / "out"), "--quiet")
    assert status == 0, err
    assert (tmp_path / "out" / "errors.json").exists() and (tmp_path / "out" / "errors.md").exists()
