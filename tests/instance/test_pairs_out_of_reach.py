"""Pairs whose IoU cannot reach the lowest threshold are left out of the run-based counting: the bound never rules
out a pair that reaches it (mask, crowd and boundary IoU), the pairs kept are counted exactly, and AP / AR are the
same, bit for bit, with and without leaving them out."""

from __future__ import annotations

import argparse

import pytest
import torch

from nobg_metrics.cli.instances.reading import Reading
from nobg_metrics.cli.instances.run import batches, build_metric
from nobg_metrics.functional.instance import statistics
from nobg_metrics.functional.instance.crops import crop_counts
from nobg_metrics.functional.instance.iou import Reach, ious_from_counts, reachable
from tests.cli.instances.instances_data import make_dataset, write_dataset
from tests.ops.test_run_strips import _masks, _runs


def test_the_bound_is_never_below_an_iou_it_should_admit() -> None:
    generator = torch.Generator().manual_seed(0)
    det_area = torch.randint(0, 400, (20000,), generator=generator)
    gt_area = torch.randint(0, 400, (20000,), generator=generator)
    inter = (torch.rand(20000, generator=generator) * torch.minimum(det_area, gt_area)).long()
    crowd = torch.rand(20000, generator=generator) < 0.2
    union = torch.where(crowd, det_area, det_area + gt_area - inter)
    ious = torch.where(inter == 0, 0.0, inter.double() / union.clamp(min=1).double())
    for floor in (0.0, 0.1, 0.5, 0.75, 0.95, 1 - 1e-10):
        admitted = reachable(det_area, gt_area, crowd, floor)
        assert bool(admitted[ious >= floor].all()), floor
    assert bool(reachable(torch.tensor([100]), torch.tensor([50]), torch.tensor([False]), 0.5))  # 50 / 100: kept
    assert not bool(reachable(torch.tensor([100]), torch.tensor([49]), torch.tensor([False]), 0.5))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dilation_ratio", [None, 0.02, 0.2])
def test_the_pairs_kept_are_counted_exactly_and_the_others_are_below_the_floor(seed, dilation_ratio) -> None:
    generator = torch.Generator().manual_seed(seed)
    height, width = 37, 61
    dets, gts, det_labels, gt_labels, crowds = [], [], [], [], []
    for n, m in ((7, 4), (0, 2), (5, 0), (9, 6)):
        dets.append(_masks(generator, n, height, width))
        gts.append(_masks(generator, m, height, width))
        det_labels.append(torch.randint(0, 2, (n,), generator=generator))
        gt_labels.append(torch.randint(0, 2, (m,), generator=generator))
        crowds.append(torch.rand(m, generator=generator) < 0.3)
    def counted(reach):
        return crop_counts([_runs(d, generator) for d in dets], [_runs(g, generator) for g in gts], det_labels,
                           gt_labels, False, dilation_ratio, reach)
    everything = counted(None)
    for floor in (0.3, 0.5, 0.9):
        some = counted(Reach(floor, crowds))
        for full, part, crowd in zip(everything, some, crowds, strict=True):
            iou = ious_from_counts(full["inter"], full["det_area"], full["gt_area"], crowd, full.get("band_inter"),
                                   full.get("det_band"), full.get("gt_band"))
            iou_part = ious_from_counts(part["inter"], part["det_area"], part["gt_area"], crowd,
                                        part.get("band_inter"), part.get("det_band"), part.get("gt_band"))
            reached = iou >= floor
            assert torch.equal(iou_part[reached], iou[reached])  # every pair that can match: exact
            assert bool((iou_part[~reached] <= iou[~reached]).all()) and bool((iou_part[~reached] < floor).all())


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
@pytest.mark.parametrize("thresholds", [None, [0.1, 0.3], [0.85]])
def test_ap_is_the_same_bit_for_bit_with_the_pairs_left_out(tmp_path, monkeypatch, iou_type, thresholds) -> None:
    gt, results = make_dataset(11, with_bbox=False)
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    args = argparse.Namespace(gt_json_file=gt_path, dt_json_file=dt_path, iou_type=iou_type, dilation_ratio=0.02,
                              lvis=False, max_dets=None, errors=None, strict=False)
    values = []
    for leave_out in (True, False):
        if not leave_out:
            monkeypatch.setattr(statistics, "Reach", lambda *_: None)
        metric = build_metric(args, Reading(args).gt, torch.device("cpu"))
        if thresholds is not None:
            metric = type(metric)(iou_type=iou_type, iou_thresholds=thresholds, class_metrics=True)
        for _, preds, targets in batches(Reading(args), args, torch.device("cpu")):
            metric.update(preds, targets)
        values.append(metric.compute())
    assert values[0].keys() == values[1].keys()
    for key in values[0]:
        assert torch.equal(values[0][key], values[1][key]), key
