"""The whole confusion family from one pass, on realistic masks (``shapes.real_pairs``: a person, an
animal with a thin tail and holes, text, 100+ blobs, a large object with holes; grey-edged and 0/255 gts;
model-like uint8 predictions).

Two rows per size, both timing one ``update`` per image (the state accumulates, as when a dataset is
scored; ``compute`` is not timed on either side):

- ``family vs FmeasureV2``: ``make_collection(metrics=FAMILY, normalize=True, empty_gt="reference")``
  (every member: 12 measures x max/mean/adaptive, binary and pooled, PR/ROC AUC) against
  ``py_sod_metrics.FmeasureV2`` stepped with all eleven handlers (F β²=0.3, F β²=1, precision, recall,
  specificity, FPR, IoU, Dice, overall accuracy, BER, kappa) in all modes: ``with_dynamic``,
  ``with_adaptive`` and ``with_binary`` (``sample_based=True``), plus the eleven again with
  ``sample_based=False`` (the pooled binary counts; they share the binary pass, so they cost the
  reference almost nothing). Target: ratio (ref / ours) >= 5. Our side also computes the E-measure's three
  modes and the PR/ROC AUC curves, which have no ``FmeasureV2`` handler: the ratio is conservative.
- ``family vs FMeasure alone``: the same collection against ``nm.FMeasure("max", normalize=True,
  empty_gt="reference")`` alone (the reference column is our own FMeasure). The bound is family <= 1.2x
  FMeasure, i.e. the printed ratio (FMeasure / family) >= 0.83.

    python benchmarks/bench_family.py                         # 1024², five pairs (one of each shape)
    python benchmarks/bench_family.py --threads 1 --sizes 512 1024 2048 --repeat 9
    python benchmarks/run.py --sizes 1024 --only family       # the same rows among the other benchmarks

Under ``run.py`` each seed is one pair (seed ``k`` draws shape ``KINDS[k % 5]``).
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import warnings

import numpy as np
import py_sod_metrics as psm
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from harness import Case, combine_rows, format_rows, run_case
from shapes import pair_kinds, real_pairs

import nobg_metrics as nm

REFERENCE_HANDLERS = {
    "fm": (psm.FmeasureHandler, {"beta": 0.3}),
    "f1": (psm.FmeasureHandler, {"beta": 1}),
    "pre": (psm.PrecisionHandler, {}),
    "rec": (psm.RecallHandler, {}),
    "spec": (psm.SpecificityHandler, {}),
    "fpr": (psm.FPRHandler, {}),
    "iou": (psm.IOUHandler, {}),
    "dice": (psm.DICEHandler, {}),
    "oa": (psm.OverallAccuracyHandler, {}),
    "ber": (psm.BERHandler, {}),
    "kappa": (psm.KappaHandler, {}),
}
"""The eleven ``FmeasureV2`` handlers the family reproduces (PySODMetrics 1.6.2)."""

FAMILY_TARGET = 5.0
"""Family vs ``FmeasureV2``: at least this ratio (reference / ours)."""

ALONE_BOUND = 1.2
"""Family vs FMeasure alone: at most this factor, i.e. a ratio (FMeasure / family) of at least 1 / 1.2."""


def reference_family() -> psm.FmeasureV2:
    """``FmeasureV2`` with every handler in every mode: dynamic, adaptive and binary (sample-based), and pooled."""
    handlers = {}
    for name, (cls, kwargs) in REFERENCE_HANDLERS.items():
        handlers[name] = cls(with_dynamic=True, with_adaptive=True, with_binary=True, sample_based=True, **kwargs)
        handlers[f"{name}_pooled"] = cls(with_dynamic=False, with_adaptive=False, with_binary=True,
                                         sample_based=False, **kwargs)
    return psm.FmeasureV2(metric_handlers=handlers)


def family_collection(device: str = "cpu"):
    return nm.make_collection(metrics=nm.collection.FAMILY, normalize=True, empty_gt="reference").to(device)


def _tensors(pairs: list[tuple[np.ndarray, np.ndarray]], device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(B, 1, H, W)`` uint8 tensors of the pairs' predictions and gts."""
    pred = torch.from_numpy(np.stack([p for p, _ in pairs]))[:, None].to(device)
    gt = torch.from_numpy(np.stack([g for _, g in pairs]))[:, None].to(device)
    return pred, gt


def _lazy(factory):
    """A call that builds its metric on first use: ``run.py`` builds every module's cases before filtering them
    (its smoke test at 64² would otherwise build two 60-member collections per seed for nothing). The first
    call is always an untimed warm-up (``run_case``), so the build and the compute-group setup are never timed."""
    built = []

    def run():
        if not built:
            built.append(factory())
        return built[0]()
    return run


def cases(size: int, device: str, batch: int = 1, seed: int = 0, pairs=None) -> list[Case]:
    pairs = pairs if pairs is not None else real_pairs((size, size), count=batch, seed=seed)
    pred_t, gt_t = _tensors(pairs, device)

    def update(make_metric):
        def factory():
            metric = make_metric()

            def run():
                metric.update(pred_t, gt_t)  # accumulates: one update per image (or batch), as over a dataset
            return run
        return _lazy(factory)

    def reference_step():
        reference = reference_family()

        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for pred, gt in pairs:
                    reference.step(pred, gt)
        return run

    images = len(pairs)
    return [
        Case("family vs FmeasureV2 (target >= 5x)", size, device, update(lambda: family_collection(device)),
             _lazy(reference_step), "psm.FmeasureV2, 11 handlers x dyn/adp/bin + pooled", images),
        Case(f"family vs FMeasure alone (ratio >= {1 / ALONE_BOUND:.2f} means <= {ALONE_BOUND}x)", size, device,
             update(lambda: family_collection(device)),
             update(lambda: nm.FMeasure("max", normalize=True, empty_gt="reference").to(device)),
             "nm.FMeasure('max') alone", images),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--images", type=int, default=5, help="pairs (kinds cycle person, animal, text, blobs, large)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls of each side first (run_case adds one)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--block", type=int, default=1,
                        help="alternate the sides in blocks of N calls, timing all but each block's first")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: nothing to run on cuda", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"shapes: {', '.join(pair_kinds(args.images))}")
    rows = []
    for size in args.sizes:
        pairs = real_pairs((size, size), count=args.images)
        per_pair = [cases(size, args.device, pairs=[pair]) for pair in pairs]
        for variants in zip(*per_pair):  # the same case on each pair
            for case in variants:
                for _ in range(args.warmup):
                    case.ours()
                    case.reference()
            rows.append(combine_rows([run_case(case, args.repeat, block=args.block) for case in variants]))
            print(f"  {variants[0].name} {size}²: {rows[-1]['ours_ms']:.2f} ms", file=sys.stderr, flush=True)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, {args.device} ({device_name}), {torch.get_num_threads()} threads, "
          f"mean over {args.images} pairs of medians of {args.repeat} calls, "
          f"{'call by call' if args.block == 1 else f'blocks of {args.block} (first of each not timed)'}")
    print(format_rows(rows))
    for row in rows:
        if row["name"].startswith("family vs FmeasureV2"):
            verdict = "meets" if row["ratio"] >= FAMILY_TARGET else "MISSES"
            print(f"{row['size']}²: family {row['ours_ms']:.2f} ms/image, FmeasureV2 {row['ref_ms']:.2f} ms/image: "
                  f"{row['ratio']:.2f}x faster ({verdict} >= {FAMILY_TARGET:g}x)")
        else:
            factor = row["ours_ms"] / row["ref_ms"]
            verdict = "meets" if factor <= ALONE_BOUND else "MISSES"
            print(f"{row['size']}²: family {row['ours_ms']:.2f} ms/image, FMeasure alone {row['ref_ms']:.2f} "
                  f"ms/image: family = {factor:.2f}x FMeasure ({verdict} <= {ALONE_BOUND}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
