"""How far apart the DIM and P3M matting protocols (and GCA-Matting's Python connectivity) score the same mattes.

    python benchmarks/bench_matting_p3m_protocols.py [--size 512] [--pairs 5]

Data: :func:`shapes.real_pairs` (person, animal, text, blobs, large; antialiased and 0/255 gts alternating),
uint8 predictions and gts, a +-10 px band trimap (:func:`bench_matting_p3m.band_trimap`). For each metric the
dataset value under each protocol, in raw units, and their ratio; the numbers of docs/matting_protocols.md.
GCA-Matting's connectivity is written here from its published definition (``getLargestCC`` =
``labels == argmax(bincount(labels))``, background label included; ``np.arange(0, 1 + step, step)``
thresholds on ``png / 255.``), to measure its error against DIM's MATLAB rule.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
import torch
from skimage.measure import label

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_matting_p3m import band_trimap
from shapes import real_pairs

from nobg_metrics import functional as F
from nobg_metrics.functional.matting.p3m import p3m_mse, p3m_sad
from nobg_metrics.functional.matting.p3m_connectivity import p3m_connectivity_error
from nobg_metrics.functional.matting.p3m_gradient import p3m_gradient_error


def gca_connectivity(pred: np.ndarray, gt: np.ndarray, trimap: np.ndarray | None, step: float = 0.1) -> float:
    """GCA-Matting's rule: the "largest component" is the most frequent label, background (0) included."""
    pred, gt = pred / 255.0, gt / 255.0
    level = -np.ones(pred.shape)
    thresholds = np.arange(0, 1 + step, step)
    for index in range(1, len(thresholds)):
        labels = label((pred >= thresholds[index]) & (gt >= thresholds[index]), connectivity=1)
        omega = labels == np.argmax(np.bincount(labels.ravel()))
        level[(level == -1) & ~omega] = thresholds[index - 1]
    level[level == -1] = 1
    pred_d, gt_d = pred - level, gt - level
    error = np.abs((1 - pred_d * (pred_d >= 0.15)) - (1 - gt_d * (gt_d >= 0.15)))
    return float(error[trimap == 128].sum() if trimap is not None else error.sum())


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list:
    """No timing cases (``benchmarks/run.py`` collects every ``bench_*.py``): run this script directly."""
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args(argv)
    pairs = real_pairs((args.size, args.size), count=args.pairs)
    pred = torch.from_numpy(np.stack([p for p, _ in pairs]))
    gt = torch.from_numpy(np.stack([g for _, g in pairs]))
    trimap = torch.from_numpy(np.stack([band_trimap(g) for _, g in pairs]))
    gca_whole = np.mean([gca_connectivity(p, g, None) for p, g in pairs])
    gca_band = np.mean([gca_connectivity(p, g, t.numpy()) for (p, g), t in zip(pairs, trimap)])
    rows = [
        ("SAD, whole image", F.sad(pred, gt), p3m_sad(pred, gt)),
        ("SAD, unknown region (DIM) / SAD-T (P3M)", F.sad(pred, gt, trimap),
         p3m_sad(pred, gt, trimap, region="trimap")),
        ("MSE, whole image", F.mse_metric(pred, gt), p3m_mse(pred, gt)),
        ("MSE, unknown region / MSE-T", F.mse_metric(pred, gt, trimap), p3m_mse(pred, gt, trimap, region="trimap")),
        ("Grad, whole image", F.gradient_error(pred, gt), p3m_gradient_error(pred, gt)),
        ("Grad, unknown region (DIM) / whole (P3M)", F.gradient_error(pred, gt, trimap), p3m_gradient_error(pred, gt)),
        ("Conn, whole image", F.connectivity_error(pred, gt), p3m_connectivity_error(pred, gt)),
        ("Conn, unknown region (DIM) / whole (P3M)", F.connectivity_error(pred, gt, trimap),
         p3m_connectivity_error(pred, gt)),
    ]
    print(f"{args.pairs} pairs at {args.size}² (raw values, mean over images)\n")
    print("| value | DIM (ours) | P3M (ours) | P3M / DIM - 1 |")
    print("|---|---:|---:|---:|")
    for name, dim_value, p3m_value in rows:
        dim_value, p3m_value = float(dim_value), float(p3m_value)
        print(f"| {name} | {dim_value:.8g} | {p3m_value:.8g} | {p3m_value / dim_value - 1:+.3g} |")
    dim_whole, dim_band = float(F.connectivity_error(pred, gt)), float(F.connectivity_error(pred, gt, trimap))
    print("\n| connectivity | DIM (MATLAB rule) | GCA-Matting port | GCA / DIM |")
    print("|---|---:|---:|---:|")
    print(f"| whole image | {dim_whole:.6g} | {gca_whole:.6g} | {gca_whole / dim_whole:.4g} |")
    print(f"| unknown region | {dim_band:.6g} | {gca_band:.6g} | {gca_band / dim_band:.4g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
