"""BiRefNet's boundary columns side by side with their references, on realistic masks (``shapes.real_pairs``).

Rows per size (one ``update`` per image on our side, the state accumulating as over a dataset; one
reference ``step`` per image on theirs; ``compute`` untimed on both):

- ``mBA vs CascadePSP``: ``MBA()`` (uint8 ``> 128`` both maps, five elliptic bands from bit-packed
  dilations) against CascadePSP's ``compute_boundary_acc`` (``cv2.morphologyEx(MORPH_GRADIENT)`` with
  ``getStructuringElement(MORPH_ELLIPSE)`` per radius, numpy masks), BiRefNet's ``MBAMeasure.cal_ba``.
  Target: ratio (ref / ours) >= 3.
- ``BIoU curves vs BiRefNet``: ``GreyBoundaryIoU(normalize=True, empty_gt="reference")`` (one zero-padded
  ``(2d+1)²`` grey min filter, one joint histogram) against BiRefNet's ``BIoUMeasure.step`` (the stretch,
  ``cv2.erode`` iterated ``d`` times on the grey map and on the gt, two ``np.histogram`` calls, cumulative
  sums). Target: ratio >= 3.

    python benchmarks/bench_birefnet.py --threads 1                # 1024², five pairs (one of each shape)
    python benchmarks/bench_birefnet.py --threads 1 --sizes 512 1024 2048 --repeat 9
    python benchmarks/run.py --sizes 1024 --only mBA BIoU          # among the other benchmarks

Both references are written here from their definitions (docs/references.md, "mBA", "BiRefNet protocol").
"""

from __future__ import annotations

import argparse
import pathlib
import platform
import sys

import cv2
import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from harness import Case, combine_rows, format_rows, run_case
from shapes import pair_kinds, real_pairs

from nobg_metrics.metrics.boundary.grey_boundary_iou import GreyBoundaryIoU
from nobg_metrics.metrics.boundary.mba import MBA

TARGET = 3.0
"""Both rows: at least this ratio (reference / ours)."""


def cascadepsp_ba(pred_u8: np.ndarray, gt_u8: np.ndarray) -> float:
    """CascadePSP ``compute_boundary_acc`` after ``> 128`` on both maps (BiRefNet ``MBAMeasure``)."""
    gt, pred = (gt_u8 > 128).astype(np.uint8), (pred_u8 > 128).astype(np.uint8)
    height, width = gt.shape
    max_radius = (width + height) / 300
    accuracies = []
    for step in range(5):
        radius = 1 + int((max_radius - 1) / 5 * step)
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
        band = cv2.morphologyEx(gt, cv2.MORPH_GRADIENT, kernel) > 0
        gt_in, pred_in = gt[band], pred[band]
        accuracies.append((gt_in * pred_in + (1 - gt_in) * (1 - pred_in)).sum() / band.sum())
    return sum(accuracies) / 5


def _mask_to_boundary(mask: np.ndarray, dilation_ratio: float = 0.02) -> np.ndarray:
    height, width = mask.shape
    dilation = max(1, int(round(dilation_ratio * np.sqrt(height**2 + width**2))))  # noqa: RUF046 (as written there)
    padded = cv2.copyMakeBorder(mask, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=dilation)
    return mask - eroded[1:height + 1, 1:width + 1]


def birefnet_biou(pred_u8: np.ndarray, gt_u8: np.ndarray) -> np.ndarray:
    """BiRefNet ``BIoUMeasure.step``: the (256,) grey-boundary IoU curve of one image."""
    gt = gt_u8 > 128
    pred = pred_u8 / 255
    if pred.max() != pred.min():
        pred = (pred - pred.min()) / (pred.max() - pred.min())
    boundary = _mask_to_boundary((pred * 255).astype(np.uint8))
    band = _mask_to_boundary((gt * 255).astype(np.uint8)) > 128
    edges = np.linspace(0, 256, 257)
    on_band, _ = np.histogram(boundary[band], bins=edges)
    off_band, _ = np.histogram(boundary[~band], bins=edges)
    return np.cumsum(np.flip(on_band)) / (max(np.count_nonzero(band), 1) + np.cumsum(np.flip(off_band)))


def cases(size: int, device: str, batch: int = 1, seed: int = 0, pairs=None) -> list[Case]:
    pairs = pairs if pairs is not None else real_pairs((size, size), count=batch, seed=seed)
    pred_t = torch.from_numpy(np.stack([p for p, _ in pairs]))[:, None].to(device)
    gt_t = torch.from_numpy(np.stack([g for _, g in pairs]))[:, None].to(device)
    mba = MBA(validate_args=False).to(device)
    biou = GreyBoundaryIoU(normalize=True, empty_gt="reference", validate_args=False).to(device)

    def reference(step):
        def run():
            return [step(pred, gt) for pred, gt in pairs]
        return run

    images = len(pairs)
    return [
        Case(f"mBA vs CascadePSP (target >= {TARGET:g}x)", size, device, lambda: mba.update(pred_t, gt_t),
             reference(cascadepsp_ba), "CascadePSP compute_boundary_acc (cv2)", images),
        Case(f"BIoU curves vs BiRefNet (target >= {TARGET:g}x)", size, device, lambda: biou.update(pred_t, gt_t),
             reference(birefnet_biou), "BiRefNet BIoUMeasure (cv2 + numpy)", images),
    ]


def protocol_gaps(size: int = 512, count: int = 10) -> str:
    """The same generated predictions scored under the three protocols (our exact calls of each): a markdown table.

    ``count`` realistic pairs at ``size``² (``shapes.real_pairs``, seed 0), then the same plus one empty gt
    (a faint prediction of nothing) to show the 0/0 policies.
    """
    import nobg_metrics.functional as F
    from nobg_metrics.functional.boundary.hqsam import hqsam_boundary_iou, hqsam_iou
    from nobg_metrics.functional.boundary.mba import mean_boundary_accuracy

    pairs = real_pairs((size, size), count=count)
    rng = np.random.default_rng(0)
    empty = (rng.integers(0, 40, (size, size)).astype(np.uint8), np.zeros((size, size), np.uint8))
    rows = []
    for label, sample in ((f"{count} realistic", pairs), (f"{count} + 1 empty gt", [*pairs, empty])):
        pred = [torch.from_numpy(p) for p, _ in sample]
        gt = [torch.from_numpy(g) for _, g in sample]
        sod = {"normalize": True, "empty_gt": "reference"}
        values = {
            "MAE (PySODMetrics = BiRefNet)": F.mae(pred, gt, normalize=True),
            "S (PySODMetrics = BiRefNet here)": F.s_measure(pred, gt, **sod),
            "maxF (PySODMetrics = BiRefNet)": F.f_measure(pred, gt, "max", **sod),
            "IoU, stretched > 0.5 (PySODMetrics IOUHandler binary)": F.iou_metric(pred, gt, **sod),
            "IoU, v/255 > 0.5 (HQ-SAM mIoU, NaN for 0/0)": hqsam_iou(pred, gt, both_empty="nan"),
            "IoU, v/255 > 0.5, 0/0 -> 1 (hqsam_iou default)": hqsam_iou(pred, gt),
            "Boundary IoU, v/255 > 0.5 (HQ-SAM mBIoU)": hqsam_boundary_iou(pred, gt, both_empty="nan"),
            "Boundary IoU, stretched > 0.5, agreement (BoundaryIoU)": F.boundary_iou(pred, gt, normalize=True),
            "maxBIoU, grey boundary (BiRefNet)": F_grey(pred, gt, "max"),
            "meanBIoU, grey boundary (BiRefNet)": F_grey(pred, gt, "mean"),
            "mBA, v > 128 (BiRefNet / CascadePSP, NaN for empty band)": mean_boundary_accuracy(
                pred, gt, empty_gt="reference"),
            "mBA, v/255 > 0.5 (v >= 128)": mean_boundary_accuracy(pred, gt, 0.5, empty_gt="reference"),
            "mBA, v > 128, agreement (MBA default)": mean_boundary_accuracy(pred, gt),
        }
        rows.append((label, {name: float(value) for name, value in values.items()}))
    names = list(rows[0][1])
    lines = [f"| measure ({size}², shapes.real_pairs seed 0) | " + " | ".join(label for label, _ in rows) + " |",
             "|---|" + "---|" * len(rows)]
    lines += [f"| {name} | " + " | ".join(f"{values[name]:.6f}" for _, values in rows) + " |" for name in names]
    return "\n".join(lines)


def F_grey(pred, gt, mode):
    from nobg_metrics.functional.boundary.grey_boundary_iou import grey_boundary_iou

    return grey_boundary_iou(pred, gt, mode, normalize=True, empty_gt="reference")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--images", type=int, default=5, help="pairs (kinds cycle person, animal, text, blobs, large)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads and cv2.setNumThreads")
    parser.add_argument("--protocols", action="store_true",
                        help="print the protocol comparison table (docs/birefnet_protocol.md) instead of timing")
    args = parser.parse_args(argv)
    if args.protocols:
        print(protocol_gaps())
        return 0
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: nothing to run on cuda", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
        cv2.setNumThreads(args.threads)
    print(f"shapes: {', '.join(pair_kinds(args.images))}")
    rows = []
    for size in args.sizes:
        pairs = real_pairs((size, size), count=args.images)
        per_pair = [cases(size, args.device, pairs=[pair]) for pair in pairs]
        for variants in zip(*per_pair):  # the same case on each pair
            rows.append(combine_rows([run_case(case, args.repeat) for case in variants]))
            print(f"  {variants[0].name} {size}²: {rows[-1]['ours_ms']:.2f} ms", file=sys.stderr, flush=True)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, cv2 {cv2.__version__}, {args.device} ({device_name}), "
          f"{torch.get_num_threads()} threads, mean over {args.images} pairs of medians of {args.repeat} calls")
    print(format_rows(rows))
    for row in rows:
        verdict = "meets" if row["ratio"] >= TARGET else "MISSES"
        print(f"{row['size']}²: {row['name'].split(' (')[0]}: {row['ratio']:.2f}x ({verdict} >= {TARGET:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
