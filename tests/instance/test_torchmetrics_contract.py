"""MeanAveragePrecision as a drop-in for torchmetrics': signature, input forms, errors, key names, extended
summary layout, COCO conversion — each checked side by side with torchmetrics' own class where it can run.

torchmetrics' detection metric needs torchvision only for ``box_convert``; where torchvision is not installed a
stand-in with its arithmetic is put in ``sys.modules`` for these tests.
"""

from __future__ import annotations

import inspect
import sys
import types
import warnings

import pytest
import torch
from torch import IntTensor, Tensor

from nobg_metrics import MeanAveragePrecision
from nobg_metrics.functional import mean_average_precision

mean_ap = pytest.importorskip("torchmetrics.detection.mean_ap")
tm_map = pytest.importorskip("torchmetrics.functional.detection.map")
pytest.importorskip("pycocotools")

POSITIONAL = ["box_format", "iou_type", "iou_thresholds", "rec_thresholds", "max_detection_thresholds",
              "class_metrics", "extended_summary", "average", "backend"]


def _box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    if in_fmt == "xywh":
        boxes = torch.cat([boxes[..., :2], boxes[..., :2] + boxes[..., 2:]], -1)
    elif in_fmt == "cxcywh":
        boxes = torch.cat([boxes[..., :2] - 0.5 * boxes[..., 2:], boxes[..., :2] + 0.5 * boxes[..., 2:]], -1)
    return torch.cat([boxes[..., :2], boxes[..., 2:] - boxes[..., :2]], -1) if out_fmt == "xywh" else boxes


@pytest.fixture
def reference(monkeypatch):
    """torchmetrics' class, runnable without torchvision."""
    try:
        import torchvision.ops  # noqa: F401
    except ImportError:
        ops = types.ModuleType("torchvision.ops")
        ops.box_convert = _box_convert  # type: ignore[attr-defined]
        package = types.ModuleType("torchvision")
        package.ops = ops  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "torchvision", package)
        monkeypatch.setitem(sys.modules, "torchvision.ops", ops)
        monkeypatch.setattr(mean_ap, "_TORCHVISION_AVAILABLE", True)
    return mean_ap.MeanAveragePrecision


def _data(count: int = 4, seed: int = 0, size: tuple[int, int] = (30, 40)):
    generator = torch.Generator().manual_seed(seed)
    preds, target = [], []
    for _ in range(count):
        items = []
        for n in (6, 4):
            corner = torch.rand(n, 2, generator=generator) * 20
            boxes = torch.cat([corner, corner + torch.rand(n, 2, generator=generator) * 15 + 1], 1)
            masks = torch.rand(n, *size, generator=generator) > 0.6
            items.append((boxes, masks, torch.randint(0, 3, (n,), generator=generator)))
        (det_boxes, det_masks, det_labels), (gt_boxes, gt_masks, gt_labels) = items
        preds.append({"boxes": det_boxes, "masks": det_masks, "labels": det_labels,
                      "scores": torch.rand(6, generator=generator)})
        target.append({"boxes": gt_boxes, "masks": gt_masks, "labels": gt_labels})
    return preds, target


def _same(first: dict, second: dict) -> None:
    assert list(first) == list(second)
    for key, value in first.items():
        if isinstance(value, Tensor):
            assert torch.equal(value, second[key]), key


def test_positional_order_is_torchmetrics_order(reference):
    for ours, theirs in ((MeanAveragePrecision.__init__, reference.__init__),
                         (mean_average_precision, tm_map.mean_average_precision)):
        names = [p.name for p in inspect.signature(ours).parameters.values()
                 if p.kind == p.POSITIONAL_OR_KEYWORD and p.name not in ("self", "preds", "target")]
        expected = [p.name for p in inspect.signature(theirs).parameters.values()
                    if p.kind == p.POSITIONAL_OR_KEYWORD and p.name not in ("self", "preds", "target")]
        assert names[:len(POSITIONAL)] == POSITIONAL
        assert names == expected


def test_iou_type_given_first_moves_with_a_warning():
    preds, target = _data(2)
    with pytest.warns(FutureWarning, match="iou_type"):
        old = MeanAveragePrecision("segm")
    old.update(preds, target)
    new = MeanAveragePrecision(iou_type="segm")
    new.update(preds, target)
    _same(old.compute(), new.compute())


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.float32, torch.float64])
def test_masks_of_any_dtype_equal_bool_masks(dtype):
    preds, target = _data(3)
    expected = mean_average_precision(preds, target, iou_type="segm")
    cast = [{**p, "masks": p["masks"].to(dtype)} for p in preds]
    _same(mean_average_precision(cast, [{**t, "masks": t["masks"].to(dtype)} for t in target], iou_type="segm"),
          expected)
    with pytest.raises(ValueError, match="0 or 1"):
        mean_average_precision([{**cast[0], "masks": cast[0]["masks"] * 2}], target[:1], iou_type="segm")


@pytest.mark.parametrize("empty", [Tensor([]), torch.zeros(0, dtype=torch.bool), torch.zeros(0, 30, 40)])
def test_empty_masks_of_any_shape(empty):
    preds, target = _data(2)
    expected = mean_average_precision(preds, [target[0], {"masks": torch.zeros(0, 30, 40, dtype=torch.bool),
                                                          "labels": IntTensor([])}], iou_type="segm")
    got = mean_average_precision(preds, [target[0], {"masks": empty, "labels": IntTensor([])}], iou_type="segm")
    _same(got, expected)
    none = mean_average_precision([{"masks": empty, "scores": Tensor([]), "labels": IntTensor([])}],
                                  [{"masks": empty, "labels": IntTensor([])}], iou_type="segm")
    assert float(none["map"]) == -1.0


@pytest.mark.parametrize("empty", [Tensor([]), torch.zeros(0, 4)])
def test_empty_boxes(empty):
    preds, target = _data(2)
    expected = mean_average_precision(preds, [target[0], {"boxes": torch.zeros(0, 4), "labels": IntTensor([])}],
                                      iou_type="bbox")
    _same(mean_average_precision(preds, [target[0], {"boxes": empty, "labels": IntTensor([])}], iou_type="bbox"),
          expected)


@pytest.mark.parametrize("box_format", ["xywh", "cxcywh"])
def test_box_formats_equal_xyxy(box_format):
    preds, target = _data(3)

    def convert(items):
        out = []
        for item in items:
            b = item["boxes"].double()
            size = b[:, 2:] - b[:, :2]
            out.append({**item, "boxes": torch.cat([b[:, :2] if box_format == "xywh" else b[:, :2] + size / 2, size],
                                                   1)})
        return out
    expected = mean_average_precision(preds, target, iou_type="bbox")
    got = mean_average_precision(convert(preds), convert(target), box_format=box_format, iou_type="bbox")
    for key in ("map", "map_50", "mar_100"):
        assert torch.allclose(got[key], expected[key], atol=1e-12), key


def test_errors_as_torchmetrics_raises_them(reference):
    metric = MeanAveragePrecision(iou_type="bbox")
    metric.update([], [])
    cases = [
        ((Tensor(), []), "Expected argument `preds` to be of type Sequence"),
        (([], Tensor()), "Expected argument `target` to be of type Sequence"),
        (([{}], [{}, {}]), "Expected argument `preds` and `target` to have the same length"),
        (([{"scores": Tensor(), "labels": IntTensor()}], [{"boxes": Tensor(), "labels": IntTensor()}]),
         "Expected all dicts in `preds` to contain the `boxes` key"),
        (([{"boxes": Tensor(), "scores": Tensor(), "labels": IntTensor()}], [{"labels": IntTensor()}]),
         "Expected all dicts in `target` to contain the `boxes` key"),
        (([{"boxes": [], "scores": Tensor(), "labels": IntTensor()}], [{"boxes": Tensor(), "labels": IntTensor()}]),
         "Expected all boxes in `preds` to be of type Tensor"),
        (([{"boxes": Tensor(), "scores": Tensor(), "labels": IntTensor()}], [{"boxes": Tensor(), "labels": []}]),
         "Expected all labels in `target` to be of type Tensor"),
    ]
    for (preds, target), message in cases:
        for update in (metric.update, reference(iou_type="bbox").update):
            with pytest.raises(ValueError, match=message):
                update(preds, target)
    for value in (0, 1):
        with pytest.raises(ValueError, match="Expected argument `class_metrics` to be a boolean"):
            MeanAveragePrecision(class_metrics=value)
    with pytest.raises(ValueError, match="iou_type"):
        MeanAveragePrecision(iou_type=("bbox", "mask"))


@pytest.mark.parametrize("iou_type", [("bbox", "segm"), ["segm", "bbox"]])
def test_tuples_prefix_keys_as_torchmetrics(reference, iou_type):
    preds, target = _data(3)
    theirs = reference(iou_type=tuple(iou_type), class_metrics=True)
    theirs.update(preds, target)
    expected = theirs.compute()
    metric = MeanAveragePrecision(iou_type=iou_type, class_metrics=True)
    metric.update(preds, target)
    ours = metric.compute()
    assert list(ours) == list(expected)
    for single in iou_type:
        alone = mean_average_precision(preds, target, iou_type=single, class_metrics=True)
        for key, value in alone.items():
            assert torch.equal(ours[key if key == "classes" else f"{single}_{key}"], value)
    for key, value in expected.items():
        assert torch.allclose(ours[key].double(), value.double(), atol=1e-6), key


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
@pytest.mark.parametrize("average", ["macro", "micro"])
def test_extended_summary_as_torchmetrics(reference, iou_type, average):
    preds, target = _data(3)
    theirs = reference(iou_type=iou_type, extended_summary=True, average=average)
    ours = MeanAveragePrecision(iou_type=iou_type, extended_summary=True, average=average)
    for metric in (theirs, ours):
        metric.update(preds[:2], target[:2])
        metric.update(preds[2:], target[2:])
    expected, got = theirs.compute(), ours.compute()
    assert list(got) == list(expected)
    for key in ("precision", "recall", "scores"):
        assert got[key].shape == expected[key].shape
    assert list(got["ious"]) == list(expected["ious"])
    for key, value in expected["ious"].items():
        if isinstance(value, list):
            assert got["ious"][key] == []
        else:
            assert got["ious"][key].dtype == torch.float32
            assert torch.allclose(got["ious"][key], value, atol=1e-6)


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_many_detections_warn_as_torchmetrics(iou_type):
    preds, target = _data(1)
    many = [{key: value.repeat(20, *([1] * (value.ndim - 1))) for key, value in preds[0].items()}]
    metric = MeanAveragePrecision(iou_type=iou_type, max_detection_thresholds=[1, 10, 100])
    with pytest.warns(UserWarning, match="Encountered more than 100 detections in a single image"):
        metric.update(many, target)
    metric.warn_on_many_detections = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        metric.update(many, target)


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_coco_round_trip_equals_torchmetrics(reference, iou_type, tmp_path):
    preds, target = _data(3)
    metric = MeanAveragePrecision(iou_type=iou_type, record_inputs=True)
    metric.update(preds, target)
    metric.tm_to_coco(str(tmp_path / "run"))
    files = (str(tmp_path / "run_preds.json"), str(tmp_path / "run_target.json"))
    ours = MeanAveragePrecision.coco_to_tm(*files, iou_type=iou_type)
    theirs = reference().coco_to_tm(*files, iou_type=iou_type)
    for mine, other in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        assert list(mine) == list(other)
        for key in mine:
            assert mine[key].dtype == other[key].dtype and torch.equal(mine[key], other[key]), key
    key = "boxes" if iou_type == "bbox" else "masks"
    for original, read in zip(preds + target, ours[0] + ours[1]):
        value = original[key] if key == "masks" else _box_convert(original[key], "xyxy", "xywh")
        assert torch.allclose(read[key].to(value.dtype), value, atol=1e-5)
    again = MeanAveragePrecision(box_format="xywh", iou_type=iou_type)
    again.update(*ours)
    assert torch.allclose(again.compute()["map"], metric.compute()["map"], atol=1e-6)


def test_tm_to_coco_needs_recorded_inputs():
    with pytest.raises(RuntimeError, match="record_inputs=True"):
        MeanAveragePrecision(iou_type="segm").tm_to_coco("never")


def test_scriptable_as_torchmetrics():
    metric = MeanAveragePrecision(iou_type=("bbox", "segm"), class_metrics=True)
    torch.jit.script(metric)  # torchmetrics' tester scripts every metric before it runs it
    preds, target = _data(2)
    metric.update(preds, target)
    assert set(metric.compute()) >= {"bbox_map", "segm_map", "classes"}
