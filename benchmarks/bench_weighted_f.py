"""Weighted F tier: the exact EDT op vs ``scipy.ndimage.distance_transform_edt(return_indices=True)``, and
``WeightedFMeasure`` vs PySODMetrics ``WeightedFmeasure`` (uint8, normalize=True)."""

from __future__ import annotations

import py_sod_metrics as psm
import scipy.ndimage as ndi
import torch

import nobg_metrics as nm
from harness import Case, sample_uint8
from nobg_metrics.ops.distance import nearest_feature


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    pred_t = torch.from_numpy(preds).to(device)
    gt_t = torch.from_numpy(gts).to(device)
    features = gt_t > 128
    background = gts <= 128
    metric = nm.WeightedFMeasure(normalize=True, empty_gt="reference").to(device)

    def ours_wfm():
        metric.reset()
        metric.update(pred_t, gt_t)
        return metric.compute()

    def ref_wfm():
        reference = psm.WeightedFmeasure()
        for p, g in zip(preds, gts):
            reference.step(p, g)
        return reference.get_results()

    def ref_edt():
        return [ndi.distance_transform_edt(b, return_indices=True) for b in background]

    return [
        Case("edt", size, device, lambda: nearest_feature(features), ref_edt, "scipy distance_transform_edt", batch),
        Case("weighted_f", size, device, ours_wfm, ref_wfm, "psm.WeightedFmeasure", batch),
    ]
