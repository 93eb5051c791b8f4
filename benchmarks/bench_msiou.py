"""MSIoU vs PySODMetrics ``MSIoU`` (uint8, normalize=True): the dynamic curve with the adaptive and binary scores,
and the two binarised modes alone (the context measures Cm and CCm: ``bench_context_measure.py``).

    python benchmarks/run.py --sizes 256 1024 --only msiou --images 2 --repeat 2

The reference binarises and edge-detects the prediction once per threshold the image holds (up to 257 times, ten
cell sizes each): ~19 s per 1024² pair on this VM, so a row at 1024² costs minutes (a warm-up and at least one
timed call per pair).
"""

from __future__ import annotations

import warnings

import py_sod_metrics as psm
import torch
from harness import Case, sample_uint8

from nobg_metrics.collection import make_collection

ALL_MODES = ("msiou_max", "msiou_mean", "msiou_adaptive", "msiou_binary")


def _reference(preds, gts, dynamic: bool) -> dict:
    metric = psm.MSIoU(with_dynamic=dynamic, with_adaptive=True, with_binary=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # np.trapz
        for pred, gt in zip(preds, gts):
            metric.step(pred, gt)
    return metric.get_results()


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    pred_t = torch.from_numpy(preds).to(device)
    gt_t = torch.from_numpy(gts).to(device)
    every = make_collection(metrics=ALL_MODES, normalize=True, empty_gt="reference", validate_args=False).to(device)
    binarised = make_collection(metrics=ALL_MODES[2:], normalize=True, empty_gt="reference",
                                validate_args=False).to(device)

    def ours(collection):
        def run():
            collection.reset()
            collection.update(pred_t, gt_t)
            return collection.compute()

        return run

    return [
        Case("msiou (dynamic + adaptive + binary)", size, device, ours(every), lambda: _reference(preds, gts, True),
             "psm.MSIoU", batch),
        Case("msiou (adaptive + binary)", size, device, ours(binarised), lambda: _reference(preds, gts, False),
             "psm.MSIoU", batch),
    ]
