"""The ``"fixed"`` form of the HCE region effort (:func:`nobg_metrics.functional.sod.hce_regions.region_effort`): kept
points, runs, the first/last-run merge and Douglas–Peucker on padded lists whose sizes come from the frame
(B, H, W) only. No host read.

The same procedure as the ``"data_sized"`` form in :mod:`nobg_metrics.functional.sod.hce_regions` (read that first), on
the list of the ``"fixed"`` :func:`~nobg_metrics.ops.contours.find_contours` (``S = 8 B (H+2) (W+2)`` entries, the
real points first; the polylines then fit in ``B H W`` slots, a pixel being kept at most once). What changes:

- lists keep their length ``S``: a dropped entry is masked (``real``), never removed; a compaction is a scatter to
  ``cumsum`` positions; per-run and per-contour tables have ``S + 1`` slots (the last a sink);
- Douglas–Peucker is the ``"fixed"`` :func:`~nobg_metrics.ops.polyline.approx_poly_dp_open`: a fixed number of
  levels, then a test that flags the image (``exhausted``) when they were too few. Its default,
  :data:`~nobg_metrics.ops.polyline.DP_LEVELS`, is far above what real boundaries need (measured: docs/hce.md,
  "Without host syncs").
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.ops.contours import find_contours
from nobg_metrics.ops.polyline import approx_poly_dp_open


def region_effort_fixed(region: Tensor, condition: Tensor, epsilon: float, dis_flags: bool = False,
                        levels: int | None = None) -> tuple[Tensor, Tensor]:
    """The ``"fixed"`` form of :func:`~nobg_metrics.functional.sod.hce_regions.region_effort` (call that): no host read.

    Args:
        region: :math:`(B, H, W)` bool; condition: :math:`(B, H, W)` bool (already dilated).
        epsilon: Douglas–Peucker tolerance; dis_flags: the DIS tool's flag sizing; levels: DP levels (default
            :data:`~nobg_metrics.ops.polyline.DP_LEVELS`).

    Returns:
        ``(effort, exhausted)``: :math:`(B,)` int64 and :math:`(B,)` bool (the DP budget was short there).

    Examples:
        >>> region = torch.zeros(1, 9, 9, dtype=torch.bool); region[0, 2:7, 2:7] = True
        >>> condition = torch.zeros_like(region); condition[0, :, :5] = True
        >>> region_effort_fixed(region, condition, 2.0)  # == region_effort(region, condition, 2.0)
        (tensor([3]), tensor([False]))
    """
    count, height, width = region.shape
    device = region.device
    found = find_contours(region, engine="fixed")
    x, y = found.points.unbind(1)
    size = found.real.numel()
    index = torch.arange(size, device=device)
    pixel = torch.where(found.real, (found.image * height + y) * width + x, count * height * width)
    # kept = condition & first occurrence of the pixel over the image's contour list
    first_seen = torch.full((count * height * width + 1,), size, dtype=torch.int64, device=device)
    first_seen = first_seen.scatter_reduce(0, pixel, index, "amin")
    condition_flat = torch.cat([condition.reshape(-1), condition.new_zeros(1)])
    kept = found.real & condition_flat[pixel] & (first_seen[pixel] == index)
    # independent regions: components with no kept point (the first kept point of each component counts it); a
    # component's id over the batch: image · (H W + 1) + its label (>= 1), below S
    component = torch.where(kept, found.image * (height * width + 1) + found.component, 0)
    first_kept = torch.full((int(component.numel()) + 1,), size, dtype=torch.int64, device=device)
    first_kept = first_kept.scatter_reduce(0, component.clamp(max=size), index, "amin")
    touches = kept & (first_kept[component.clamp(max=size)] == index)
    touched = torch.zeros(count + 1, dtype=torch.int64, device=device).index_add(0, found.image, touches.long())
    independent = found.components - touched[:count]
    if dis_flags:
        independent = torch.where(region.flatten(1).all(dim=1), 0, independent)
    # runs of consecutive kept points within a contour; per contour its first and last run
    same_contour = torch.cat([kept.new_zeros(1), found.contour[1:] == found.contour[:-1]])
    previous_kept = torch.cat([kept.new_zeros(1), kept[:-1]])
    run_of = torch.cumsum(kept & (~previous_kept | ~same_contour), 0) - 1
    contour_of = found.contour
    slot = torch.where(kept, contour_of, size)
    first_index = torch.full((size + 1,), size, dtype=torch.int64, device=device).scatter_reduce(0, slot, index, "amin")
    last_index = torch.full((size + 1,), -1, dtype=torch.int64, device=device).scatter_reduce(0, slot, index, "amax")
    first_index, last_index = first_index.clamp(max=size - 1), last_index.clamp(min=0)
    first_run, last_run = run_of[first_index], run_of[last_index]
    gap = torch.maximum((x[first_index] - x[last_index]).abs(), (y[first_index] - y[last_index]).abs())
    merge = (last_run > first_run) & (gap == 1)  # >= 2 runs, ends 8-adjacent (contours with no kept point: equal)
    run_length = torch.zeros(size + 1, dtype=torch.int64, device=device).index_add(
        0, torch.where(kept, run_of, size), torch.ones(size, dtype=torch.int64, device=device))
    # compaction, with a merged contour's first run moved, reversed, after its last run
    rank = torch.cumsum(kept, 0) - 1
    c = contour_of.clamp(0, size)
    moved = kept & merge[c] & (run_of == first_run[c])
    block_start, block_end = rank[first_index][c], rank[last_index][c]
    target = torch.where(moved, block_end - (rank - block_start),
                         torch.where(merge[c], rank - run_length[first_run[c]], rank))
    # a pixel is kept at most once (its first occurrence): the polylines fit in B·H·W slots
    slots = count * height * width
    target = torch.where(kept, target, slots)
    polyline = torch.where(moved, last_run[c], run_of)

    def placed(values: Tensor, fill: int) -> Tensor:
        return torch.full((slots + 1,), fill, dtype=values.dtype, device=device).scatter(0, target, values)[:slots]

    real = torch.arange(slots, device=device) < kept.sum()
    points = torch.stack([placed(x, 0), placed(y, 0)], dim=1)
    line = placed(polyline, -1)
    image = torch.where(real, placed(found.image, count), count)
    first = ~real | torch.cat([real.new_ones(1), line[1:] != line[:-1]])
    keep, exhausted = approx_poly_dp_open(points, first, epsilon, real=real, engine="fixed", levels=levels)
    control = torch.zeros(count + 1, dtype=torch.int64, device=device).index_add(0, image, keep.long())[:count]
    short = torch.zeros(count + 1, dtype=torch.int64, device=device).index_add(0, image, exhausted.long())[:count]
    return control + independent, short > 0
