"""Exact EDT per shape class: ``ops.distance.nearest_feature`` vs scipy (and OpenCV for reference).

Ours: ``nearest_feature(gt)`` — squared distances and the (row, col) of the nearest gt pixel, scipy's tie rule.
Reference: ``scipy.ndimage.distance_transform_edt(~gt, return_indices=True)`` (the same output; the ratio
``scipy / ours`` is target >= 1x on every class). OpenCV's exact
``distanceTransformWithLabels(DIST_L2, DIST_MASK_PRECISE, DIST_LABEL_PIXEL)`` is shown for scale only: it
labels the nearest pixel, not its (row, col), and breaks ties its own way.

Shapes: ``shapes.KINDS`` (person, animal, text, blobs, large; hard 0/255 gts, ``gt > 128``) and the disc
``blob`` of ``harness.disc_uint8`` (the benchmark sets' shape until 2026-12-01). The column ``cols`` is the share of
columns holding the object (the row pass's cost grows with it), ``flat`` the slowest class over the fastest.

    python benchmarks/bench_distance.py --threads 1              # 1024², 2 seeds per class
    python benchmarks/bench_distance.py --size 512 --seeds 4 --repeat 9
    python benchmarks/bench_distance.py --threads 1 --split      # also: column pass / row pass / rest
    python benchmarks/run.py --sizes 1024 --only edt_            # the same rows among the other benchmarks
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import cv2
import numpy as np
import scipy.ndimage as ndi
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from harness import Case, disc_uint8
from shapes import KINDS, make_gt

from nobg_metrics.ops.distance import _column_pass, nearest_feature
from nobg_metrics.ops.envelope import feature_columns, lower_envelope_bisection

CLASSES = (*KINDS, "blob")
"""The shape classes timed, in order."""


def class_gts(kind: str, size: int, batch: int = 1, seed: int = 0) -> np.ndarray:
    """``(batch, size, size)`` bool gts of one class (hard edges: ``gt > 128``)."""
    if kind == "blob":
        return disc_uint8(size, batch, seed=seed)[1] > 128
    return np.stack([make_gt(kind, (size, size), [seed, i], antialiased=False) > 128 for i in range(batch)])


def _reference_scipy(gts: np.ndarray):
    return [ndi.distance_transform_edt(~g, return_indices=True) for g in gts]


def _reference_cv2(gts: np.ndarray):
    background = [(~g).astype(np.uint8) for g in gts]
    return [cv2.distanceTransformWithLabels(b, cv2.DIST_L2, cv2.DIST_MASK_PRECISE, labelType=cv2.DIST_LABEL_PIXEL)
            for b in background]


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    """One ``edt_<class>`` case per shape class (``run.py`` interface)."""
    out = []
    for kind in CLASSES:
        gts = class_gts(kind, size, batch, seed)
        features = torch.from_numpy(gts).to(device)
        out.append(Case(f"edt_{kind}", size, device, lambda f=features: nearest_feature(f),
                        lambda g=gts: _reference_scipy(g), "scipy distance_transform_edt", batch))
    return out


def _alternate(functions: list, repeat: int, device: str) -> list[float]:
    """Median ms of each function, called in turn ``repeat`` times after a warm-up (load hits all alike)."""
    for fn in functions:
        fn()
    times: list[list[float]] = [[] for _ in functions]
    for _ in range(repeat):
        for slot, fn in zip(times, functions):
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            fn()
            if device == "cuda":
                torch.cuda.synchronize()
            slot.append((time.perf_counter() - start) * 1e3)
    return [statistics.median(t) for t in times]


def _split(features: torch.Tensor, repeat: int, device: str) -> tuple[float, float, float]:
    """Median ms of the column pass and the row pass alone, and the rest of ``nearest_feature``."""
    _, height, width = features.shape
    positions, _ = feature_columns(features)
    gap, _ = _column_pass(features, positions)
    cost = gap * gap
    column, row, total = _alternate([
        lambda: _column_pass(features, positions),
        lambda: lower_envelope_bisection(cost, positions, width, height + width + 1),
        lambda: nearest_feature(features),
    ], repeat, device)
    return column, row, total - column - row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--seeds", type=int, default=2, help="gts per class (seeds 0..N-1), times averaged")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch and OpenCV threads (default: theirs)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--split", action="store_true", help="also time the column pass and the row pass alone")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
        cv2.setNumThreads(args.threads)
    print(f"torch {torch.__version__}, {args.device}, {torch.get_num_threads()} threads, {args.size}², "
          f"median of {args.repeat} alternating calls, mean over {args.seeds} gts per class")
    header = "| class | cols | ours ms | scipy ms | cv2 ms | scipy / ours | cv2 / ours |"
    if args.split:
        header += " column pass | row pass | rest |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    ours_all = []
    for kind in CLASSES:
        rows = []
        for seed in range(max(1, args.seeds)):
            gts = class_gts(kind, args.size, 1, seed)
            features = torch.from_numpy(gts).to(args.device)
            timed = _alternate([lambda f=features: nearest_feature(f), lambda g=gts: _reference_scipy(g),
                                lambda g=gts: _reference_cv2(g)], args.repeat, args.device)
            if args.split:
                timed += _split(features, args.repeat, args.device)
            rows.append([float(gts.any(axis=1).mean()), *timed])
        cols, ours, ref, ocv, *split = (statistics.fmean(column) for column in zip(*rows))
        ours_all.append(ours)
        line = f"| {kind} | {cols:.2f} | {ours:.1f} | {ref:.1f} | {ocv:.1f} | {ref / ours:.2f}x | {ocv / ours:.2f}x |"
        if split:
            line += "".join(f" {value:.1f} |" for value in split)
        print(line, flush=True)
    print(f"flat: slowest / fastest class = {max(ours_all) / min(ours_all):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
