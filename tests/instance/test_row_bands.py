"""Masks decoded into their row bands (the CPU path of ``nobg-metrics instances``) give exactly what the dense
full-frame masks give: the same pixels, and the same AP values bit for bit, on generated COCO / LVIS files."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch

from nobg_metrics.cli.instances.run import build_metric, image_inputs
from nobg_metrics.functional.instance.crops import crop_counts
from nobg_metrics.io.coco.annotations import load_ground_truth
from nobg_metrics.io.coco.masks import segmentation_bands, segmentation_masks
from nobg_metrics.io.coco.results import load_results
from nobg_metrics.ops.row_bands import RowBands
from tests.cli.instances.instances_data import make_dataset, write_dataset

CPU = torch.device("cpu")


def _files(tmp_path: Path, seed: int, lvis: bool, with_bbox: bool) -> tuple[Path, Path]:
    gt, results = make_dataset(seed, lvis=lvis, with_bbox=with_bbox, ignore=seed % 2 == 1)
    return write_dataset(tmp_path / f"{seed}-{lvis}-{with_bbox}", gt, results)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bands_hold_the_dense_pixels(tmp_path: Path, seed: int) -> None:
    gt_path, dt_path = _files(tmp_path, seed, False, False)
    gt = load_ground_truth(gt_path)
    results = load_results(dt_path, gt)
    for image in gt.images:
        segmentations = [ann["segmentation"] for _, ann in image.annotations]
        segmentations += [d.segmentation for d in results.per_image.get(image.id, [])]
        dense = segmentation_masks(segmentations, image.height, image.width, transposed=True)
        bands = segmentation_bands(segmentations, image.height, image.width)
        assert bands.shape == dense.shape
        assert torch.equal(bands.dense(), dense)
        again = RowBands.from_dense(dense)
        assert (again.tops, again.bottoms) == (bands.tops, bands.bottoms)
        assert torch.equal(again.rows, bands.rows)
        half = len(segmentations) // 2
        assert torch.equal(bands[:half].dense(), dense[:half]) and torch.equal(bands[half:].dense(), dense[half:])


def test_counts_from_bands_equal_counts_from_dense_masks() -> None:
    generator = torch.Generator().manual_seed(0)
    dets = [torch.rand((5, 23, 17), generator=generator) > 0.7, torch.zeros((3, 23, 17), dtype=torch.bool)]
    gts = [torch.rand((4, 23, 17), generator=generator) > 0.8, torch.rand((2, 23, 17), generator=generator) > 0.5]
    dets[0][1] = False  # an empty mask among full ones
    det_labels = [torch.tensor([1, 1, 2, 1, 2]), torch.tensor([1, 2, 1])]
    gt_labels = [torch.tensor([1, 2, 2, 1]), torch.tensor([1, 2])]
    for all_pairs in (False, True):
        for ratio in (None, 0.05):
            dense = crop_counts(dets, gts, det_labels, gt_labels, all_pairs, ratio)
            banded = crop_counts([RowBands.from_dense(d) for d in dets], [RowBands.from_dense(g) for g in gts],
                                 det_labels, gt_labels, all_pairs, ratio)
            mixed = crop_counts([dets[0], RowBands.from_dense(dets[1])], [RowBands.from_dense(gts[0]), gts[1]],
                                det_labels, gt_labels, all_pairs, ratio)
            for one, two, three in zip(dense, banded, mixed):
                assert one.keys() == two.keys() == three.keys()
                for key in one:
                    assert torch.equal(one[key], two[key]) and torch.equal(one[key], three[key]), key


def _values(gt_path: Path, dt_path: Path, iou_type: str, lvis: bool, dense: bool) -> dict[str, torch.Tensor]:
    args = argparse.Namespace(iou_type=iou_type, dilation_ratio=0.02, lvis=lvis, max_dets=None)
    gt = load_ground_truth(gt_path, lvis=lvis)
    results = load_results(dt_path, gt, lvis=lvis)
    metric = build_metric(args, gt, CPU)
    preds, targets = [], []
    for image in gt.images:
        pred, target = image_inputs(gt, image, results.per_image.get(image.id, []), results, CPU, lvis,
                                    transposed=True, bands=True)
        assert isinstance(pred["masks"], RowBands) and isinstance(target["masks"], RowBands)
        if dense:
            pred["masks"], target["masks"] = pred["masks"].dense(), target["masks"].dense()
        preds.append(pred)
        targets.append(target)
    metric.update(preds[:2], targets[:2])
    metric.update(preds[2:], targets[2:])
    return metric.compute()


@pytest.mark.parametrize(("iou_type", "lvis", "with_bbox"), [("segm", False, True), ("boundary", False, False),
                                                              ("boundary", True, False), ("segm", True, True)])
def test_ap_from_bands_equals_ap_from_dense_masks(tmp_path: Path, iou_type: str, lvis: bool, with_bbox: bool) -> None:
    for seed in (3, 4):
        gt_path, dt_path = _files(tmp_path, seed, lvis, with_bbox)
        banded = _values(gt_path, dt_path, iou_type, lvis, dense=False)
        dense = _values(gt_path, dt_path, iou_type, lvis, dense=True)
        assert banded.keys() == dense.keys()
        for key in banded:
            assert torch.equal(banded[key], dense[key]), key
