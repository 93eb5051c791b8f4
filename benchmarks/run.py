"""Run every benchmark side by side and print a markdown table of ratios (reference time / ours).

    python benchmarks/run.py                       # CPU, 256² 1024² 2048², all metrics
    python benchmarks/run.py --sizes 1024 --only mae iou
    python benchmarks/run.py --sizes 4096 --modules weighted_f sod --only weighted_f "sod suite"
    python benchmarks/run.py --device cuda --sizes 1024 --batch 16   # images/s on a GPU
    python benchmarks/run.py --allocator tuned     # glibc keeps freed blocks (both sides gain)
    python benchmarks/run.py --block 3             # steady per-image cost: sides alternate in blocks of 3

Each ``bench_*.py`` module here contributes ``cases(size, device, batch, seed)``. Every case runs on
``--images`` generated pairs (seeds 0, 1, ...: objects covering 8 %, 10 %, 31 %, 30 %, 37 %, 20 % ... of
the frame, since several metrics cost more on larger objects); a row reports the mean time per pair and
the ratio of the summed times.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pathlib
import platform
import sys

import torch

import nobg_metrics

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness
from harness import combine_rows, format_rows, run_case


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 2048])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batch", type=int, default=1, help="images per call for our side")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of case names to keep")
    parser.add_argument("--modules", nargs="*", default=None,
                        help="bench_<name>.py modules to build cases from (default: all; building every module's "
                             "cases at 4096² takes minutes)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--images", type=int, default=4, help="generated pairs per case (seeds 0..N-1)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--no-reference", action="store_true", help="time our side only (images/s)")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="also write the rows as JSON")
    parser.add_argument("--block", type=int, default=1,
                        help="alternate the sides in blocks of N calls, timing all but each block's first "
                             "(steady per-image cost; default 1: call by call)")
    parser.add_argument("--shapes", default="real", choices=["real", "disc"],
                        help="the generated pairs: real-shape masks (default) or the discs used until 2026-12-01")
    parser.add_argument("--allocator", default="default", choices=["default", "tuned"],
                        help="tuned: nobg_metrics.tune_cpu_allocator() first, for ours and the reference alike")
    args = parser.parse_args(argv)
    harness.SHAPES = args.shapes
    if args.block < 1:
        parser.error(f"--block must be >= 1, got {args.block}")
    if args.allocator == "tuned" and not nobg_metrics.tune_cpu_allocator():
        print("--allocator tuned: not a glibc system, the allocator is unchanged", file=sys.stderr)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: nothing to run on cuda", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    here = pathlib.Path(__file__).resolve().parent
    rows = []
    for path in sorted(here.glob("bench_*.py")):
        if args.modules and path.stem.removeprefix("bench_") not in args.modules:
            continue
        module = importlib.import_module(path.stem)
        for size in args.sizes:
            per_seed = [module.cases(size, args.device, args.batch, seed) for seed in range(max(args.images, 1))]
            for variants in zip(*per_seed):  # the same case on each pair
                if args.only and not any(key in variants[0].name for key in args.only):
                    continue
                if args.no_reference:
                    for case in variants:
                        case.reference = None
                rows.append(combine_rows([run_case(case, args.repeat, block=args.block) for case in variants]))
                print(f"  {variants[0].name} {size}²: {rows[-1]['ours_ms']:.2f} ms", file=sys.stderr, flush=True)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, {args.device} ({device_name}), {torch.get_num_threads()} threads, "
          f"batch {args.batch}, mean over {max(args.images, 1)} generated {args.shapes}-shape pairs, "
          f"{args.allocator} allocator, "
          f"{'call by call' if args.block == 1 else f'blocks of {args.block} (first of each not timed)'}")
    print(format_rows(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
