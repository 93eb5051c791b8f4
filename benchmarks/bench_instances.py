"""Instance segmentation AP side by side: ours, faster-coco-eval, torchmetrics, boundary-iou-api (one process).

    python benchmarks/bench_instances.py                                  # 640x480 and 1024x2048, CPU
    BOUNDARY_IOU_API=/tmp/bia python benchmarks/bench_instances.py --images 100 --sizes 480x640
    python benchmarks/bench_instances.py --device cuda                    # ours on the GPU too

The set is COCO-val-like (:mod:`benchmarks.instance_data`): ~7 real-shape instances and ~20 detections per image,
80 categories, crowd gts, tied scores, duplicates. Each contender scores the whole set end to end, from what it
is given (its input format made beforehand, not timed) to the summary values:

- ours: ``MeanAveragePrecision(iou_type=...)``: ``update`` in batches of ``--batch`` images, then ``compute``;
- faster-coco-eval 1.8.0: ``COCO(gt)``, ``loadRes``, ``COCOeval_faster(gt, dt, iouType)`` evaluate / accumulate /
  summarize (its boundary step runs on ``boundary_cpu_count`` processes, default ``min(cores, 4)``), twice: from
  the RLE JSON made beforehand ("RLE given", the offline case) and from the same dense masks as ours, its RLE
  encoding timed ("from masks", the training-loop case, what torchmetrics' ``update`` does);
- torchmetrics ``MeanAveragePrecision(iou_type="segm", backend="faster_coco_eval")``: ``update`` (it RLE-encodes
  every mask) and ``compute`` (no boundary option);
- boundary-iou-api (commit 37d2558) when ``BOUNDARY_IOU_API`` points at an unpacked copy: its ``COCO`` index with
  boundaries (a process pool of ``cpu_count`` workers), ``loadRes``, ``COCOeval`` — else skipped with a note.

Sides alternate call by call (``--repeat`` rounds, the median is reported); ``ratio = reference / ours``.
torchmetrics' ``MeanAveragePrecision`` needs torchvision only for boxes (``box_convert``); without torchvision
installed a stub ``torchvision.ops`` is registered so that its segm path (which never converts a box) runs.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import os
import pathlib
import statistics
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from benchmarks.instance_data import make_images, to_coco, to_torch


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list:
    """``benchmarks/run.py`` times per-pair metrics; this benchmark runs on its own (``main``)."""
    return []


def _quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with contextlib.redirect_stdout(io.StringIO()):
            return fn()
    return run


def _ours(preds: list, target: list, iou_type: str, batch: int, device: str) -> Callable[[], Any]:
    from nobg_metrics import MeanAveragePrecision

    def run() -> Any:
        metric = MeanAveragePrecision(iou_type=iou_type, validate_args=False).to(device)
        for start in range(0, len(preds), batch):
            metric.update(preds[start:start + batch], target[start:start + batch])
        value = metric.compute()
        if device == "cuda":
            torch.cuda.synchronize()
        return float(value["map"])
    return run


def _copies(dataset: dict, results: list, count: int) -> Iterator[tuple[dict, list]]:
    """Fresh copies made before the timing (the references write into the dicts they are given)."""
    return iter([(copy.deepcopy(dataset), copy.deepcopy(results)) for _ in range(count)])


def _faster(dataset: dict, results: list, iou_type: str, calls: int) -> Callable[[], Any]:
    from faster_coco_eval import COCO, COCOeval_faster

    inputs = _copies(dataset, results, calls)

    def run() -> Any:
        gt_data, dt_data = next(inputs)
        gt = COCO(gt_data)
        evaluator = COCOeval_faster(gt, gt.loadRes(dt_data), iou_type, print_function=lambda *a: None)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        return float(evaluator.stats[0])
    return _quiet(run)


def _faster_from_masks(preds: list, target: list, iou_type: str) -> Callable[[], Any]:
    """faster-coco-eval from the same dense masks as ours: its RLE encoding is timed too (what torchmetrics'
    ``update`` does with every mask, and what a training loop would have to do)."""
    from faster_coco_eval import COCO, COCOeval_faster
    from faster_coco_eval.core import mask as mask_utils

    def encode(masks: torch.Tensor) -> list[dict]:
        rles = mask_utils.encode(np.asfortranarray(masks.permute(1, 2, 0).numpy().astype(np.uint8)))
        return list(rles) if isinstance(rles, (list, tuple)) else [rles]

    def run() -> Any:
        images, gt_anns, results = [], [], []
        for index, (pred, gt) in enumerate(zip(preds, target)):
            height, width = gt["masks"].shape[-2:]
            images.append({"id": index + 1, "height": int(height), "width": int(width)})
            if len(gt["masks"]):
                for k, rle in enumerate(encode(gt["masks"])):
                    gt_anns.append({"id": len(gt_anns) + 1, "image_id": index + 1, "segmentation": rle,
                                    "category_id": int(gt["labels"][k]), "iscrowd": int(gt["iscrowd"][k]),
                                    "area": float(mask_utils.area(rle))})
            if len(pred["masks"]):
                for k, rle in enumerate(encode(pred["masks"])):
                    results.append({"image_id": index + 1, "segmentation": rle, "score": float(pred["scores"][k]),
                                    "category_id": int(pred["labels"][k])})
        labels = sorted({a["category_id"] for a in gt_anns} | {r["category_id"] for r in results})
        gt_coco = COCO({"images": images, "annotations": gt_anns, "categories": [{"id": c} for c in labels]})
        evaluator = COCOeval_faster(gt_coco, gt_coco.loadRes(results), iou_type, print_function=lambda *a: None)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        return float(evaluator.stats[0])
    return _quiet(run)


def _torchmetrics(preds: list, target: list, batch: int) -> Callable[[], Any] | None:
    try:
        import torchvision  # noqa: F401  (availability check)
    except ImportError:  # its segm path imports box_convert but never calls it
        stub = types.ModuleType("torchvision")
        stub.ops = types.ModuleType("torchvision.ops")  # type: ignore[attr-defined]
        stub.ops.box_convert = lambda *a, **k: (_ for _ in ()).throw(NotImplementedError("stub"))  # type: ignore
        sys.modules.setdefault("torchvision", stub)
        sys.modules.setdefault("torchvision.ops", stub.ops)  # type: ignore[attr-defined]
    import torchmetrics.detection.mean_ap as tm_map

    tm_map._TORCHVISION_AVAILABLE = True

    def run() -> Any:
        metric = tm_map.MeanAveragePrecision(iou_type="segm", backend="faster_coco_eval")
        metric.warn_on_many_detections = False
        for start in range(0, len(preds), batch):
            metric.update(preds[start:start + batch], target[start:start + batch])
        return float(metric.compute()["map"])
    return _quiet(run)


def _boundary_iou_api(dataset: dict, results: list, iou_type: str, calls: int) -> Callable[[], Any] | None:
    root = os.environ.get("BOUNDARY_IOU_API")
    if not root:
        return None
    sys.path.insert(0, root)
    if "float" not in np.__dict__:
        np.float = float  # type: ignore[attr-defined]  # its accumulate writes np.float (removed in numpy 1.24)
    from boundary_iou.coco_instance_api.coco import COCO
    from boundary_iou.coco_instance_api.cocoeval import COCOeval

    inputs = _copies(dataset, results, calls)

    def run() -> Any:
        gt_data, dt_data = next(inputs)
        gt = COCO(get_boundary=iou_type == "boundary")
        gt.dataset = gt_data
        gt.createIndex()
        evaluator = COCOeval(gt, gt.loadRes(dt_data), iouType=iou_type)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        return float(evaluator.stats[0])
    return _quiet(run)


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (their worker pools), user + system."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _median_times(contenders: dict[str, Callable[[], Any]],
                  repeat: int) -> dict[str, tuple[float, float, float]]:
    """Median wall seconds, median CPU seconds and value per contender, alternating within each round (one
    warm-up). On a loaded machine the CPU seconds are the steadier measure of the work done."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    values: dict[str, float] = {}
    for name, fn in contenders.items():
        values[name] = fn()
    for _ in range(repeat):
        for name, fn in contenders.items():
            start, start_cpu = time.perf_counter(), _cpu_seconds()
            fn()
            times[name].append(time.perf_counter() - start)
            cpu[name].append(_cpu_seconds() - start_cpu)
    return {name: (statistics.median(t), statistics.median(cpu[name]), values[name]) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["480x640", "1024x2048"], help="HxW of the images")
    parser.add_argument("--images", type=int, default=100)
    parser.add_argument("--batch", type=int, default=8, help="images per update (ours, torchmetrics)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads for our side")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="cuda: ours on the GPU as well")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}, {args.threads} thread(s) for ours, {os.cpu_count()} cores, {args.images} "
          f"images per set, batch {args.batch}, median of {args.repeat} alternating rounds")
    for text in args.sizes:
        height, width = (int(v) for v in text.split("x"))
        images = make_images(args.images, [(height, width)], seed=args.seed)
        preds, target = to_torch(images, image_ids=True)
        dataset, results = to_coco(images)
        print(f"\n{height}x{width}: {sum(len(i.gt_labels) for i in images) / len(images):.1f} gts and "
              f"{sum(len(i.dt_labels) for i in images) / len(images):.1f} detections per image")
        for iou_type in ("boundary", "segm"):
            contenders: dict[str, Callable[[], Any]] = {"ours (cpu)": _ours(preds, target, iou_type, args.batch, "cpu")}
            if args.device == "cuda":
                gpu_preds, gpu_target = to_torch(images, "cuda", image_ids=True)
                contenders["ours (cuda)"] = _ours(gpu_preds, gpu_target, iou_type, args.batch, "cuda")
            calls = args.repeat + 1
            try:
                import faster_coco_eval  # noqa: F401  (availability check)
            except ImportError:
                print("    faster-coco-eval and torchmetrics' faster_coco_eval backend: skipped (not installed)")
            else:
                contenders["faster-coco-eval (RLE given)"] = _faster(dataset, results, iou_type, calls)
                contenders["faster-coco-eval (from masks)"] = _faster_from_masks(preds, target, iou_type)
                if iou_type == "segm":
                    contenders["torchmetrics (faster_coco_eval)"] = _torchmetrics(preds, target, args.batch)
            bia = _boundary_iou_api(dataset, results, iou_type, calls)
            if bia is not None:
                contenders["boundary-iou-api"] = bia
            timed = _median_times(contenders, args.repeat)
            ours_s, ours_cpu = timed["ours (cpu)"][:2]
            print(f"  {iou_type}:  (wall ms/image, ratio; CPU ms/image, ratio — ratio = theirs / ours (cpu))")
            for name, (seconds, cpu_seconds, value) in timed.items():
                print(f"    {name:32s} {seconds * 1e3 / len(images):8.2f} ms  {seconds / ours_s:6.2f}x   "
                      f"cpu {cpu_seconds * 1e3 / len(images):8.2f} ms  {cpu_seconds / ours_cpu:6.2f}x   "
                      f"AP {value:.6f}")
            if bia is None:
                print("    boundary-iou-api: skipped (set BOUNDARY_IOU_API to an unpacked copy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
