"""``nobg-metrics eval`` end to end vs the PySODEvalToolkit-style loop, on N generated 1024² PNG pairs.

    python benchmarks/bench_cli.py                    # 200 pairs, --tier expensive, all CPU cores
    python benchmarks/bench_cli.py --count 20 --workers 2 --device cuda

Ours: the command in a subprocess (decode in DataLoader workers, all metrics of the tier, every output
file written). Reference: one process reading the same files with ``cv2.imread(IMREAD_GRAYSCALE)`` and
stepping PySODMetrics' MAE, Smeasure, Emeasure, Fmeasure and WeightedFmeasure. Also timed: ours
restricted to the reference's metric set (``--metrics`` = the SOD suite). Peak memory is the maximum
resident set of the process (``resource.getrusage``; ours: the largest of the command's processes).

``benchmarks/run.py`` collects ``cases()`` from every module; this one is a whole-run benchmark and
contributes no per-call case.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import py_sod_metrics as psm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import sample_uint8  # noqa: E402

SOD_SUITE = ["mae", "s_measure", "e_measure_max", "e_measure_mean", "e_measure_adaptive", "f_measure_max",
             "f_measure_mean", "f_measure_adaptive", "weighted_f_measure"]


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list:
    """No per-call case: run this file directly for the end-to-end numbers."""
    return []


def make_pairs(root: Path, count: int, size: int) -> None:
    """``count`` seeded (gt, pred) PNG pairs of ``size x size`` under ``root/gt`` and ``root/pred``."""
    (root / "gt").mkdir(parents=True)
    (root / "pred").mkdir()
    for index in range(count):
        preds, gts = sample_uint8(size, 1, seed=index)
        cv2.imwrite(str(root / "gt" / f"{index:04d}.png"), gts[0])
        cv2.imwrite(str(root / "pred" / f"{index:04d}.png"), preds[0])


def run_ours(root: Path, args: argparse.Namespace, extra: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one ``nobg-metrics eval`` run."""
    command = [sys.executable, "-m", "nobg_metrics", "eval", "--gt", str(root / "gt"), "--pred",
               str(root / "pred"), "--out", str(root / f"out{len(extra)}"), "--quiet", "--device", args.device,
               "--workers", str(args.workers), *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
    return wall, peak / 1024


def run_reference(root: Path) -> float:
    """Wall seconds of the cv2 + PySODMetrics loop over the same files."""
    start = time.perf_counter()
    metrics = [psm.MAE(), psm.Smeasure(), psm.Emeasure(), psm.Fmeasure(), psm.WeightedFmeasure()]
    for gt_path in sorted((root / "gt").glob("*.png")):
        gt = cv2.imread(str(gt_path), cv2.IMREAD_GRAYSCALE)
        pred = cv2.imread(str(root / "pred" / gt_path.name), cv2.IMREAD_GRAYSCALE)
        for metric in metrics:
            metric.step(pred=pred, gt=gt)
    for metric in metrics:
        metric.get_results()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=200, help="number of generated pairs (default 200)")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--tier", default="expensive")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_pairs(root, args.count, args.size)
        reference = run_reference(root)
        ref_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ours_tier, peak_tier = run_ours(root, args, ["--tier", args.tier])
        ours_suite, peak_suite = run_ours(root, args, ["--metrics", *SOD_SUITE])
    print(f"{args.count} pairs of {args.size}², device {args.device}, {args.workers} workers, "
          f"{os.cpu_count()} cores")
    print("| run | wall s | images/s | ratio (ref/ours) | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|")
    print(f"| reference: cv2 + psm MAE/S/E/F/wF | {reference:.1f} | {args.count / reference:.1f} | 1.00x | "
          f"{ref_peak:.0f} |")
    print(f"| nobg-metrics eval --tier {args.tier} (18 metrics) | {ours_tier:.1f} | {args.count / ours_tier:.1f} | "
          f"{reference / ours_tier:.2f}x | {peak_tier:.0f} |")
    print(f"| nobg-metrics eval --metrics <SOD suite> | {ours_suite:.1f} | {args.count / ours_suite:.1f} | "
          f"{reference / ours_suite:.2f}x | {peak_suite:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
