"""Masks drawn from their runs into strips, and eroded there, equal the dense masks and their erosion, bit for bit;
the boundary counts of run-backed masks equal those of the same masks given dense."""

from __future__ import annotations

import pytest
import torch

from nobg_metrics.functional.instance.crops import crop_counts
from nobg_metrics.ops import run_strips
from nobg_metrics.ops.morphology import erode, pack_bits
from nobg_metrics.ops.row_bands import RowBands


def _runs(masks: torch.Tensor, generator: torch.Generator) -> RowBands:
    """Run-backed bands of an :math:`(N, H, W)` bool stack, some runs cut into pieces that meet end to start."""
    count, height, width = masks.shape
    flat = torch.nn.functional.pad(masks.reshape(count, height * width).to(torch.int8), (1, 1))
    edges = flat[:, 1:] - flat[:, :-1]
    starts, stops = torch.nonzero(edges == 1), torch.nonzero(edges == -1)
    owner, start, stop = starts[:, 0], starts[:, 1], stops[:, 1]
    cut = (stop - start > 1) & (torch.rand(owner.shape, generator=generator) < 0.3)
    middle = (start + stop) // 2
    owner = torch.cat([owner, owner[cut]])
    start, stop = torch.cat([start, middle[cut]]), torch.cat([torch.where(cut, middle, stop), stop[cut]])
    order = torch.argsort(owner * (height * width + 1) + start)
    return RowBands.from_runs(owner[order], start[order], stop[order], count, height, width)


def _masks(generator: torch.Generator, count: int, height: int, width: int) -> torch.Tensor:
    """Rectangles with holes, some touching the image's edges, some empty."""
    out = torch.zeros((count, height, width), dtype=torch.bool)
    for k in range(count):
        if float(torch.rand(1, generator=generator)) < 0.15:
            continue
        y0, x0 = (int(torch.randint(0, s, (1,), generator=generator)) for s in (height, width))
        y1 = int(torch.randint(y0, height + 1, (1,), generator=generator))
        x1 = int(torch.randint(x0, width + 1, (1,), generator=generator))
        out[k, y0:y1, x0:x1] = torch.rand((y1 - y0, x1 - x0), generator=generator) < 0.95
    return out


@pytest.mark.parametrize(("height", "width", "radius"), [(23, 150, 2), (40, 70, 0), (9, 200, 4), (30, 64, 20)])
def test_strips_equal_the_dense_masks_and_their_erosion(height: int, width: int, radius: int) -> None:
    generator = torch.Generator().manual_seed(height + width)
    masks = _masks(generator, 6, height, width)
    bands = _runs(masks, generator)
    assert bands.runs is not None
    owner, row, low, high = run_strips.row_runs(*bands.runs, width)
    layout = run_strips.strip_layout(owner, low, high, torch.tensor(bands.tops), torch.tensor(bands.bottoms))
    drawn = run_strips.draw(owner, row, low, high, layout)
    eroded = run_strips.erode(owner, row, low, high, layout, radius)
    assert drawn.shape == eroded.shape == (layout.total,)
    for expected, got in ((pack_bits([masks]), drawn), (pack_bits([erode(masks, radius)]), eroded)):
        for k in range(masks.shape[0]):
            top, length = int(layout.top[k]), int(layout.length[k])
            first, words = int(layout.first[k]), int(layout.words[k])
            if length == 0:
                assert not bool(expected[k].any())
                continue
            rows, word = torch.arange(top, top + length - 1), torch.arange(first, first + words)
            at = layout.index(torch.full((rows.numel() * words,), k), rows.repeat(words),
                              word.repeat_interleave(rows.numel()))
            assert torch.equal(got[at], expected[k][rows.repeat(words), word.repeat_interleave(rows.numel())])
            outside = expected[k].clone()
            outside[top:top + length - 1, first:first + words] = 0
            assert not bool(outside.any())
    assert int(drawn.count_nonzero()) == int(pack_bits([masks]).count_nonzero())  # nothing drawn elsewhere


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("all_pairs", [False, True])
def test_boundary_counts_from_runs_equal_counts_from_dense_masks(seed: int, all_pairs: bool) -> None:
    generator = torch.Generator().manual_seed(seed)
    height, width = (int(torch.randint(2, 90, (1,), generator=generator)) for _ in range(2))
    width *= 2
    dets, gts, det_labels, gt_labels = [], [], [], []
    for n, m in ((5, 3), (0, 2), (4, 0), (6, 4)):
        dets.append(_masks(generator, n, height, width))
        gts.append(_masks(generator, m, height, width))
        det_labels.append(torch.randint(0, 2, (n,), generator=generator))
        gt_labels.append(torch.randint(0, 2, (m,), generator=generator))
    for ratio in (0.02, 0.1, 0.4):
        dense = crop_counts(dets, gts, det_labels, gt_labels, all_pairs, ratio)
        runs = crop_counts([_runs(d, generator) for d in dets], [_runs(g, generator) for g in gts], det_labels,
                           gt_labels, all_pairs, ratio)
        for expected, got in zip(dense, runs):
            assert expected.keys() == got.keys()
            for key in expected:
                assert torch.equal(expected[key], got[key]), key
