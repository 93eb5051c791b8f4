"""Cityscapes instance AP / Boundary AP side by side: ours vs boundary-iou-api's Cityscapes evaluation (one process).

    python benchmarks/bench_cityscapes_instances.py                         # ours only (the reference is absent)
    BOUNDARY_IOU_API=/tmp/bia CITYSCAPES_SCRIPTS=/tmp/css python benchmarks/bench_cityscapes_instances.py --images 4
    python benchmarks/bench_cityscapes_instances.py --device cuda           # ours on the GPU

The set: Cityscapes-like 2048x1024 images (:mod:`tests.helpers.cityscapes_data`: ~20 instances of 10 classes with
occlusions, group and small regions, stuff and void; ~40 predictions each — copies of the segments with moved
boundaries, duplicates, false positives, tied scores), written in the Cityscapes layout (16-bit instanceIds PNGs,
per-image ``.txt`` lists, 8-bit mask PNGs). Both sides score the folders end to end, reading every PNG:

- ours: ``nobg-metrics instances --cityscapes`` (its ``run``: find and read the files, one
  ``CityscapesInstanceAP.update`` per image, ``compute``, the table; no ``--out``);
- the reference (when ``BOUNDARY_IOU_API`` and ``CITYSCAPES_SCRIPTS`` point at unpacked copies, else skipped with a
  note): boundary-iou-api's ``evalInstanceLevelSemanticLabeling`` set up as its
  ``tools/cityscapes_instance_evaluation.py`` does, ``getPrediction`` per gt and ``evaluateImgLists`` (no gt cache: a
  fresh one each call).

Also ours on tensors already in memory (``cityscapes_instance_ap`` of the whole set: the library without the PNG
decoding). Sides alternate round by round (``--repeat`` rounds after a warm-up, medians); ratio = reference / ours.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from tests.helpers.cityscapes_data import (
    as_torch,
    cityscapes_dataset,
    write_cityscapes_folders,
)
from tests.reference.cityscapes_reference_run import (
    reference_evaluator,
    reference_paths,
)


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list:
    """``benchmarks/run.py`` times per-pair metrics; this benchmark runs on its own (``main``)."""
    return []


def _quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return fn()
    return run


def _synced(fn: Callable[[], Any], device: str) -> Callable[[], Any]:
    def run() -> Any:
        value = fn()
        if device == "cuda":
            torch.cuda.synchronize()
        return value
    return run


def _median_times(contenders: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[float, float, Any]]:
    """Median wall and CPU seconds and the value per contender, alternating within each round (one warm-up round).

    The CPU time (``time.process_time``) is what a loaded machine distorts least; the wall time is the measure."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    values: dict[str, Any] = {}
    for round_ in range(repeat + 1):
        for name, fn in contenders.items():
            wall, cpu = time.perf_counter(), time.process_time()
            values[name] = fn()
            if round_:
                times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return {name: (statistics.median(t[0] for t in times[name]), statistics.median(t[1] for t in times[name]),
                   values[name]) for name in contenders}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--size", type=int, nargs=2, default=(1024, 2048), metavar=("H", "W"))
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--iou-types", nargs="+", default=["segm", "boundary"], choices=("segm", "boundary"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from nobg_metrics.cli.instances.cityscapes_run import run as run_command
    from nobg_metrics.functional import cityscapes_instance_ap

    data = cityscapes_dataset(0, [tuple(args.size)] * args.images, instances=args.instances, groups=3, small=3)
    predictions = sum(len(p) for _, p in data) / len(data)
    preds, target = as_torch(data)
    if args.device == "cuda":
        preds = [{k: v.cuda() for k, v in p.items()} for p in preds]
        target = [t.cuda() for t in target]
    paths = reference_paths()
    reference = reference_evaluator(paths) if paths else None
    print(f"torch {torch.__version__}, {args.device}, {torch.get_num_threads()} thread(s); {args.images} images "
          f"{args.size[1]}x{args.size[0]}, {predictions:.0f} predictions per image; median of {args.repeat} "
          f"alternating rounds")
    if reference is None:
        print("note: BOUNDARY_IOU_API / CITYSCAPES_SCRIPTS not set: the reference is skipped")
    with tempfile.TemporaryDirectory() as tmp:
        gt_dir, result_dir = write_cityscapes_folders(tmp, data)
        print("| iou type | ours: command | ours: library in memory | reference | ratio reference / command |")
        print("|---|---|---|---|---|")
        for iou_type in args.iou_types:
            command = argparse.Namespace(gt_dir=gt_dir, result_dir=result_dir, iou_type=iou_type, dilation_ratio=0.005,
                                         device=args.device, quiet=True, out=None)
            contenders = {
                "command": _quiet(lambda command=command: run_command(command)),
                "library": _synced(lambda iou=iou_type: cityscapes_instance_ap(preds, target, iou, 0.005), args.device),
            }
            if reference is not None:
                contenders["reference"] = _quiet(lambda iou=iou_type: reference(gt_dir, result_dir, iou, 0.005))
            results = _median_times(contenders, args.repeat)

            def cell(name: str, results: dict = results) -> str:
                wall, cpu, _ = results[name]
                return f"{wall / args.images:.3f} s/img (CPU {cpu / args.images:.3f})"

            if "reference" in results:
                mine, theirs = results["library"][2], results["reference"][2]["averages"]
                gap = max(abs(theirs["allAp"] - mine["ap"].item()), abs(theirs["allAp50%"] - mine["ap_50"].item()))
                ratio = (f"{results['reference'][0] / results['command'][0]:.2f}x wall, "
                         f"{results['reference'][1] / results['command'][1]:.2f}x CPU (|AP diff| {gap:.1e})")
                reference_cell = cell("reference")
            else:
                reference_cell, ratio = "skipped", "-"
            print(f"| {iou_type} | {cell('command')} | {cell('library')} | {reference_cell} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
