"""The per-image core of the Human Correction Effort: relaxed error regions and their control points.

Reference: PySODMetrics 1.6.2 ``HumanCorrectionEffortMeasure.cal_hce`` / ``filter_conditional_boundary`` /
``count_polygon_control_points`` and the DIS authors' ``IS-Net/hce_metric_main.py`` ``relax_HCE`` /
``filter_bdy_cond`` / ``approximate_RDP`` (Qin et al., "Highly Accurate Dichotomous Image Segmentation",
ECCV 2022); both are the same procedure once the prediction is binarised (see :mod:`nobg_metrics.functional.sod.hce`).
Every step works on the whole ``(B, H, W)`` group at once; the reference's per-contour, per-point Python
loops become a first-occurrence test, run boundaries and one batched Douglas–Peucker.

Two forms, one switch (``engine`` of :func:`hce_counts` and :func:`region_effort`,
:data:`~nobg_metrics.ops.host_reads.Engine`): ``"data_sized"`` (this module: lists sized by the data, the CPU crop
to the box of what is set; host reads) and ``"fixed"`` (:mod:`nobg_metrics.functional.sod.hce_regions_fixed`: full
frames, padded lists, fixed rounds; no host read, a Douglas–Peucker budget that may be short, flagged). The ops
below take the same switch.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.functional.sod.hce_regions_fixed import region_effort_fixed
from nobg_metrics.ops import host_reads
from nobg_metrics.ops.contours import find_contours
from nobg_metrics.ops.cross_morphology import cross_dilate, cross_erode
from nobg_metrics.ops.polyline import approx_poly_dp_open


def hce_counts(pred: Tensor, gt: Tensor, skeleton: Tensor, relax: int, epsilon: float, dis_flags: bool = False, *,
               engine: host_reads.Engine = "auto", dp_levels: int | None = None) -> tuple[Tensor, Tensor]:
    """Per-image HCE of binarised maps: FP points + FP independent regions + FN points + FN independent regions.

    Args:
        pred: :math:`(B, H, W)` bool, the binarised prediction ``P``.
        gt: :math:`(B, H, W)` bool.
        skeleton: :math:`(B, H, W)` bool, the gt skeleton (``skimage.morphology.skeletonize(gt)`` or a cached one).
        relax: relaxation rounds (5); epsilon: Douglas–Peucker tolerance (2.0).
        dis_flags: count independent regions as the DIS tool does (see :func:`region_effort`).
        engine: ``"data_sized"``, ``"fixed"`` or ``"auto"`` (module notes).
        dp_levels: the ``"fixed"`` form's Douglas–Peucker levels (default
            :data:`~nobg_metrics.ops.polyline.DP_LEVELS`).

    Returns:
        ``(counts, exhausted)``: :math:`(B,)` int64 and :math:`(B,)` bool — the ``"fixed"`` form's Douglas–Peucker
        budget was short for that image (its count is not the reference's); all False from ``"data_sized"``.

    Examples:
        >>> gt = torch.zeros(1, 30, 30, dtype=torch.bool); gt[0, 4:26, 4:26] = True
        >>> pred = gt.clone(); pred[0, 12:15, 12:15] = False  # a hole in the object: one click
        >>> skeleton = torch.zeros_like(gt); skeleton[0, 15, 6:24] = True
        >>> hce_counts(pred, gt, skeleton, 5, 2.0), hce_counts(pred, gt, skeleton, 5, 2.0, engine="fixed")
        ((tensor([1]), tensor([False])), (tensor([1]), tensor([False])))
    """
    count = gt.shape[0]
    if host_reads.resolve_engine(engine, gt) == "fixed":
        tp, fp_relaxed, fn_relaxed = _relaxed_errors(pred, gt, skeleton, relax)
        regions = torch.cat([fp_relaxed, fn_relaxed])  # both regions of every image traced in one call
        conditions = torch.cat([cross_dilate(tp | fn_relaxed), cross_dilate(~(tp | fp_relaxed | fn_relaxed))])
        effort, exhausted = region_effort(regions, conditions, epsilon, dis_flags, engine="fixed", dp_levels=dp_levels)
        return effort.view(2, count).sum(dim=0), exhausted.view(2, count).any(dim=0)
    exhausted = torch.zeros(count, dtype=torch.bool, device=gt.device)
    # on CPU: the box of everything that is set, plus relax + 1 pixels (clipped at the image edge). Outside it all is
    # background; inside, every set pixel is farther than relax from a cut edge, so the erosion (whose outside reads
    # as foreground) and the dilations give the same values there. Elsewhere the whole frame (window reads nothing).
    box = host_reads.window(gt | pred | skeleton, relax + 1)
    if box.rows.stop == box.rows.start:
        return torch.zeros(count, dtype=torch.int64, device=gt.device), exhausted
    pred, gt, skeleton = pred[box.crop], gt[box.crop], skeleton[box.crop]
    tp, fp_relaxed, fn_relaxed = _relaxed_errors(pred, gt, skeleton, relax)
    # condition_FP = TP | FN_; condition_FN = 1 - (TP | FP_ | FN_); each dilated inside filter_conditional_boundary
    fp_effort = _region_effort_data_sized(fp_relaxed, cross_dilate(tp | fn_relaxed), epsilon, dis_flags)
    fn_effort = _region_effort_data_sized(fn_relaxed, cross_dilate(~(tp | fp_relaxed | fn_relaxed)), epsilon,
                                          dis_flags)
    return fp_effort + fn_effort, exhausted


def _relaxed_errors(pred: Tensor, gt: Tensor, skeleton: Tensor, relax: int) -> tuple[Tensor, Tensor, Tensor]:
    """``(TP, FP_, FN_)``: the true positives and the relaxed error regions (all :math:`(B, H, W)` bool)."""
    # TP = gt & pred; FP = pred ^ TP; FN = gt ^ TP
    tp, fp, fn = gt & pred, pred & ~gt, gt & ~pred
    # eroded_union = cv2.erode(union, disk(1), iterations=relax)
    eroded_union = cross_erode(gt | pred, relax)
    # FP_ = FP & eroded_union; relax x (FP_ = dilate(FP_) & ~gt); FP_ = FP & FP_
    fp_relaxed = fp & eroded_union
    for _ in range(relax):
        fp_relaxed = cross_dilate(fp_relaxed) & ~gt
    fp_relaxed = fp & fp_relaxed
    # FN_ = FN & eroded_union; relax x (FN_ = dilate(FN_) & ~pred); FN_ = FN & FN_; FN_ |= skel ^ (TP & skel)
    fn_relaxed = fn & eroded_union
    for _ in range(relax):
        fn_relaxed = cross_dilate(fn_relaxed) & ~pred
    fn_relaxed = (fn & fn_relaxed) | (skeleton & ~tp)
    return tp, fp_relaxed, fn_relaxed


def region_effort(region: Tensor, condition: Tensor, epsilon: float, dis_flags: bool = False, *,
                  engine: host_reads.Engine = "auto", dp_levels: int | None = None) -> tuple[Tensor, Tensor]:
    """Control points of the boundary runs that touch ``condition`` plus the regions no run touches.

    The reference walks ``cv2.findContours(region, RETR_TREE, CHAIN_APPROX_NONE)`` in order with one
    visited map: a point is kept if ``condition`` holds there and no earlier kept point had its pixel
    (so: the first occurrence of a ``condition`` pixel over all contours of the image); consecutive kept
    points form runs; when a contour has >= 2 runs and its first run's first point is 8-adjacent to its
    last run's last point, the first run, reversed, is appended to the last. Each run counts
    ``len(cv2.approxPolyDP(run, epsilon, False))`` points; each 8-connected component of ``region`` with no
    kept point counts 1 — PySODMetrics sizes its flags ``labels.max() + 1``; the DIS tool sizes them
    ``len(np.unique(labels))``, which for a region covering the whole image (one component, no background)
    leaves that component without a flag: it counts 0 (``dis_flags``; the tool raises ``IndexError`` if a
    point of it is kept, where both rules give 0 anyway).

    Args:
        region: :math:`(B, H, W)` bool (``FP_`` or ``FN_``).
        condition: :math:`(B, H, W)` bool, already dilated.
        epsilon: Douglas–Peucker tolerance.
        dis_flags: the DIS tool's flag sizing (above).
        engine: ``"data_sized"``, ``"fixed"`` or ``"auto"`` (module notes).
        dp_levels: the ``"fixed"`` form's Douglas–Peucker levels (default
            :data:`~nobg_metrics.ops.polyline.DP_LEVELS`).

    Returns:
        ``(effort, exhausted)``: :math:`(B,)` int64 and :math:`(B,)` bool (the ``"fixed"`` form's Douglas–Peucker
        budget was short there; all False from ``"data_sized"``).

    Examples:
        >>> region = torch.zeros(1, 9, 9, dtype=torch.bool); region[0, 2:7, 2:7] = True
        >>> condition = torch.zeros_like(region); condition[0, :, :5] = True
        >>> region_effort(region, condition, 2.0), region_effort(region, condition, 2.0, engine="fixed")
        ((tensor([3]), tensor([False])), (tensor([3]), tensor([False])))
    """
    if host_reads.resolve_engine(engine, region) == "fixed":
        return region_effort_fixed(region, condition, epsilon, dis_flags, dp_levels)
    effort = _region_effort_data_sized(region, condition, epsilon, dis_flags)
    return effort, torch.zeros(effort.shape, dtype=torch.bool, device=effort.device)


def _region_effort_data_sized(region: Tensor, condition: Tensor, epsilon: float, dis_flags: bool) -> Tensor:
    """The ``"data_sized"`` form of :func:`region_effort`: :math:`(B,)` int64."""
    count, height, width = region.shape
    device = region.device
    found = find_contours(region, engine="data_sized")  # no padding: every entry is a point
    points, contour_of_point, image_of_point = found.points, found.contour, found.image
    total = points.shape[0]
    pixel = (image_of_point * height + points[:, 1]) * width + points[:, 0]
    # kept = condition & first occurrence of the pixel (visited_map over all contours of the image)
    order = torch.arange(total, device=device)
    first_seen = torch.full((count * height * width,), total, dtype=torch.int64, device=device)
    first_seen = first_seen.scatter_reduce(0, pixel, order, "amin")
    kept = condition.reshape(-1)[pixel] & (first_seen[pixel] == order)
    # independent regions: components of the region without a kept point (labels: skimage.measure.label)
    per_image_max = found.components
    offsets = torch.cumsum(per_image_max, 0) - per_image_max
    touched = torch.zeros(int(per_image_max.sum()) + 1, dtype=torch.bool, device=device)
    touched[found.component[kept] + offsets[image_of_point[kept]]] = True
    independent = per_image_max - _touched_components(touched, offsets, per_image_max)
    if dis_flags:
        independent = torch.where(region.flatten(1).all(dim=1), 0, independent)
    # runs of consecutive kept points within a contour
    starts_run = kept & torch.cat([torch.ones(1, dtype=torch.bool, device=device),
                                   ~kept[:-1] | (contour_of_point[1:] != contour_of_point[:-1])])
    run_of_point = torch.cumsum(starts_run, 0) - 1
    kept_index = torch.nonzero(kept).flatten()
    if kept_index.numel() == 0:
        return independent
    run = run_of_point[kept_index]
    runs = int(run[-1]) + 1
    run_length = torch.bincount(run, minlength=runs)
    run_first = torch.cumsum(run_length, 0) - run_length  # in kept_index positions
    run_contour = contour_of_point[kept_index[run_first]]
    # per contour: its first and last run; merge when >= 2 runs and the ends are 8-adjacent
    contours = int(contour_of_point[-1]) + 1
    first_run = torch.full((contours,), runs, dtype=torch.int64, device=device).scatter_reduce(
        0, run_contour, torch.arange(runs, device=device), "amin")
    last_run = torch.full((contours,), -1, dtype=torch.int64, device=device).scatter_reduce(
        0, run_contour, torch.arange(runs, device=device), "amax")
    has_runs = last_run >= 0
    many = has_runs & (last_run > first_run)
    head = points[kept_index[run_first[first_run.clamp(max=runs - 1)]]]
    tail = points[kept_index[run_first[last_run.clamp(min=0)] + run_length[last_run.clamp(min=0)] - 1]]
    gap = (head - tail).abs()
    merge = many & (gap.max(dim=1).values == 1)
    # the new point order: a merged contour's first run goes, reversed, after its last run
    position = torch.arange(kept_index.numel(), device=device) - run_first[run]
    moved = merge[run_contour[run]] & (run == first_run[run_contour[run]])
    target_run = torch.where(moved, last_run[run_contour[run]], run)
    key_position = torch.where(moved, run_length[target_run] + run_length[run] - 1 - position, position)
    sort_key = target_run * (int(run_length.max()) * 2 + 2) + key_position
    ordering = torch.argsort(sort_key)
    final_points = points[kept_index[ordering]]
    final_run = target_run[ordering]
    starts = torch.cat([final_run.new_ones(1, dtype=torch.bool), final_run[1:] != final_run[:-1]])
    keep, _ = approx_poly_dp_open(final_points, starts, epsilon, engine="data_sized")
    image_of_kept = image_of_point[kept_index[ordering]]
    control_points = torch.zeros(count, dtype=torch.int64, device=device).index_add(
        0, image_of_kept, keep.long())
    return control_points + independent


def _touched_components(touched: Tensor, offsets: Tensor, per_image_max: Tensor) -> Tensor:
    """Number of touched components per image (ids ``offsets[b] + 1 .. offsets[b] + per_image_max[b]``)."""
    cumulative = torch.cumsum(touched.long(), 0)  # cumulative[i] = touched ids <= i
    end = offsets + per_image_max
    return cumulative[end] - cumulative[offsets]
