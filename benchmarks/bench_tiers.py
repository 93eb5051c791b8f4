"""Images per second of each tier's collection update (no reference side): the number to quote for
training-time monitoring. On a GPU: ``python benchmarks/run.py --device cuda --sizes 1024 --batch 16
--only tier``.

No trimap: the matting members score the whole image, as when a salient-object model is monitored (a
trimap with a small unknown region makes the gradient error much cheaper on CPU).

Off CPU one more row, ``tier expensive, host syncs allowed``: the connectivity error labels with lists sized
by the data (``engine="data_sized"``, what the command uses) instead of its fixed-size default."""

from __future__ import annotations

import torch
from harness import Case, sample_uint8

import nobg_metrics as nm


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    pred = torch.from_numpy(preds).to(device)
    gt = torch.from_numpy(gts).to(device)
    out = []
    variants = [("cheap", {}), ("medium", {}), ("expensive", {})]
    if device != "cpu":  # on CPU the labelling is sized by the data either way
        variants.append(("expensive", {"engine": "data_sized"}))
    for tier, options in variants:
        # validate_args=False: the checks that read values back to the host are off, as in training
        collection = nm.make_collection(tier, normalize=True, validate_args=False, **options).to(device)

        def run(collection=collection):
            collection.reset()
            collection.update(pred, gt)  # no trimap: matting metrics score the whole image (SOD use)
            return collection.compute()

        name = f"tier {tier}" + (", host syncs allowed" if options else "")
        out.append(Case(name, size, device, run, None, "", batch))
    return out
