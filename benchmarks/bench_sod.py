"""Threshold-swept and structure measures vs PySODMetrics: F (max/mean/adaptive from one update) vs
``Fmeasure``, E (all modes) vs ``Emeasure``, S vs ``Smeasure`` — uint8 inputs, normalize=True — and the
SOD suite: MAE, S, E, F (max/mean/adaptive) and weighted F in one collection update vs the five
PySODMetrics objects stepped on every image."""

from __future__ import annotations

import warnings

import py_sod_metrics as psm
import torch
from harness import Case, sample_uint8

import nobg_metrics as nm

SOD_SUITE = ("mae", "s_measure", "e_measure_max", "e_measure_mean", "e_measure_adaptive", "f_measure_max",
             "f_measure_mean", "f_measure_adaptive", "weighted_f_measure")


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    pred_t = torch.from_numpy(preds).to(device)
    gt_t = torch.from_numpy(gts).to(device)

    def ours(metric):
        metric = metric.to(device)

        def run():
            metric.reset()
            metric.update(pred_t, gt_t)
            return metric.compute()
        return run

    def reference(cls):
        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                metric = cls()
            for p, g in zip(preds, gts):
                metric.step(p, g)
            return metric.get_results()
        return run

    suite = nm.make_collection(metrics=SOD_SUITE, normalize=True, empty_gt="reference").to(device)

    def ours_suite():
        suite.reset()
        suite.update(pred_t, gt_t)
        return suite.compute()

    def reference_suite():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            metrics = [psm.MAE(), psm.Smeasure(), psm.Emeasure(), psm.Fmeasure(), psm.WeightedFmeasure()]
        for p, g in zip(preds, gts):
            for metric in metrics:
                metric.step(p, g)
        return [metric.get_results() for metric in metrics]

    # one update computes every mode of F and E (their shared state); compute() picks one
    return [
        Case("f_measure", size, device, ours(nm.FMeasure("max", normalize=True)), reference(psm.Fmeasure),
             "psm.Fmeasure", batch),
        Case("e_measure", size, device, ours(nm.EMeasure("max", normalize=True)), reference(psm.Emeasure),
             "psm.Emeasure", batch),
        Case("s_measure", size, device, ours(nm.SMeasure(normalize=True)), reference(psm.Smeasure),
             "psm.Smeasure", batch),
        Case("sod suite", size, device, ours_suite, reference_suite, "psm MAE+S+E+F+wF", batch),
    ]
