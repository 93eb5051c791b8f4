"""Cheap tier vs PySODMetrics: MAE vs ``MAE``, the overlap metrics vs ``FmeasureV2`` binary handlers,
SAD/MSE vs a numpy port of the DIM code — uint8 inputs, the PySODMetrics protocol."""

from __future__ import annotations

import numpy as np
import py_sod_metrics as psm
import torch
from harness import Case, sample_uint8

import nobg_metrics as nm


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    pred_t = torch.from_numpy(preds).to(device)
    gt_t = torch.from_numpy(gts).to(device)

    def ours(metric):
        def run():
            metric.reset()
            metric.update(pred_t, gt_t)
            return metric.compute()
        return run

    def ref_mae():
        m = psm.MAE()
        for p, g in zip(preds, gts):
            m.step(p, g)
        return m.get_results()

    def ref_binary():
        fm = psm.FmeasureV2({"iou": psm.IOUHandler(False, False, with_binary=True),
                             "dice": psm.DICEHandler(False, False, with_binary=True),
                             "oa": psm.OverallAccuracyHandler(False, False, with_binary=True),
                             "ber": psm.BERHandler(False, False, with_binary=True)})
        for p, g in zip(preds, gts):
            fm.step(p, g)
        return fm.get_results()

    overlap = torch.nn.ModuleList([nm.IoU(normalize=True), nm.Dice(normalize=True), nm.Accuracy(normalize=True),
                                   nm.BER(normalize=True)]).to(device)

    def ours_overlap():
        # the four share one state in a MetricCollection compute group: one update
        first = overlap[0]
        first.reset()
        first.update(pred_t, gt_t)
        return [first.compute()]

    def ref_sad_mse():
        out = []
        for p, g in zip(preds, gts):
            p32, g32 = p.astype(np.float32) / 255, g.astype(np.float32) / 255
            out.append((np.abs(p32 - g32).sum(), ((p32 - g32) ** 2).sum() / p32.size))
        return out

    sad_mse = nm.make_collection(metrics=["sad", "mse_metric"]).to(device)  # one compute group: one update

    def ours_sad_mse():
        sad_mse.reset()
        sad_mse.update(pred_t, gt_t)
        return sad_mse.compute()

    return [
        Case("mae", size, device, ours(nm.MAE(normalize=True).to(device)), ref_mae, "psm.MAE", batch),
        Case("iou+dice+acc+ber", size, device, ours_overlap, ref_binary, "psm.FmeasureV2 binary", batch),
        Case("sad+mse", size, device, ours_sad_mse, ref_sad_mse, "numpy DIM port", batch),
    ]
