"""Matting tier vs the numpy/scipy port of the DIM MATLAB evaluation, and connected components vs scipy.

- ``components``: :func:`nobg_metrics.ops.components.connected_components` (4-connectivity) vs
  ``scipy.ndimage.label`` on the joint mask ``(pred >= 128) & (gt >= 128)`` of a realistic matte pair;
- ``dim sad+mse+grad+conn``: the four matting metrics with a trimap (the published protocol) vs the
  port in tests/reference/dim_matting.py (``scipy.ndimage.convolve`` with the 9x9 kernel, ``label``);
- off CPU, ``conn ...``: the connectivity error alone, with its fixed-size labelling (the default: no host
  sync) and with ``engine="data_sized"`` (lists sized by the data), vs the port's connectivity.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import torch
from harness import Case, sample_uint8
from scipy import ndimage

import nobg_metrics as nm
from nobg_metrics.ops.components import connected_components

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tests.reference import dim_matting as dim


def _trimaps(gts: np.ndarray) -> np.ndarray:
    """Unknown band of +-10 px around the gt edge, 0 / 255 elsewhere."""
    out = []
    for gt in gts:
        fg = gt > 127
        band = ndimage.binary_dilation(fg, iterations=10) & ~ndimage.binary_erosion(fg, iterations=10)
        trimap = np.where(fg, 255, 0).astype(np.uint8)
        trimap[band] = 128
        out.append(trimap)
    return np.stack(out)


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    preds, gts = sample_uint8(size, batch, seed=seed)
    trimaps = _trimaps(gts)
    masks = (preds >= 128) & (gts >= 128)
    pred_t, gt_t, tri_t = (torch.from_numpy(a).to(device) for a in (preds, gts, trimaps))
    mask_t = torch.from_numpy(masks).to(device)

    def ref_label():
        return [ndimage.label(mask) for mask in masks]

    metrics = [nm.SAD(), nm.MSE(), nm.GradientError(), nm.ConnectivityError()]
    metrics = [metric.to(device) for metric in metrics]

    def ours_matting():
        values = []
        for metric in metrics:
            metric.reset()
            metric.update(pred_t, gt_t, tri_t)
            values.append(metric.compute())
        return values

    def ref_matting():
        return [(dim.sad(p, g, t), dim.mse(p, g, t), dim.gradient(p, g, t), dim.connectivity(p, g, t))
                for p, g, t in zip(preds, gts, trimaps)]

    out = [
        Case("components", size, device, lambda: connected_components(mask_t), ref_label, "scipy.ndimage.label",
             batch),
        Case("dim sad+mse+grad+conn", size, device, ours_matting, ref_matting, "numpy/scipy DIM port", batch),
    ]
    if device != "cpu":  # on CPU both labellings are sized by the data
        def ref_connectivity():
            return [dim.connectivity(p, g, t) for p, g, t in zip(preds, gts, trimaps)]

        for label, engine in (("conn, fixed sizes (no sync)", "fixed"), ("conn, host syncs allowed", "data_sized")):
            metric = nm.ConnectivityError(engine=engine).to(device)

            def ours_connectivity(metric=metric):
                metric.reset()
                metric.update(pred_t, gt_t, tri_t)
                return metric.compute()

            out.append(Case(label, size, device, ours_connectivity, ref_connectivity, "DIM port connectivity", batch))
    return out
