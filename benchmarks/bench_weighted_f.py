"""Weighted F tier: the exact EDT ops vs ``scipy.ndimage.distance_transform_edt``, and ``WeightedFMeasure`` vs
PySODMetrics ``WeightedFmeasure`` (uint8, normalize=True) and vs the gt-only work as it was before the windowed
transform (``baseline_weighted_f.py``: the full transform with every index; same values, asserted on every pair)."""

from __future__ import annotations

import py_sod_metrics as psm
import scipy.ndimage as ndi
import torch
from baseline_weighted_f import old_path
from harness import Case, sample_uint8

import nobg_metrics as nm
from nobg_metrics.ops.distance import bounded_squared_distance, nearest_feature


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    pred_t = torch.from_numpy(preds).to(device)
    gt_t = torch.from_numpy(gts).to(device)
    features = gt_t > 128
    background = gts <= 128
    metric = nm.WeightedFMeasure(normalize=True, empty_gt="reference").to(device)
    before = nm.WeightedFMeasure(normalize=True, empty_gt="reference").to(device)

    def ours_wfm():
        metric.reset()
        metric.update(pred_t, gt_t)
        return metric.compute()

    def before_wfm():  # the same class around the per-image step of commit 5c76fb5
        with old_path():
            before.reset()
            before.update(pred_t, gt_t)
            return before.compute()

    def ref_wfm():
        reference = psm.WeightedFmeasure()
        for p, g in zip(preds, gts):
            reference.step(p, g)
        return reference.get_results()

    def ref_edt():
        return [ndi.distance_transform_edt(b, return_indices=True) for b in background]

    def ref_distances():
        return [ndi.distance_transform_edt(b) for b in background]

    out = [
        Case("edt", size, device, lambda: nearest_feature(features), ref_edt, "scipy distance_transform_edt", batch),
        Case("edt_bounded", size, device, lambda: bounded_squared_distance(features, 265), ref_distances,
             "scipy edt (distances)", batch),
        Case("weighted_f", size, device, ours_wfm, ref_wfm, "psm.WeightedFmeasure", batch),
    ]
    if device == "cpu":  # the baseline copy runs on CPU only
        if float(ours_wfm()) != float(before_wfm()):
            raise AssertionError(f"weighted F differs from the pre-window path at {size}², seed {seed}")
        out += [
            Case("weighted_f_before_36", size, device, before_wfm, ref_wfm, "psm.WeightedFmeasure", batch),
            Case("weighted_f_vs_before_36", size, device, ours_wfm, before_wfm,
                 "before the windowed transform (baseline copy)", batch),
        ]
    return out
