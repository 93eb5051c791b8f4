"""Mask counts from runs (no drawing) equal the counts from drawn bands and from dense masks, integer for integer."""

from __future__ import annotations

import pytest
import torch

from nobg_metrics.functional.instance.crops import crop_counts
from nobg_metrics.functional.instance.run_counts import given_as_runs, run_counts
from nobg_metrics.ops.row_bands import RowBands
from nobg_metrics.ops.run_overlap import run_intersections


def _runs(masks: torch.Tensor) -> RowBands:
    """The row-major runs of an :math:`(N, H, W)` bool stack as run-backed bands."""
    count, height, width = masks.shape
    flat = torch.nn.functional.pad(masks.reshape(count, height * width).to(torch.int8), (1, 1))
    edges = flat[:, 1:] - flat[:, :-1]
    starts, stops = torch.nonzero(edges == 1), torch.nonzero(edges == -1)
    return RowBands.from_runs(starts[:, 0], starts[:, 1], stops[:, 1], count, height, width)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counts_from_runs_equal_counts_from_dense_masks(seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    dets, gts, det_labels, gt_labels = [], [], [], []
    for n, m in ((6, 4), (0, 3), (5, 0), (7, 2)):
        density = float(torch.rand(1, generator=generator))
        det = torch.rand((n, 19, 13), generator=generator) > density
        gt = torch.rand((m, 19, 13), generator=generator) > 0.6
        det[:, :, : int(torch.randint(0, 13, (1,), generator=generator))] = False  # masks of several extents
        if n > 1:
            det[1] = False  # an empty mask among full ones
        dets.append(det)
        gts.append(gt)
        det_labels.append(torch.randint(0, 3, (n,), generator=generator))
        gt_labels.append(torch.randint(0, 3, (m,), generator=generator))
    runs_dets, runs_gts = [_runs(d) for d in dets], [_runs(g) for g in gts]
    assert given_as_runs(runs_dets) and given_as_runs(runs_gts)
    for index, det in enumerate(dets):
        assert torch.equal(runs_dets[index].dense(), det)
    for all_pairs in (False, True):
        dense = crop_counts(dets, gts, det_labels, gt_labels, all_pairs, None)
        from_runs = run_counts(runs_dets, runs_gts, det_labels, gt_labels, all_pairs)
        dispatched = crop_counts(runs_dets, runs_gts, det_labels, gt_labels, all_pairs, None)
        for want, got, again in zip(dense, from_runs, dispatched):
            for key in ("det_area", "gt_area", "inter"):
                assert torch.equal(want[key], got[key]) and torch.equal(want[key], again[key]), key
        for ratio in (0.05,):  # boundaries: the runs are drawn into bands first
            for want, got in zip(crop_counts(dets, gts, det_labels, gt_labels, all_pairs, ratio),
                                 crop_counts(runs_dets, runs_gts, det_labels, gt_labels, all_pairs, ratio)):
                assert all(torch.equal(want[key], got[key]) for key in want)


def test_run_bands_select_and_slice_as_dense_masks() -> None:
    generator = torch.Generator().manual_seed(3)
    masks = torch.rand((6, 9, 7), generator=generator) > 0.7
    masks[2] = False
    bands = _runs(masks)
    keep = torch.tensor([True, False, True, True, False, True])
    assert torch.equal(bands[keep].dense(), masks[keep])
    assert torch.equal(bands[2:5].dense(), masks[2:5]) and torch.equal(bands[:0].dense(), masks[:0])
    assert bands.nonempty().tolist() == masks.flatten(1).any(1).tolist()
    assert torch.equal(bands.rows, RowBands.from_dense(masks).rows)


def test_intersections_count_only_the_pairs_asked_for() -> None:
    a = (torch.tensor([0, 0, 1]), torch.tensor([0, 6, 3]), torch.tensor([4, 9, 5]))
    b = (torch.tensor([0]), torch.tensor([2]), torch.tensor([7]))
    assert run_intersections(a, b, torch.tensor([1, 0]), torch.tensor([0, 0]), 10).tolist() == [2, 3]
    assert run_intersections(a, b, torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64),
                             10).tolist() == []
