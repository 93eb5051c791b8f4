"""``nobg-metrics eval`` end to end vs the PySODEvalToolkit-style loop, on N generated 1024² PNG pairs.

    python benchmarks/bench_cli.py                    # 200 pairs, --tier expensive, the command's defaults
    python benchmarks/bench_cli.py --count 20 --workers 2 --device cuda

Ours: the command in a subprocess (decode in DataLoader workers, all metrics of the tier, every output
file written), with its defaults (``--procs auto``: one scoring rank per core on CPU for >= 64 images per
rank) and once more with ``--procs 1``. Reference: one process reading the same files with ``cv2.imread(IMREAD_GRAYSCALE)`` and
stepping PySODMetrics' MAE, Smeasure, Emeasure, Fmeasure and WeightedFmeasure (``--allocator tuned``:
after ``nobg_metrics.tune_cpu_allocator()``, as the command does for itself). Also timed: ours
restricted to the reference's metric set (``--metrics`` = the SOD suite). Peak memory: the reference's
maximum resident set (``resource.getrusage``); ours: the largest sum over the command's processes (ranks
and decoding workers, sampled from /proc every 0.2 s; shared pages count once per process, so it is
an upper bound).

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


def _tree_rss_mib(root_pid: int) -> float:
    """Summed resident set (MiB) of a process and all its descendants, from /proc (Linux; 0 elsewhere)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(entry.name)] = int(fields[1])
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    tree, frontier = {root_pid}, [root_pid]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(rss.get(pid, 0) for pid in tree) / 2**20


def run_ours(root: Path, args: argparse.Namespace, extra: list[str]) -> tuple[float, float]:
    """Wall seconds and peak summed RSS (MiB, all the command's processes together) of one run."""
    workers = [] if args.workers is None else ["--workers", str(args.workers)]
    command = [sys.executable, "-m", "nobg_metrics", "eval", "--gt", str(root / "gt"), "--pred",
               str(root / "pred"), "--out", str(root / f"out{len(extra)}"), "--quiet", "--device", args.device,
               *workers, *extra]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    peak = 0.0
    while process.poll() is None:
        peak = max(peak, _tree_rss_mib(process.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - start
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command)
    return wall, peak


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
    parser.add_argument("--workers", type=int, default=None, help="decoding workers per rank (default: the command's)")
    parser.add_argument("--allocator", default="default", choices=["default", "tuned"],
                        help="the reference loop's allocator (the command always tunes its own at start)")
    args = parser.parse_args(argv)
    if args.allocator == "tuned":
        import nobg_metrics

        nobg_metrics.tune_cpu_allocator()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_pairs(root, args.count, args.size)
        reference = run_reference(root)
        ref_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ours_tier, peak_tier = run_ours(root, args, ["--tier", args.tier])
        ours_one, peak_one = run_ours(root, args, ["--tier", args.tier, "--procs", "1"])
        ours_suite, peak_suite = run_ours(root, args, ["--metrics", *SOD_SUITE])
    print(f"{args.count} pairs of {args.size}², device {args.device}, workers {args.workers or 'default'}, "
          f"{os.cpu_count()} cores, reference allocator {args.allocator}")
    print("| run | wall s | images/s | ratio (ref/ours) | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|")
    print(f"| reference: cv2 + psm MAE/S/E/F/wF | {reference:.1f} | {args.count / reference:.1f} | 1.00x | "
          f"{ref_peak:.0f} |")
    print(f"| nobg-metrics eval --tier {args.tier} (18 metrics) | {ours_tier:.1f} | {args.count / ours_tier:.1f} | "
          f"{reference / ours_tier:.2f}x | {peak_tier:.0f} |")
    print(f"| nobg-metrics eval --tier {args.tier} --procs 1 | {ours_one:.1f} | {args.count / ours_one:.1f} | "
          f"{reference / ours_one:.2f}x | {peak_one:.0f} |")
    print(f"| nobg-metrics eval --metrics <SOD suite> | {ours_suite:.1f} | {args.count / ours_suite:.1f} | "
          f"{reference / ours_suite:.2f}x | {peak_suite:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
