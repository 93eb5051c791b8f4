"""The summary values of instance AP (``COCOeval.summarize``, ``LVISEval.summarize``) under torchmetrics' names.

Each value is ``np.mean(s[s > -1])`` of a slice of the precision or recall array (``-1`` when the slice holds
no valid cell), the mean taken in numpy's pairwise order (:mod:`nobg_metrics.ops.numpy_sum`) so that it
equals the reference bit for bit. Keys (torchmetrics' ``MeanAveragePrecision`` order):

- COCO: ``map`` (all thresholds), ``map_50``, ``map_75`` (-1 when 0.5 / 0.75 is not among the thresholds),
  ``map_small``, ``map_medium``, ``map_large``, ``mar_<k>`` for every max-detections ``k``, ``mar_small``,
  ``mar_medium``, ``mar_large``; AP values use the largest max-detections (pycocotools' ``summarize`` uses 100
  literally for ``map`` and the third entry for the others, so a list without 100 gives -1 there — the
  torchmetrics issues #1153 / #2560);
- LVIS adds ``map_rare``, ``map_common``, ``map_frequent`` (categories by their frequency; -1 without
  ``category_frequencies``); its recall keys are ``mar_300`` (the cap) and the area ones;
- then ``map_per_class`` and ``mar_<k>_per_class`` (-1 unless ``class_metrics``) and ``classes`` (int32).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics.functional.instance.accumulate import Accumulated
from nobg_metrics.functional.instance.options import (
    AREA_NAMES,
    FREQUENCIES,
    InstanceOptions,
)
from nobg_metrics.ops.numpy_sum import pairwise_sum


def mean_of_valid(values: Tensor) -> Tensor:
    """``np.mean(s[s > -1])`` of any slice, or -1 when no cell is valid: a 0-d float64 tensor."""
    flat = values.reshape(-1)
    kept = flat > -1
    valid = flat if bool(kept.all()) else flat[kept]  # a data-sized selection: compute runs once, after the epoch
    if valid.numel() == 0:
        return torch.full((), -1.0, dtype=torch.float64, device=values.device)
    return pairwise_sum(valid[None])[0] / valid.numel()


def _rows_mean(rows: Tensor, valid: Tensor) -> Tensor:
    """Per row ``np.mean`` of a :math:`(K, n)` array whose rows are all valid or all -1 (per-class values)."""
    if rows.shape[1] == 0:
        return torch.full((rows.shape[0],), -1.0, dtype=torch.float64, device=rows.device)
    means = pairwise_sum(rows) / rows.shape[1]
    return torch.where(valid, means, torch.full_like(means, -1.0))


def _at_thresholds(options: InstanceOptions, value: float, device: torch.device) -> Tensor:
    """Indices ``t`` with ``iouThrs[t] == value`` (``np.where(iouThr == p.iouThrs)``: exact float equality)."""
    return torch.tensor([t for t, thr in enumerate(options.iou_thresholds) if thr == value], dtype=torch.int64,
                        device=device)


def _frequency_groups(options: InstanceOptions, classes: Tensor) -> list[Tensor]:
    """Category indices of each LVIS frequency group, in category order."""
    frequency = dict(options.category_frequencies)
    labels = classes.tolist()
    return [torch.tensor([k for k, label in enumerate(labels) if frequency.get(label) == group], dtype=torch.int64,
                         device=classes.device) for group in FREQUENCIES]


def summarize(main: Accumulated, per_class: Accumulated | None, classes: Tensor,
              options: InstanceOptions) -> dict[str, Tensor]:
    """The output dictionary (module notes).

    Args:
        main: the accumulated arrays of the evaluation (one merged category for ``average="micro"``).
        per_class: the per-category arrays for ``class_metrics`` (``None`` otherwise).
        classes: :math:`(K,)` int64 the categories seen, sorted.
        options: the metric's options.

    Returns:
        ``{name: 0-d float64 tensor}``, per-class values :math:`(K,)`, ``classes`` int32.
    """
    precision, recall = main.precision, main.recall
    device = precision.device
    last = len(options.max_detection_thresholds) - 1
    area = {name: index for index, name in enumerate(AREA_NAMES)}
    out: dict[str, Tensor] = {"map": mean_of_valid(precision[:, :, :, area["all"], last])}
    for key, value in (("map_50", 0.5), ("map_75", 0.75)):
        out[key] = mean_of_valid(precision[_at_thresholds(options, value, device)][:, :, :, area["all"], last])
    for name in AREA_NAMES[1:]:
        out[f"map_{name}"] = mean_of_valid(precision[:, :, :, area[name], last])
    if options.lvis:
        for name, group in zip(("rare", "common", "frequent"), _frequency_groups(options, classes)):
            out[f"map_{name}"] = mean_of_valid(precision[:, :, group, area["all"], last])
    for m, cap in enumerate(options.max_detection_thresholds):
        out[f"mar_{cap}"] = mean_of_valid(recall[:, :, area["all"], m])
    for name in AREA_NAMES[1:]:
        out[f"mar_{name}"] = mean_of_valid(recall[:, :, area[name], last])
    if options.extended_summary:
        out["precision"], out["recall"] = precision, recall
        if main.scores is not None:
            out["scores"] = main.scores
    cap = options.max_detection_thresholds[-1]
    if per_class is None:
        out["map_per_class"] = torch.full((), -1.0, dtype=torch.float64, device=device)
        out[f"mar_{cap}_per_class"] = torch.full((), -1.0, dtype=torch.float64, device=device)
    else:
        valid = per_class.gt_counts[:, area["all"]] > 0
        cells = per_class.precision[:, :, :, area["all"], last]  # (T, R, K): one class's cells in (t, r) order
        rows = cells.permute(2, 0, 1).reshape(cells.shape[2], cells.shape[0] * cells.shape[1])
        out["map_per_class"] = _rows_mean(rows, valid)
        out[f"mar_{cap}_per_class"] = _rows_mean(per_class.recall[:, :, area["all"], last].T.contiguous(), valid)
    out["classes"] = classes.to(torch.int32)
    return out
