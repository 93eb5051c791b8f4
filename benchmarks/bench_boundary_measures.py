"""Trimap IoU, the boundary F-measure and DAVIS J / F: ours vs the references, side by side in one process.

- Trimap IoU and boundary F against the numpy/OpenCV implementation of the paper's formulas
  (tests/reference/paper_boundary_measures.py), one image at a time, d = round(0.02 * diagonal), both sides from
  the same uint8 levels (PNG bytes, binarised at > 128 inside the timed call);
- DAVIS J and F against davis2017-evaluation's ``db_eval_iou`` / ``db_eval_boundary`` — the real functions when
  ``DAVIS2017_EVALUATION`` points at an unpacked copy of the repository, else the port in tests/reference — on a
  stack of frames, as its evaluation calls them (J vectorised over the frames, F frame by frame).

Realistic shapes (benchmarks/shapes.py: persons, animals, text, blobs, large objects, model-like predictions
binarised at 128). ``python benchmarks/bench_boundary_measures.py`` times 854x480 frames (DAVIS 480p);
``run.py --only trimap boundary_f davis`` runs the same cases at square sizes.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(pathlib.Path(__file__).resolve().parent), str(ROOT)]

from harness import Case
from shapes import real_pairs

from nobg_metrics import functional as F
from tests.reference import paper_boundary_measures as paper


def _davis_reference():
    """``(db_eval_iou, db_eval_boundary, name)``: the real functions or the port's per-frame equivalents."""
    location = os.environ.get("DAVIS2017_EVALUATION")
    if location:
        sys.path.insert(0, location)
        from davis2017.metrics import db_eval_boundary, db_eval_iou

        return db_eval_iou, db_eval_boundary, "davis2017-evaluation"
    from tests.reference import davis_port

    def iou(gt: np.ndarray, pred: np.ndarray) -> list[float]:
        return [davis_port.region_similarity(g, p) for g, p in zip(gt, pred)]

    def boundary(gt: np.ndarray, pred: np.ndarray) -> list[float]:
        return [davis_port.contour_accuracy(p, g) for g, p in zip(gt, pred)]

    return iou, boundary, "davis2017 port (tests/reference)"


def frame_cases(height: int, width: int, device: str, batch: int = 8, seed: int = 0) -> list[Case]:
    """The comparisons on ``batch`` frames of ``height x width`` (one call scores them all)."""
    pairs = real_pairs((height, width), count=batch, seed=seed)
    preds_u8, gts_u8 = np.stack([p for p, _ in pairs]), np.stack([g for _, g in pairs])
    pred_b, gt_b = preds_u8 > 128, gts_u8 > 128
    pred_t, gt_t = torch.from_numpy(preds_u8).to(device), torch.from_numpy(gts_u8).to(device)
    pred_bt, gt_bt = torch.from_numpy(pred_b).to(device), torch.from_numpy(gt_b).to(device)
    radius = paper.width_of(height, width, 0.02)
    db_eval_iou, db_eval_boundary, davis_name = _davis_reference()
    size = max(height, width)

    def paper_trimap() -> list[float]:  # from the same uint8 levels as ours: binarised inside the call
        return [paper.trimap_iou(g > 128, p > 128, radius) for g, p in zip(gts_u8, preds_u8)]

    def paper_boundary_f() -> list[float]:
        return [paper.boundary_f(g > 128, p > 128, radius) for g, p in zip(gts_u8, preds_u8)]

    return [
        Case("trimap_iou", size, device, lambda: F.trimap_iou(pred_t, gt_t, 128 / 255), paper_trimap,
             "numpy/cv2 formula", batch),
        Case("boundary_f_measure", size, device, lambda: F.boundary_f_measure(pred_t, gt_t, 128 / 255),
             paper_boundary_f, "numpy/cv2 formula", batch),
        Case("davis J (per frame)", size, device, lambda: F.davis_region_similarity(pred_bt, gt_bt),
             lambda: db_eval_iou(gt_b, pred_b), davis_name, batch),
        Case("davis F (per frame)", size, device, lambda: F.davis_contour_accuracy(pred_bt, gt_bt),
             lambda: db_eval_boundary(gt_b, pred_b), davis_name, batch),
    ]


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    """``run.py``'s square sizes."""
    return frame_cases(size, size, device, batch, seed)


def _alternating(case: Case, repeat: int) -> dict[str, float]:
    """Medians of ``repeat`` alternating calls of each side: wall time and this thread's CPU time (ms).

    The CPU time of the calling thread (one torch and one OpenCV thread) is what each side computes; on a shared,
    oversubscribed machine the wall time also counts the waits for a core."""
    case.ours(), case.reference()
    times: dict[str, list[float]] = {"ours_wall": [], "ours_cpu": [], "ref_wall": [], "ref_cpu": []}
    for _ in range(repeat):
        for side, call in (("ours", case.ours), ("ref", case.reference)):
            wall, cpu = time.perf_counter(), time.thread_time()
            call()
            times[f"{side}_cpu"].append(time.thread_time() - cpu)
            times[f"{side}_wall"].append(time.perf_counter() - wall)
    return {name: statistics.median(values) * 1e3 for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--width", type=int, default=854)
    parser.add_argument("--batch", type=int, default=8, help="frames per call (both sides score all of them)")
    parser.add_argument("--images", type=int, default=2, help="batches of generated frames (seeds 0..N-1)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # one thread each: the CPU time of the calling thread is all the work
    import cv2

    cv2.setNumThreads(1)
    rows: dict[str, list[dict[str, float]]] = {}
    names: dict[str, str] = {}
    for seed in range(args.images):
        for case in frame_cases(args.height, args.width, "cpu", args.batch, seed):
            rows.setdefault(case.name, []).append(_alternating(case, args.repeat))
            names[case.name] = case.reference_name
    print(f"{args.width}x{args.height}, {args.batch} frames per call, 1 thread per side, medians of {args.repeat} "
          f"alternating calls on {args.images} frame sets; ms per call; ratio = reference / ours")
    print("| measure | reference | ours ms (cpu) | ref ms (cpu) | ratio (cpu) | ours ms (wall) | ref ms (wall) | "
          "ratio (wall) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, group in rows.items():
        mean = {key: statistics.fmean(row[key] for row in group) for key in group[0]}
        print(f"| {name} | {names[name]} | {mean['ours_cpu']:.2f} | {mean['ref_cpu']:.2f} | "
              f"{mean['ref_cpu'] / mean['ours_cpu']:.2f}x | {mean['ours_wall']:.2f} | {mean['ref_wall']:.2f} | "
              f"{mean['ref_wall'] / mean['ours_wall']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
