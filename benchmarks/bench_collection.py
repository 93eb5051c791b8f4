"""Shared statistics really are shared: a medium collection's update against the cheap tier plus the
most expensive medium-only member run alone. The bound is medium <= 1.3 x (that sum), i.e. the
printed ratio (sum / medium) >= 0.77. If the six F/E entries each ran their own histogram, or the four
overlap metrics their own confusion count, the medium update would cost far more than that sum."""

from __future__ import annotations

import torch
from harness import Case, sample_uint8, timeit

import nobg_metrics as nm


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    pred = torch.from_numpy(preds).to(device)
    gt = torch.from_numpy(gts).to(device)
    trimap = torch.where(gt > 128, 255, 0).to(torch.uint8)

    def update(collection):
        collection = collection.to(device)

        def run():
            collection.reset()
            collection.update(pred, gt, trimap=trimap)
        return run

    medium = update(nm.make_collection("medium", normalize=True))
    cheap = update(nm.make_collection("cheap", normalize=True))
    members = {
        "f_measure_max": update(nm.make_collection(metrics=["f_measure_max"], normalize=True)),
        "e_measure_max": update(nm.make_collection(metrics=["e_measure_max"], normalize=True)),
        "gradient_error": update(nm.make_collection(metrics=["gradient_error"])),
    }
    slowest: list[str] = []

    def cheap_plus_slowest():
        if not slowest:  # decided once, on first use
            slowest.append(max(members, key=lambda name: timeit(members[name], device, repeat=3)))
        cheap()
        members[slowest[0]]()

    return [Case("medium collection (ratio >= 0.77 means <= 1.3x)", size, device, medium, cheap_plus_slowest,
                 "cheap tier + slowest medium member alone", batch)]
