"""The P3M-10k / AM-2k / AIM-500 suite vs the numpy/scipy/skimage port of ``core/evaluate.py``.

    python benchmarks/bench_matting_p3m.py --threads 1            # 1024², 2 realistic pairs
    python benchmarks/run.py --only p3m --sizes 1024 --threads 1  # the same cases through the common runner

Data: :func:`shapes.real_pairs` (person, animal, text, blobs, large), the prediction as the in-memory float64
matte the P3M / GFM / AIM test scripts score (``pred_u8 / 255``), the gt as its uint8 PNG bytes (the port reads
``png / 255.``) and a +-10 px band trimap. Cases:

- ``p3m suite``: all ten values (SAD, MSE, MAD, SAD-T, MSE-T, MAD-T, SAD-FG, SAD-BG, Grad, Conn): our three
  updates (the eight pixel errors are one statistic) + computes, vs the port's five functions;
- ``p3m grad`` / ``p3m conn`` / ``p3m pixel errors``: each part alone.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
import torch
from scipy import ndimage

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from harness import Case, format_rows, run_case
from shapes import real_pairs

from nobg_metrics.functional.matting.p3m import ERROR_COLUMNS, _p3m_error_compute
from nobg_metrics.metrics.matting.p3m import (
    P3MMAD,
    P3MMSE,
    P3MSAD,
    P3MConnectivityError,
    P3MGradientError,
)
from tests.reference import p3m_port as port


def band_trimap(gt: np.ndarray, width: int = 10) -> np.ndarray:
    """Unknown (128) on a +-``width`` px band around the gt edge, 255 / 0 elsewhere."""
    fg = gt > 127
    band = ndimage.binary_dilation(fg, iterations=width) & ~ndimage.binary_erosion(fg, iterations=width)
    trimap = np.where(fg, 255, 0).astype(np.uint8)
    trimap[band] = 128
    return trimap


def _pixel_metrics(device: str) -> list:
    """One metric per pixel error (P3MSAD / P3MMSE / P3MMAD with their regions); they share one statistic."""
    return [{"sad": P3MSAD, "mse": P3MMSE, "mad": P3MMAD}[name.split("_")[0]](
        region=([*name.split("_"), "image"])[1]).to(device) for name in ERROR_COLUMNS]


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    pairs = real_pairs((size, size), count=batch, seed=seed)
    preds = np.stack([pred / 255.0 for pred, _ in pairs])  # float64 in-memory predictions
    gts = np.stack([gt for _, gt in pairs])
    trimaps = np.stack([band_trimap(gt) for gt in gts])
    pred_t, gt_t, tri_t = (torch.from_numpy(a).to(device) for a in (preds, gts, trimaps))
    pixel = _pixel_metrics(device)
    grad, conn = P3MGradientError().to(device), P3MConnectivityError().to(device)

    def ours_pixels():
        pixel[0].reset()
        pixel[0].update(pred_t, gt_t, tri_t)
        # the other seven read the same states, as the members of a collection's compute group do
        return [_p3m_error_compute(name, pixel[0].p3m_error_sums, pixel[0].p3m_error_image_count,
                                   pixel[0].p3m_error_trimap_count) for name in ERROR_COLUMNS]

    def ours_single(metric):
        def run():
            metric.reset()
            metric.update(pred_t, gt_t, tri_t)
            return metric.compute()
        return run

    def ours_suite():
        return [*ours_pixels(), ours_single(grad)(), ours_single(conn)()]

    def ref(function, with_trimap):
        def run():
            return [function(p, port.read_alpha(g), *([t] if with_trimap else [])) for p, g, t in
                    zip(preds, gts, trimaps)]
        return run

    def ref_pixels():
        return ref(port.whole_image_errors, False)() + ref(port.trimap_errors, True)() + \
            ref(port.known_region_errors, True)()

    def ref_suite():
        return [port.all_metrics(p, port.read_alpha(g), t) for p, g, t in zip(preds, gts, trimaps)]

    name = "numpy/scipy/skimage P3M port"
    return [
        Case("p3m suite (10 values)", size, device, ours_suite, ref_suite, name, batch),
        Case("p3m pixel errors (8 values)", size, device, ours_pixels, ref_pixels, name, batch),
        Case("p3m grad", size, device, ours_single(grad), ref(port.gradient, False), name, batch),
        Case("p3m conn", size, device, ours_single(conn), ref(port.connectivity, False), name, batch),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--images", type=int, default=2, help="generated pairs (seeds 0..N-1), timed one by one")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of case names to keep")
    parser.add_argument("--allocator", default="default", choices=["default", "tuned"],
                        help="tuned: nobg_metrics.tune_cpu_allocator() first (fewer page faults, both sides gain)")
    args = parser.parse_args(argv)
    if args.allocator == "tuned":
        import nobg_metrics

        nobg_metrics.tune_cpu_allocator()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for size in args.sizes:
        for seed in range(args.images):
            for case in cases(size, args.device, seed=seed):
                if args.only and not any(part in case.name for part in args.only):
                    continue
                rows.append(run_case(case, repeat=args.repeat) | {"name": f"{case.name} [pair {seed}]"})
    print(f"threads: {torch.get_num_threads()}, allocator: {args.allocator}")
    print(format_rows(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
