"""``nobg-metrics eval`` end to end vs the PySODEvalToolkit-style loop, on N generated 1024² PNG pairs.

    python benchmarks/bench_cli.py                    # 200 pairs, --tier expensive, the command's defaults
    python benchmarks/bench_cli.py --count 20 --workers 2 --device cuda

Ours: the command in a subprocess (decode in DataLoader workers, all metrics of the tier, every output
file written), with its defaults (``--procs auto``: one scoring rank per core on CPU for >= 64 images per
rank) and once more with ``--procs 1``. Reference: one process reading the same files with
``cv2.imread(IMREAD_GRAYSCALE)`` and stepping PySODMetrics' MAE, Smeasure, Emeasure, Fmeasure and WeightedFmeasure
(``--allocator tuned``: after ``nobg_metrics.tune_cpu_allocator()``, as the command does for itself). Also timed: ours
restricted to the reference's metric set (``--metrics`` = the SOD suite). Peak memory: the reference's
maximum resident set (``resource.getrusage``); ours: the largest sum over the command's processes (ranks
and decoding workers, sampled from /proc every 0.2 s; shared pages count once per process, so it is
an upper bound).

``--toolkit``: PySODEvalToolkit's setting instead — real-shape pairs (``shapes.real_pairs``: person, animal, text,
blobs, large objects with model-like predictions) as ``--methods`` method folders over ``count / methods``
gts, and the reference structured as PySODEvalToolkit's ``cal_sod_matrics`` runs it: a
``multiprocessing.pool.ThreadPool(num_workers=4)`` with one task per method, each task reading its pairs with
``cv2.imread(IMREAD_GRAYSCALE)`` and stepping its default metrics (``mae fm em sm wfm``: PySODMetrics' MAE,
Fmeasure, Emeasure, Smeasure, WeightedFmeasure). Ours: ``--preset sod`` (the same nine numbers) with the
command's defaults.

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
from harness import sample_uint8

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


def make_method_pairs(root: Path, count: int, size: int, methods: int) -> None:
    """``count / methods`` real-shape gts under ``root/gt`` and one prediction folder per method."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from shapes import make_prediction, real_pairs

    (root / "gt").mkdir(parents=True)
    per_method = max(count // methods, 1)
    for index, (_, gt) in enumerate(real_pairs((size, size), count=per_method, seed=0)):
        cv2.imwrite(str(root / "gt" / f"{index:04d}.png"), gt)
        for method in range(methods):
            folder = root / f"method{method}"
            folder.mkdir(exist_ok=True)
            cv2.imwrite(str(folder / f"{index:04d}.png"), make_prediction(gt, seed=1000 * method + index))


def _toolkit_task(gt_root: Path, pred_root: Path) -> None:
    """One method as the toolkit's ``evaluate_data`` runs it (its default metric names)."""
    metrics = [psm.MAE(), psm.Fmeasure(), psm.Emeasure(), psm.Smeasure(), psm.WeightedFmeasure()]
    for gt_path in sorted(gt_root.glob("*.png")):
        gt = cv2.imread(str(gt_path), cv2.IMREAD_GRAYSCALE)
        pred = cv2.imread(str(pred_root / gt_path.name), cv2.IMREAD_GRAYSCALE)
        for metric in metrics:
            metric.step(pred=pred, gt=gt)
    for metric in metrics:
        metric.get_results()


def run_toolkit(root: Path, methods: int, num_workers: int = 4) -> float:
    """Wall seconds of the toolkit's structure: a thread pool of ``num_workers``, one task per method."""
    from multiprocessing import pool

    start = time.perf_counter()
    threads = pool.ThreadPool(processes=num_workers)
    results = [threads.apply_async(_toolkit_task, (root / "gt", root / f"method{m}")) for m in range(methods)]
    threads.close()
    threads.join()
    for result in results:
        result.get()  # re-raises an error of a task
    return time.perf_counter() - start


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
    parser.add_argument("--toolkit", action="store_true",
                        help="real shapes, --methods folders, the toolkit's 4-thread structure vs --preset sod")
    parser.add_argument("--methods", type=int, default=4, help="method folders with --toolkit (default 4)")
    args = parser.parse_args(argv)
    if args.toolkit:
        return _toolkit_main(args)
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


def _toolkit_main(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_method_pairs(root, args.count, args.size, args.methods)
        pairs = len(list((root / "gt").glob("*.png"))) * args.methods
        preds = [arg for m in range(args.methods) for arg in ("--pred", str(root / f"method{m}"))]
        workers = [] if args.workers is None else ["--workers", str(args.workers)]
        command = [sys.executable, "-m", "nobg_metrics", "eval", "--gt", str(root / "gt"), *preds, "--out",
                   str(root / "out"), "--quiet", "--no-plots", "--device", args.device, "--preset", "sod", *workers]
        timings = []
        for attempt in range(2):  # alternate, twice each: the machine drifts
            toolkit = run_toolkit(root, args.methods)
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            ours = time.perf_counter() - start
            timings.append((toolkit, ours))
            print(f"run {attempt}: toolkit structure {toolkit:.1f} s, nobg-metrics --preset sod {ours:.1f} s, "
                  f"{toolkit / ours:.2f}x", flush=True)
    toolkit, ours = (min(t) for t in zip(*timings))
    print(f"{pairs} real-shape pairs of {args.size}², {args.methods} methods, {os.cpu_count()} cores: best of 2: "
          f"toolkit (ThreadPool 4) {toolkit:.1f} s, ours {ours:.1f} s: **{toolkit / ours:.2f}x**")
    return 0


if __name__ == "__main__":
    sys.exit(main())
