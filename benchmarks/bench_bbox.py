"""Box AP (``iou_type="bbox"``) side by side, one process, CPU: ours, torchmetrics (both backends), faster-coco-eval.

    python benchmarks/bench_bbox.py                          # 300 images, 100 detections each, --threads 1
    python benchmarks/bench_bbox.py --images 500 --batch 32 --repeat 5

The set is COCO-val-like: 80 categories, ~7 gts per image (box sides log-normal: about 40 % small, 35 % medium,
25 % large, as COCO's instances), 1 % crowd, and exactly ``--detections`` detections per image (a detector's
output: jittered copies of the gts with high scores, then low-scoring boxes, labels mostly right). Each contender
scores the whole set end to end, from the tensors (or its JSON, made beforehand) to the summary values:

- ours: ``MeanAveragePrecision(iou_type="bbox")``: ``update`` in batches of ``--batch`` images, then ``compute``;
- torchmetrics 1.9 ``MeanAveragePrecision(iou_type="bbox", backend=...)`` with ``"pycocotools"`` and
  ``"faster_coco_eval"``: the same ``update`` calls and ``compute``;
- faster-coco-eval 1.8 ``COCOeval_faster(iouType="bbox")``: ``COCO(gt)``, ``loadRes``, evaluate / accumulate /
  summarize from the COCO JSON in memory (made beforehand: "json given"), and the same with the JSON made from the
  tensors inside the timing ("from tensors", what a training loop would do).

Every side runs ``--repeat`` times (alternating), the best time is kept; ``ratio = its time / ours``, from the
wall clock and from the process' CPU time (``time.process_time``: what a loaded machine's other processes do not
change; every side here computes on one thread).
``--threads`` sets ``torch.set_num_threads`` (default 1: the references run on one core). torchmetrics' box path
imports ``torchvision.ops.box_convert``; without torchvision a stand-in with torchvision's arithmetic
(``w = x2 - x1``) is registered.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import pathlib
import sys
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list:
    """``benchmarks/run.py`` times per-pair metrics; this benchmark runs on its own (``main``)."""
    return []


def make_set(images: int, detections: int, seed: int = 0, categories: int = 80
             ) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, torch.Tensor]]]:
    """torchmetrics' dicts, ``xyxy`` float32 boxes (module notes)."""
    rng = np.random.default_rng(seed)
    preds, target = [], []
    width, height = 640.0, 480.0
    for index in range(images):
        num_gt = int(rng.poisson(7.0))
        side = np.exp(rng.normal(np.log(45.0), 1.0, num_gt)).clip(2.0, 600.0)  # sqrt(area): COCO-like mix
        aspect = np.exp(rng.normal(0.0, 0.5, num_gt))
        w, h = (side * np.sqrt(aspect)).clip(1.0, width), (side / np.sqrt(aspect)).clip(1.0, height)
        x, y = rng.uniform(0.0, width - w), rng.uniform(0.0, height - h)
        gt_boxes = np.stack([x, y, x + w, y + h], axis=1)
        gt_labels = rng.integers(0, categories, num_gt)
        hits = min(num_gt * 3, detections)
        source = rng.integers(0, max(num_gt, 1), hits)
        if num_gt:
            scale = np.concatenate([w[source], h[source], w[source], h[source]]).reshape(4, -1).T
            near = gt_boxes[source] + rng.normal(0.0, 0.08, (hits, 4)) * scale
            near[:, 2:] = np.maximum(near[:, 2:], near[:, :2] + 0.5)
            near_labels = np.where(rng.random(hits) < 0.85, gt_labels[source], rng.integers(0, categories, hits))
        else:
            near, near_labels, hits = np.zeros((0, 4)), np.zeros(0, np.int64), 0
        rest = detections - hits
        rw = np.exp(rng.normal(np.log(40.0), 1.0, rest)).clip(2.0, width)
        rh = (rw * np.exp(rng.normal(0.0, 0.5, rest))).clip(2.0, height)
        rx, ry = rng.uniform(0.0, width - rw), rng.uniform(0.0, height - rh)
        boxes = np.concatenate([near, np.stack([rx, ry, rx + rw, ry + rh], axis=1)])
        labels = np.concatenate([near_labels, rng.integers(0, categories, rest)])
        scores = np.concatenate([rng.uniform(0.3, 1.0, hits), rng.uniform(0.0, 0.5, rest)])
        preds.append({"boxes": torch.tensor(boxes, dtype=torch.float32),
                      "scores": torch.tensor(scores, dtype=torch.float32),
                      "labels": torch.tensor(labels, dtype=torch.int64)})
        target.append({"boxes": torch.tensor(gt_boxes, dtype=torch.float32).reshape(-1, 4),
                       "labels": torch.tensor(gt_labels, dtype=torch.int64),
                       "iscrowd": torch.tensor(rng.random(num_gt) < 0.01, dtype=torch.int64),
                       "image_id": index + 1})
    return preds, target


def to_coco(preds: list[dict[str, torch.Tensor]], target: list[dict[str, torch.Tensor]]
            ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The COCO gt dataset and results list of the same boxes (``xywh`` as torchmetrics converts them)."""
    images, annotations, results = [], [], []
    for pred, gt in zip(preds, target):
        image_id = int(gt["image_id"])
        images.append({"id": image_id, "height": 480, "width": 640})
        boxes = gt["boxes"].clone()
        boxes[:, 2:] -= boxes[:, :2]
        for box, label, crowd in zip(boxes.tolist(), gt["labels"].tolist(), gt["iscrowd"].tolist()):
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, "bbox": box, "category_id": label,
                                "iscrowd": crowd, "area": box[2] * box[3]})
        boxes = pred["boxes"].clone()
        boxes[:, 2:] -= boxes[:, :2]
        for box, label, score in zip(boxes.tolist(), pred["labels"].tolist(), pred["scores"].tolist()):
            results.append({"image_id": image_id, "bbox": box, "category_id": label, "score": score})
    categories = sorted({a["category_id"] for a in annotations} | {r["category_id"] for r in results})
    return {"images": images, "annotations": annotations, "categories": [{"id": c} for c in categories]}, results


def _ours(preds: list, target: list, batch: int) -> Callable[[], float]:
    from nobg_metrics import MeanAveragePrecision

    def run() -> float:
        metric = MeanAveragePrecision(iou_type="bbox")
        for start in range(0, len(preds), batch):
            metric.update(preds[start:start + batch], target[start:start + batch])
        return float(metric.compute()["map"])
    return run


def _box_convert(boxes: torch.Tensor, in_fmt: str, out_fmt: str) -> torch.Tensor:
    """torchvision's ``box_convert`` for the conversions torchmetrics asks (its arithmetic: ``w = x2 - x1``)."""
    if (in_fmt, out_fmt) == ("xyxy", "xywh"):
        x1, y1, x2, y2 = boxes.unbind(-1)
        return torch.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    if in_fmt == out_fmt:
        return boxes.clone()
    raise NotImplementedError(f"stand-in box_convert: {in_fmt} -> {out_fmt}")


def _torchmetrics(preds: list, target: list, batch: int, backend: str) -> Callable[[], float]:
    try:
        import torchvision  # noqa: F401  (availability check)
    except ImportError:
        stub = types.ModuleType("torchvision")
        stub.ops = types.ModuleType("torchvision.ops")  # type: ignore[attr-defined]
        stub.ops.box_convert = _box_convert  # type: ignore[attr-defined]
        sys.modules.setdefault("torchvision", stub)
        sys.modules.setdefault("torchvision.ops", stub.ops)  # type: ignore[attr-defined]
    import torchmetrics.detection.mean_ap as tm_map

    tm_map._TORCHVISION_AVAILABLE = True

    def run() -> float:
        metric = tm_map.MeanAveragePrecision(iou_type="bbox", backend=backend)
        metric.warn_on_many_detections = False
        for start in range(0, len(preds), batch):
            metric.update(preds[start:start + batch], target[start:start + batch])
        with contextlib.redirect_stdout(io.StringIO()):
            return float(metric.compute()["map"])
    return run


def _faster(preds: list, target: list, from_tensors: bool, calls: int) -> Callable[[], float]:
    from faster_coco_eval import COCO, COCOeval_faster

    made = [to_coco(preds, target) for _ in range(0 if from_tensors else calls)]  # fresh copies, not timed

    def run() -> float:
        dataset, results = to_coco(preds, target) if from_tensors else made.pop()
        gt = COCO(dataset)
        evaluator = COCOeval_faster(gt, gt.loadRes(results), "bbox", print_function=lambda *a: None)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        return float(evaluator.stats[0])

    def quiet() -> float:
        with contextlib.redirect_stdout(io.StringIO()):
            return run()
    return quiet


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=300)
    parser.add_argument("--detections", type=int, default=100)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip", nargs="*", default=[], help="sides to leave out (names as printed)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    preds, target = make_set(args.images, args.detections)
    sides: dict[str, Callable[[], float]] = {
        "ours": _ours(preds, target, args.batch),
        "torchmetrics (pycocotools)": _torchmetrics(preds, target, args.batch, "pycocotools"),
        "torchmetrics (faster_coco_eval)": _torchmetrics(preds, target, args.batch, "faster_coco_eval"),
        "faster-coco-eval (json given)": _faster(preds, target, False, args.repeat + 1),
        "faster-coco-eval (from tensors)": _faster(preds, target, True, 0),
    }
    sides = {name: fn for name, fn in sides.items() if name not in args.skip}
    best = {name: float("inf") for name in sides}
    best_cpu = dict(best)
    values = {name: fn() for name, fn in sides.items()}  # warm-up (imports, per-device constants)
    for _ in range(args.repeat):
        for name, fn in sides.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
            best_cpu[name] = min(best_cpu[name], time.process_time() - start_cpu)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"box AP, {args.images} images x {args.detections} detections, 80 categories, batch {args.batch}, "
          f"threads {args.threads}, best of {args.repeat}, load average {load:.2f}, torch {torch.__version__}")
    print(f"{'side':34s} {'ms/image':>9s} {'ratio':>7s} {'cpu ms/image':>13s} {'cpu ratio':>10s} {'map':>10s}")
    for name, seconds in best.items():
        ratio = seconds / best["ours"] if "ours" in best else float("nan")
        cpu_ratio = best_cpu[name] / best_cpu["ours"] if "ours" in best else float("nan")
        print(f"{name:34s} {1000 * seconds / args.images:9.3f} {ratio:7.2f} {1000 * best_cpu[name] / args.images:13.3f}"
              f" {cpu_ratio:10.2f} {values[name]:10.6f}")
    return {name: 1000 * seconds / args.images for name, seconds in best.items()}


if __name__ == "__main__":
    main()
