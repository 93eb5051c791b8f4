"""Size-invariant metrics against PySODMetrics 1.6.2 ``SizeInvarianceMAE`` and ``SizeInvarianceFmeasureV2``.

Two rows per size, both timing one ``update`` per image (the state accumulates, as when a dataset is scored;
``compute`` is not timed on either side), on uint8 PNG-like pairs with ``normalize=True``:

- ``si_mae vs SizeInvarianceMAE``: ``nm.SizeInvariantMAE(normalize=True)`` against ``SizeInvarianceMAE.step``.
  Target: ratio (ref / ours) >= 10.
- ``si_family vs SizeInvarianceFmeasureV2``: ``size_invariant_collection(SI_ENTRIES)`` — all 81 scalar values
  (11 measures x sample-based max/mean/adaptive/binary and overall max/mean/pooled, plus the sample and overall
  PR/ROC AUCs) in one compute group — against ``SizeInvarianceFmeasureV2`` stepped with the eleven handlers of
  ``FmeasureV2`` four times each (``with_dynamic`` + ``with_adaptive`` sample-based, ``with_dynamic``
  overall, ``with_binary`` sample-based and overall: the handlers of PySODMetrics' own test). Target >= 10.

Pairs: :func:`multi_object_pairs` (3-40 targets of sizes from a few pixels to a fifth of the frame, some below
the 50-pixel area threshold, touching and nested ones) and the ``shapes.real_pairs`` kinds the reference can
score: person, animal and large (1-2 targets). ``text`` and ``blobs`` (100+ targets) make the reference raise
``OverflowError`` (its bit map of boxes holds 64), so they are timed on our side only (``--ours-only-kinds``).

    python benchmarks/bench_size_invariance.py --threads 1             # 1024², 6 pairs
    python benchmarks/bench_size_invariance.py --sizes 512 1024 --repeat 9
    python benchmarks/run.py --sizes 1024 --only "si_"                 # the same rows among the other benchmarks
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys
import warnings

import cv2
import numpy as np
import py_sod_metrics as psm
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from harness import Case, combine_rows, format_rows, run_case
from shapes import make_prediction, real_pairs

import nobg_metrics as nm
from nobg_metrics.collection import size_invariant_collection
from nobg_metrics.functional.sod.size_invariance import SI_ENTRIES

TARGET = 10.0
"""Both rows: at least this ratio (reference / ours)."""

HANDLERS = {
    "fm": (psm.FmeasureHandler, {"beta": 0.3}), "f1": (psm.FmeasureHandler, {"beta": 1}),
    "pre": (psm.PrecisionHandler, {}), "rec": (psm.RecallHandler, {}), "spec": (psm.SpecificityHandler, {}),
    "fpr": (psm.FPRHandler, {}), "iou": (psm.IOUHandler, {}), "dice": (psm.DICEHandler, {}),
    "oa": (psm.OverallAccuracyHandler, {}), "ber": (psm.BERHandler, {}), "kappa": (psm.KappaHandler, {}),
}
"""The eleven ``FmeasureV2`` handlers (PySODMetrics 1.6.2)."""


def reference_family() -> psm.SizeInvarianceFmeasureV2:
    """``SizeInvarianceFmeasureV2`` with every handler as PySODMetrics' test runs them (44 handlers)."""
    handlers = {}
    for name, (cls, kwargs) in HANDLERS.items():
        handlers[f"si_sample_{name}"] = cls(with_dynamic=True, with_adaptive=True, sample_based=True, **kwargs)
        handlers[f"si_overall_{name}"] = cls(with_dynamic=True, with_adaptive=False, sample_based=False, **kwargs)
        handlers[f"si_sample_bi{name}"] = cls(with_dynamic=False, with_adaptive=False, with_binary=True,
                                              sample_based=True, **kwargs)
        handlers[f"si_overall_bi{name}"] = cls(with_dynamic=False, with_adaptive=False, with_binary=True,
                                               sample_based=False, **kwargs)
    return psm.SizeInvarianceFmeasureV2(metric_handlers=handlers)


def multi_object_gt(size: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """A 0/255 gt of 3-40 objects (the reference's limit is 64 targets), radii log-uniform from ~2 px to
    ~H/10: some below the 50-px threshold, some touching or inside others' boxes; one ring around a blob."""
    height, width = size
    gt = np.zeros(size, np.uint8)
    unit = min(height, width)
    for _ in range(int(rng.integers(3, 41))):
        radius = float(np.exp(rng.uniform(np.log(2), np.log(unit / 10))))
        axes = (max(1, int(radius)), max(1, int(radius * rng.uniform(0.4, 1.0))))
        centre = (int(rng.uniform(0, width)), int(rng.uniform(0, height)))
        cv2.ellipse(gt, centre, axes, float(rng.uniform(0, 180)), 0, 360, 255, -1)
    centre, radius = (int(width * 0.7), int(height * 0.3)), max(4, unit // 12)
    cv2.circle(gt, centre, radius, 255, max(1, radius // 5))
    cv2.circle(gt, centre, max(1, radius // 3), 255, -1)
    return gt


def multi_object_pairs(size: tuple[int, int], count: int = 3, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` (pred_u8, gt_u8) pairs of :func:`multi_object_gt` with ``shapes.make_prediction`` predictions."""
    pairs = []
    for i in range(count):
        rng = np.random.default_rng([seed, 1000 + i])
        gt = multi_object_gt(size, rng)
        pairs.append((make_prediction(gt, rng), gt))
    return pairs


def bench_pairs(size: int, seed: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """The pair of ``seed`` for ``run.py``: even seeds a multi-object gt, odd ones person / animal / large."""
    if seed % 2 == 0:
        pred, gt = multi_object_pairs((size, size), 1, seed)[0]
        return [("multi-object", pred, gt)]
    kind_seed = (0, 1, 4)[(seed // 2) % 3]  # real_pairs cycles person, animal, text, blobs, large
    pred, gt = real_pairs((size, size), count=1, seed=kind_seed)[0]
    return [("real", pred, gt)]


def cases(size: int, device: str, batch: int = 1, seed: int = 0, pairs=None) -> list[Case]:
    pairs = pairs if pairs is not None else [(p, g) for _, p, g in bench_pairs(size, seed)]
    pred_t = torch.from_numpy(np.stack([p for p, _ in pairs]))[:, None].to(device)
    gt_t = torch.from_numpy(np.stack([g for _, g in pairs]))[:, None].to(device)
    ours_mae = nm.SizeInvariantMAE(normalize=True).to(device)
    ours_family = size_invariant_collection(list(SI_ENTRIES), normalize=True, empty_gt="reference").to(device)
    reference_mae, reference = psm.SizeInvarianceMAE(), reference_family()

    def step(metric):
        def run():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for pred, gt in pairs:
                    metric.step(pred, gt)
        return run

    images = len(pairs)
    return [
        Case("si_mae vs SizeInvarianceMAE (target >= 10x)", size, device, lambda: ours_mae.update(pred_t, gt_t),
             step(reference_mae), "psm.SizeInvarianceMAE", images),
        Case("si_family (81 values) vs SizeInvarianceFmeasureV2 (target >= 10x)", size, device,
             lambda: ours_family.update(pred_t, gt_t), step(reference),
             "psm.SizeInvarianceFmeasureV2, 11 handlers x 4", images),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--images", type=int, default=6, help="pairs: half multi-object, half person/animal/large")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--block", type=int, default=1,
                        help="alternate the sides in blocks of N calls, timing all but each block's first")
    parser.add_argument("--ours-only-kinds", action="store_true",
                        help="also time our side alone on real_pairs' text and blobs (100+ targets)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: nothing to run on cuda", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for size in args.sizes:
        per_pair = [cases(size, args.device, seed=seed) for seed in range(args.images)]
        for variants in zip(*per_pair):
            rows.append(combine_rows([run_case(case, args.repeat, block=args.block) for case in variants]))
            print(f"  {variants[0].name} {size}²: {rows[-1]['ours_ms']:.2f} ms", file=sys.stderr, flush=True)
        if args.ours_only_kinds:
            for kind_seed, kind in ((2, "text"), (3, "blobs")):
                pairs = real_pairs((size, size), count=1, seed=kind_seed)
                for case in cases(size, args.device, pairs=pairs):
                    case.reference, case.reference_name = None, ""
                    case.name = f"{case.name.split(' vs ')[0]} on {kind} (ours only)"
                    rows.append(run_case(case, args.repeat))
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, {args.device} ({device_name}), {torch.get_num_threads()} threads, "
          f"mean over {args.images} pairs of medians of {args.repeat} calls")
    print(format_rows(rows))
    for row in rows:
        if row["ratio"] is not None:
            verdict = "meets" if row["ratio"] >= TARGET else "MISSES"
            print(f"{row['size']}² {row['name'].split(' (')[0]}: ours {row['ours_ms']:.2f} ms/image, reference "
                  f"{row['ref_ms']:.2f} ms/image: {row['ratio']:.1f}x ({verdict} >= {TARGET:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
