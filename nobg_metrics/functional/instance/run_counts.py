"""Mask pixel counts of the images of one size from the masks' runs: no drawing, no bit packing (the CPU path of
``iou_type="segm"`` where the masks came as runs, :meth:`~nobg_metrics.ops.row_bands.RowBands.from_runs`).

The same counts as :func:`~nobg_metrics.functional.instance.crops.crop_counts` (exact integers): areas are the
summed run lengths; the pairs counted are those of one image whose bands share rows (and, unless ``all_pairs``,
whose categories are equal: any other pair intersects in nothing or is never compared), all images' pairs at once
(:func:`~nobg_metrics.ops.run_overlap.run_intersections`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.functional.instance.iou import Reach, reachable
from nobg_metrics.ops.row_bands import RowBands
from nobg_metrics.ops.run_overlap import run_areas, run_intersections


def given_as_runs(stacks: list) -> bool:
    """Whether every stack is :class:`~nobg_metrics.ops.row_bands.RowBands` holding its runs."""
    return all(isinstance(stack, RowBands) and stack.runs is not None for stack in stacks)


def _joined(stacks: list[RowBands]) -> tuple[tuple[Tensor, Tensor, Tensor], list[int]]:
    """The runs of every image's masks, owners numbered across the images, and each image's mask count."""
    counts = [len(stack.tops) for stack in stacks]
    owners, starts, stops, offset = [], [], [], 0
    for stack, count in zip(stacks, counts):
        assert stack.runs is not None
        owner, start, stop = stack.runs
        owners.append(owner + offset)
        starts.append(start)
        stops.append(stop)
        offset += count
    return (torch.cat(owners), torch.cat(starts), torch.cat(stops)), counts


def _areas(stacks: list[RowBands], runs: tuple[Tensor, Tensor, Tensor], count: int) -> Tensor:
    """The masks' pixel counts: as the reader gave them, or summed from the runs."""
    given = [stack.areas for stack in stacks]
    if all(areas is not None for areas in given):
        return torch.cat(given) if given else torch.zeros(0, dtype=torch.int64)  # type: ignore[arg-type]
    return run_areas(*runs, count)


def run_tables(dets: list[RowBands], gts: list[RowBands], det_labels: list[Tensor], gt_labels: list[Tensor],
               all_pairs: bool, reach: Reach | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`run_counts` as the areas of all images' masks, concatenated, :math:`(\\sum N,)` / :math:`(\\sum M,)`
    int64, and the intersections as one :math:`(B, \\max N, \\max M)` int64 table (zero-padded)."""
    det_runs, det_counts = _joined(dets)
    gt_runs, gt_counts = _joined(gts)
    det_area, gt_area = _areas(dets, det_runs, sum(det_counts)), _areas(gts, gt_runs, sum(gt_counts))
    det_top = torch.tensor([t for stack in dets for t in stack.tops], dtype=torch.int64)
    det_bottom = torch.tensor([b for stack in dets for b in stack.bottoms], dtype=torch.int64)
    gt_top = torch.tensor([t for stack in gts for t in stack.tops], dtype=torch.int64)
    gt_bottom = torch.tensor([b for stack in gts for b in stack.bottoms], dtype=torch.int64)
    # every (detection, gt) pair of one image, then those whose bands share rows (and category)
    images, dmax, gmax = len(dets), max(det_counts), max(gt_counts)
    n, m = torch.tensor(det_counts, dtype=torch.int64), torch.tensor(gt_counts, dtype=torch.int64)
    det_offset, gt_offset = n.cumsum(0) - n, m.cumsum(0) - m
    image = torch.repeat_interleave(torch.arange(images), n * m)
    within = torch.arange(image.numel()) - ((n * m).cumsum(0) - n * m)[image]
    d_local, g_local = within // m[image].clamp(min=1), within % m[image].clamp(min=1)
    d, g = det_offset[image] + d_local, gt_offset[image] + g_local
    low, high = torch.maximum(det_top[d], gt_top[g]), torch.minimum(det_bottom[d], gt_bottom[g])
    keep = high > low
    if not all_pairs:
        keep &= torch.cat(det_labels)[d] == torch.cat(gt_labels)[g]
    if reach is not None:  # pairs whose IoU cannot reach the lowest threshold: not counted (0)
        keep &= reachable(det_area[d], gt_area[g], torch.cat(reach.gt_crowd)[g], reach.floor)
    chosen = keep.nonzero()[:, 0]
    row = gts[0].width  # positions per row: pairs share nothing outside the rows both occupy
    inter = run_intersections(det_runs, gt_runs, d[chosen], g[chosen], gts[0].height * row,
                              (low[chosen] * row, high[chosen] * row))
    table = torch.zeros((images, dmax, gmax), dtype=torch.int64)
    table.index_put_((image[chosen], d_local[chosen], g_local[chosen]), inter)
    return det_area, gt_area, table


def run_counts(dets: list[RowBands], gts: list[RowBands], det_labels: list[Tensor], gt_labels: list[Tensor],
               all_pairs: bool, reach: Reach | None = None) -> list[dict[str, Tensor]]:
    """Mask pixel counts of the images of one size, from runs (module notes).

    Args:
        dets, gts: per image :class:`~nobg_metrics.ops.row_bands.RowBands` of :math:`N` and :math:`M` masks, each
            holding its runs (:func:`given_as_runs`).
        det_labels, gt_labels: per image :math:`(N,)` and :math:`(M,)` int64.
        all_pairs: count every pair sharing rows (micro average), not only those of one category.
        reach: leave out the pairs whose IoU cannot reach ``reach.floor``
            (:class:`~nobg_metrics.functional.instance.iou.Reach`: their ``inter`` is 0); ``None``: count all.

    Returns:
        Per image ``{"det_area", "gt_area"}`` :math:`(N,)` / :math:`(M,)` int64 and ``"inter"`` :math:`(N, M)`
        int64.

    Examples:
        >>> det = RowBands.from_runs(torch.tensor([0, 0]), torch.tensor([0, 6]), torch.tensor([4, 9]), 1, 2, 5)
        >>> gt = RowBands.from_runs(torch.tensor([0]), torch.tensor([2]), torch.tensor([7]), 1, 2, 5)
        >>> counts = run_counts([det], [gt], [torch.tensor([1])], [torch.tensor([1])], False)[0]
        >>> counts["det_area"].tolist(), counts["gt_area"].tolist(), counts["inter"].tolist()
        ([7], [5], [[3]])
    """
    det_area, gt_area, table = run_tables(dets, gts, det_labels, gt_labels, all_pairs, reach)
    det_counts, gt_counts = [len(stack.tops) for stack in dets], [len(stack.tops) for stack in gts]
    results, lo_d, lo_g = [], 0, 0
    for index, (n, m) in enumerate(zip(det_counts, gt_counts)):
        results.append({"det_area": det_area[lo_d:lo_d + n], "gt_area": gt_area[lo_g:lo_g + m],
                        "inter": table[index, :n, :m]})
        lo_d, lo_g = lo_d + n, lo_g + m
    return results
