"""The context measures against PySODMetrics 1.6.2: ``ContextMeasure`` (Cm, target >= 2x) and
``CamouflageContextMeasure`` (CCm, target >= 1x), one ``update`` / ``step`` per image (uint8, ``normalize=True``), on
realistic masks (``shapes.real_pairs``: person, animal, text, blobs, large) — for CCm with an RGB scene per mask
(:func:`camouflage_image`: a smooth colour field, the object a few levels off it, as camouflaged objects are).

    python benchmarks/bench_context_measure.py --threads 1                 # 1024², 3 pairs
    python benchmarks/bench_context_measure.py --sizes 512 1024 --images 5
    python benchmarks/run.py --sizes 1024 --only context                   # the same rows among the other benchmarks
    python benchmarks/bench_context_measure.py --device-path --sizes 256 512 --images 2 --repeat 1
                                   # CCm's sync-free device path forced on CPU, against our CPU path and the reference

The reference's CCm is dominated by its 1-NN search (sklearn brute force: a float64 matrix product of the fg patches
by the surrounding-background patches, 149 features), ours by the same search (a float32 matrix product, exact on
the Lab integers, with a float64 recompute of the near candidates).
"""

from __future__ import annotations

import argparse
import contextlib
import pathlib
import platform
import sys

import cv2
import numpy as np
import py_sod_metrics as psm
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from harness import Case, format_rows, run_case
from shapes import pair_kinds, real_pairs

from nobg_metrics.metrics.sod.context_measure import (
    CamouflageContextMeasure,
    ContextMeasure,
)
from nobg_metrics.ops import host_reads


@contextlib.contextmanager
def forced_device_path():
    """What CUDA runs, on CPU: ``host_reads.free_on`` False (the sync-free CCm search over every grid patch)."""
    original = host_reads.free_on
    host_reads.free_on = lambda tensor: False
    try:
        yield
    finally:
        host_reads.free_on = original


def camouflage_image(gt: np.ndarray, seed: int) -> np.ndarray:
    """``(H, W, 3)`` uint8 RGB: a smooth colour field with noise, the gt (``> 128``) shifted by a few levels."""
    rng = np.random.default_rng(seed)
    height, width = gt.shape
    rows, cols = np.mgrid[0:height, 0:width] / max(height, width)
    phases = rng.uniform(0, 6, 3)
    field = np.stack([125 + 70 * np.sin(5 * cols + p) * np.cos(4 * rows - p) for p in phases], -1)
    field += rng.normal(0, 5, field.shape)
    image = np.where(gt[..., None] > 128, field + rng.normal(12, 4, 3), field)
    return np.clip(np.rint(image), 0, 255).astype(np.uint8)


def cases(size: int, device: str, batch: int = 3, seed: int = 0, device_path: bool = False) -> list[Case]:
    pairs = real_pairs((size, size), count=batch, seed=seed)
    images = [camouflage_image(gt, seed + i) for i, (_, gt) in enumerate(pairs)]
    tensors = [(torch.from_numpy(p).to(device), torch.from_numpy(g).to(device),
                torch.from_numpy(im).permute(2, 0, 1).contiguous().to(device)) for (p, g), im in zip(pairs, images)]
    ours_cm = ContextMeasure(normalize=True, empty_gt="reference", validate_args=False).to(device)
    ours_ccm = CamouflageContextMeasure(normalize=True, empty_gt="reference", validate_args=False).to(device)

    def ours(metric, with_image, forced=False):
        def run():
            with forced_device_path() if forced else contextlib.nullcontext():
                for pred, gt, image in tensors:
                    metric.update(pred, gt, image) if with_image else metric.update(pred, gt)
        return run

    def reference(factory, with_image):
        def run():
            metric = factory()
            for (pred, gt), image in zip(pairs, images):
                metric.step(pred, gt, img=image) if with_image else metric.step(pred, gt)
        return run

    if device_path:  # CCm's sync-free path forced on CPU: against the reference, and against our CPU path
        forced = CamouflageContextMeasure(normalize=True, empty_gt="reference", validate_args=False).to(device)
        return [
            Case("CCm sync-free device path (forced on CPU) vs CamouflageContextMeasure", size, device,
                 ours(forced, True, forced=True), reference(psm.CamouflageContextMeasure, True),
                 "psm.CamouflageContextMeasure", len(pairs)),
            Case("CCm sync-free device path (forced on CPU) vs our CPU path", size, device,
                 ours(forced, True, forced=True), ours(ours_ccm, True), "ours, CPU path", len(pairs)),
        ]
    return [
        Case("context_measure (Cm) vs ContextMeasure (target >= 2x)", size, device, ours(ours_cm, False),
             reference(psm.ContextMeasure, False), "psm.ContextMeasure", len(pairs)),
        Case("camouflage_context_measure (CCm) vs CamouflageContextMeasure (target >= 1x)", size, device,
             ours(ours_ccm, True), reference(psm.CamouflageContextMeasure, True), "psm.CamouflageContextMeasure",
             len(pairs)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024])
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch and OpenCV threads (default: theirs)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--device-path", action="store_true",
                        help="CCm only: its sync-free device path forced on CPU (host_reads.free_on False)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        cv2.setNumThreads(args.threads)
    print(f"torch {torch.__version__}, {args.device}, {torch.get_num_threads()} threads, {platform.processor()}; "
          f"shapes: {', '.join(pair_kinds(args.images))}")
    rows = [run_case(case, repeat=args.repeat) for size in args.sizes
            for case in cases(size, args.device, args.images, device_path=args.device_path)]
    print(format_rows(rows))


if __name__ == "__main__":
    main()
