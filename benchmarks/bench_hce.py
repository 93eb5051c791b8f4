"""HCE (Human Correction Effort) vs its references, side by side in one process, one image per call:

- protocol "pysodmetrics": ``nm.HCE(normalize=True)`` vs PySODMetrics 1.6.2 ``HumanCorrectionEffortMeasure``
  (``step`` = prepare + ``cal_hce``);
- protocol "dis": ``nm.HCE(protocol="dis")`` vs the DIS tool's port (``tests/reference/hce_dis.py``).

Images: ``shapes.real_pairs`` (person, animal, text, blobs, large silhouettes with model-like predictions),
and the same gts with degraded predictions (``--degraded``: many error regions, the expensive case).
Both sides check their values agree before timing. ratio = reference / ours (> 1: ours is faster).

    python benchmarks/bench_hce.py --threads 1                 # 1024², 5 pairs
    python benchmarks/bench_hce.py --threads 1 --sizes 512 --degraded
    python benchmarks/bench_hce.py --threads 1 --sizes 512 1024 --device-path --images 2 --repeat 1

``--device-path``: ours on the sync-free path that runs off CPU by default (``host_reads.free_on`` forced to
False: full frames, padded lists, fixed rounds) against ours on the CPU path (sized by the data) — the
price of never reading the host; ratio = CPU path / sync-free path (< 1: the sync-free path is slower).
On ``--device cuda`` the same pair is the default path against ``engine="data_sized"``.
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys

import cv2
import numpy as np
import py_sod_metrics as psm
import torch

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent))
from harness import Case, combine_rows, format_rows, run_case
from shapes import real_pairs

from nobg_metrics.metrics.sod.hce import HCE
from nobg_metrics.ops import host_reads
from tests.reference.hce_dis import hce_dis

TARGET = 1.0


def _degrade(rng: np.random.Generator, gt: np.ndarray) -> np.ndarray:
    """A poor prediction: speckled misses, a shifted edge, scattered false-positive blobs, soft levels."""
    mask = gt > 128
    pred = mask & (rng.random(mask.shape) > 0.03)
    pred = cv2.dilate(pred.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    pred |= cv2.dilate((rng.random(mask.shape) < 0.0005).astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    return np.where(pred, rng.integers(100, 256, mask.shape), rng.integers(0, 160, mask.shape)).astype(np.uint8)


def _on_device_path(call):
    """``call`` with ``host_reads.free_on`` forced to False (what CUDA runs), restored afterwards."""
    def forced():
        saved = host_reads.free_on
        host_reads.free_on = lambda tensor: False
        try:
            return call()
        finally:
            host_reads.free_on = saved
    return forced


def _pairs(size: int, batch: int, seed: int, degraded: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(preds, gts)``: ``batch`` real-shape uint8 pairs (seeds ``seed, seed + 1, ...``), optionally degraded."""
    pairs = [real_pairs((size, size), count=1, seed=seed + k)[0] for k in range(batch)]
    if degraded:
        pairs = [(_degrade(np.random.default_rng(seed + k), gt), gt) for k, (_, gt) in enumerate(pairs)]
    return np.stack([p for p, _ in pairs]), np.stack([g for _, g in pairs])


def _runner(pred: torch.Tensor, gt: torch.Tensor):
    """``run(metric)``: a call that scores ``(pred, gt)`` afresh with ``metric``."""
    def run(metric: HCE):
        def call():
            metric.reset()
            metric.update(pred, gt)
            return metric.compute()
        return call
    return run


def device_path_cases(size: int, device: str, batch: int = 1, seed: int = 0, degraded: bool = False) -> list[Case]:
    """The sync-free path against the data-sized one, both ours (values checked equal first)."""
    preds, gts = _pairs(size, batch, seed, degraded)
    run = _runner(torch.from_numpy(preds).to(device), torch.from_numpy(gts).to(device))
    sync_free = HCE(normalize=True, validate_args=False).to(device)
    by_data = HCE(normalize=True, engine="data_sized", validate_args=False).to(device)
    fixed = run(sync_free) if device == "cuda" else _on_device_path(run(sync_free))
    assert float(fixed()) == float(run(by_data)()), "the two paths differ"
    label = " degraded" if degraded else ""
    return [Case(f"hce sync-free path{label}", size, device, fixed, run(by_data), "data-sized path", batch)]


def cases(size: int, device: str, batch: int = 1, seed: int = 0, degraded: bool = False) -> list[Case]:
    """``run.py``'s signature: ``batch`` images per call (pairs ``seed, seed + 1, ...``)."""
    preds, gts = _pairs(size, batch, seed, degraded)
    run = _runner(torch.from_numpy(preds).to(device), torch.from_numpy(gts).to(device))
    ours_pysod = HCE(normalize=True, validate_args=False).to(device)
    ours_dis = HCE(protocol="dis", validate_args=False).to(device)

    def ref_pysod():
        reference = psm.HumanCorrectionEffortMeasure(relax=5, epsilon=2.0)
        for pred, gt in zip(preds, gts):
            reference.step(pred, gt)
        return reference.get_results()["hce"]

    def ref_dis():
        return float(np.mean([hce_dis(gt, pred) for pred, gt in zip(preds, gts)]))

    assert float(run(ours_pysod)()) == float(ref_pysod()), "pysodmetrics values differ"
    assert float(run(ours_dis)()) == ref_dis(), "DIS values differ"
    label = " degraded" if degraded else ""
    return [
        Case(f"hce pysodmetrics{label}", size, device, run(ours_pysod), ref_pysod, "psm.HumanCorrectionEffortMeasure",
             batch),
        Case(f"hce dis{label}", size, device, run(ours_dis), ref_dis, "DIS tool port", batch),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--images", type=int, default=5, help="pairs (real_pairs cycles the 5 kinds)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads and cv2.setNumThreads")
    parser.add_argument("--degraded", action="store_true", help="poor predictions instead of model-like ones")
    parser.add_argument("--device-path", action="store_true",
                        help="ours sync-free (the default off CPU) vs ours data-sized, instead of vs the references")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: nothing to run on cuda", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
        cv2.setNumThreads(args.threads)
    rows = []
    for size in args.sizes:
        make = device_path_cases if args.device_path else cases
        per_pair = [make(size, args.device, 1, seed, degraded=args.degraded) for seed in range(args.images)]
        for variants in zip(*per_pair):
            rows.append(combine_rows([run_case(case, args.repeat) for case in variants]))
            print(f"  {variants[0].name} {size}²: {rows[-1]['ours_ms']:.1f} ms", file=sys.stderr, flush=True)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, {args.device} ({device_name}), {torch.get_num_threads()} threads, "
          f"mean over {args.images} pairs of medians of {args.repeat} calls")
    print(format_rows(rows))
    for row in rows:
        verdict = "meets" if row["ratio"] >= TARGET else "MISSES"
        print(f"{row['size']}² {row['name']}: ours {row['ours_ms']:.1f} ms/image, reference {row['ref_ms']:.1f} "
              f"ms/image: {row['ratio']:.2f}x ({verdict} >= {TARGET:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
