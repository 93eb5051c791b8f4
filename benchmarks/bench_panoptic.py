"""PQ and Boundary PQ: ``nobg-metrics panoptic``'s scoring vs boundary-iou-api's ``pq_compute``, side by side.

    BOUNDARY_IOU_API=/path/to/boundary-iou-api PANOPTICAPI=/path/to/panopticapi \\
        python benchmarks/bench_panoptic.py --images 16 --procs 2

Data (:mod:`panoptic_scenes`, written as COCO panoptic PNG + JSON into a temporary folder): COCO-panoptic-like
images (640x480, ~15 segments: 4 stuff bands and ~11 things, ratio 0.02) and Cityscapes-like ones (2048x1024,
~40 segments, ratio 0.005). Both sides read the same files and run on the same cores: the reference with its own
``multiprocessing.Pool`` of ``cpu_count()`` processes, ours with ``--procs`` worker processes (the command's
scoring, :func:`nobg_metrics.cli.panoptic.run.score_all`); the calls alternate and the medians are compared.
The class on tensors already in memory (no PNG decoding) is timed too, on CPU (one thread) and on CUDA when
there is one. Without the two environment variables the reference is skipped (a note says so).

``cases()`` (for ``run.py``): the class on in-memory tensors against the test port of pq_compute's rules
(``tests/reference/panoptic_port.py``, numpy + OpenCV), single core.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import io
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from harness import Case
from panoptic_scenes import categories, make_scene, tensor_form, write_dataset

import nobg_metrics as nm

CITYSCAPES_THINGS = (24, 25, 26, 27, 28, 31, 32, 33)
CITYSCAPES_STUFF = (7, 8, 11, 12, 13, 17, 19, 20, 21, 22, 23)
KINDS = {
    "coco": {"size": (480, 640), "things": 11, "stuff": 4, "ratio": 0.02, "thing_ids": None, "stuff_ids": None},
    "cityscapes": {"size": (1024, 2048), "things": 40, "stuff": 5, "ratio": 0.005, "thing_ids": CITYSCAPES_THINGS,
                   "stuff_ids": CITYSCAPES_STUFF},
}


def scenes_of(kind: str, count: int, seed: int = 0) -> list:
    """``count`` scenes of a kind (:data:`KINDS`)."""
    spec = KINDS[kind]
    extra = {}
    if spec["thing_ids"] is not None:
        extra = {"thing_ids": spec["thing_ids"], "stuff_ids": spec["stuff_ids"]}
    height, width = spec["size"]
    return [make_scene(height, width, [seed, i], things=spec["things"], stuff=spec["stuff"], **extra)
            for i in range(count)]


def category_list(kind: str) -> list[dict]:
    spec = KINDS[kind]
    if spec["thing_ids"] is None:
        return categories()
    return categories(spec["thing_ids"], spec["stuff_ids"])


def reference_module():
    """boundary-iou-api's ``coco_panoptic_api.evaluation`` from ``$BOUNDARY_IOU_API`` (+ ``$PANOPTICAPI``), or None."""
    roots = [os.environ.get("BOUNDARY_IOU_API"), os.environ.get("PANOPTICAPI")]
    if not roots[0] or not roots[1]:
        return None
    for root in roots:
        if root not in sys.path:
            sys.path.insert(0, root)
    from boundary_iou.coco_panoptic_api import evaluation

    return evaluation


def _median_alternating(sides: dict, repeat: int) -> dict[str, float]:
    """Median wall time of each side, the sides alternating call by call after a warm-up; ``<side>_min`` the
    fastest call (the least disturbed by other load on a shared machine)."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    for fn in sides.values():
        fn()  # warm-up (imports, first forks)
    for _ in range(repeat):
        for name, fn in sides.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {**medians, **{f"{name}_min": min(values) for name, values in times.items()}}


def files_comparison(kind: str, images: int, procs: int, repeat: int, iou_types: list[str], reference) -> list[dict]:
    """Rows of ours (the command's scoring) vs pq_compute on the same files."""
    from nobg_metrics.cli.core.progress import Progress
    from nobg_metrics.cli.panoptic.run import results_dict, score_all
    from nobg_metrics.io.panoptic import (
        PanopticTask,
        categories_of,
        load_json,
        matched_annotations,
    )

    rows = []
    cats = category_list(kind)
    ratio = KINDS[kind]["ratio"]
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_dataset(scenes_of(kind, images), tmp, cats)
        gt, pred = load_json(Path(paths["gt_json"]), "gt"), load_json(Path(paths["pred_json"]), "pred")
        ids, isthing, names = categories_of(gt, Path(paths["gt_json"]))
        pairs = matched_annotations(gt, pred)
        segments = statistics.fmean(len(a["segments_info"]) for a, _ in pairs)
        for iou_type in iou_types:
            task = PanopticTask(Path(paths["gt_folder"]), Path(paths["pred_folder"]), ids, isthing, names, iou_type,
                                ratio, "reference")
            values = {}

            def ours(task=task, values=values) -> None:
                totals, _ = score_all(pairs, task, procs, Progress("", 0, enabled=False))
                values["ours"] = results_dict(totals, task)

            sides = {"ours": ours}
            if reference is not None:
                def ref(values=values, iou_type=iou_type) -> None:
                    with contextlib.redirect_stdout(io.StringIO()):
                        values["ref"] = reference.pq_compute(paths["gt_json"], paths["pred_json"], paths["gt_folder"],
                                                             paths["pred_folder"], iou_type=iou_type,
                                                             dilation_ratio=ratio)
                sides["ref"] = ref
            medians = _median_alternating(sides, repeat)
            worst = None
            if "ref" in values:
                worst = max(abs(values["ours"][g][m] - float(values["ref"][g][m]))
                            for g in ("All", "Things", "Stuff") for m in ("pq", "sq", "rq"))
            rows.append({"case": f"{kind} {iou_type} (files)", "images": images, "segments": segments,
                         "ours_s": medians["ours"], "ref_s": medians.get("ref"), "worst_diff": worst,
                         "ours_min_s": medians["ours_min"], "ref_min_s": medians.get("ref_min"),
                         "setup": f"ours {procs} procs; pq_compute Pool({multiprocessing.cpu_count()})"})
    return rows


def class_rows(kind: str, images: int, repeat: int, iou_types: list[str], devices: list[str]) -> list[dict]:
    """The class on in-memory tensors (no decoding): images/s."""
    spec = KINDS[kind]
    scenes = scenes_of(kind, images, seed=1)
    thing_ids = spec["thing_ids"] or tuple(c["id"] for c in categories() if c["isthing"])
    stuff_ids = spec["stuff_ids"] or tuple(c["id"] for c in categories() if not c["isthing"])
    forms = [tensor_form(s, thing_ids) for s in scenes]
    rows = []
    for device in devices:
        preds = torch.stack([f[0] for f in forms]).to(device)
        target = torch.stack([f[1] for f in forms]).to(device)
        crowd = torch.stack([f[2] for f in forms]).to(device)
        for iou_type in iou_types:
            metric = nm.PanopticQuality(set(thing_ids), set(stuff_ids), True, iou_type=iou_type,
                                        dilation_ratio=spec["ratio"], rules="panopticapi",
                                        validate_args=False).to(device)

            def run(metric=metric, preds=preds, target=target, crowd=crowd, device=device) -> None:
                metric.reset()
                for start in range(0, images, 4):
                    metric.update(preds[start:start + 4], target[start:start + 4], crowd[start:start + 4])
                metric.compute()
                if device == "cuda":
                    torch.cuda.synchronize()

            medians = _median_alternating({"ours": run}, repeat)
            rows.append({"case": f"{kind} {iou_type} (class, tensors)", "images": images, "segments": None,
                         "ours_s": medians["ours"], "ref_s": None, "worst_diff": None,
                         "ours_min_s": medians["ours_min"], "ref_min_s": None,
                         "setup": f"{device}, {torch.get_num_threads() if device == 'cpu' else 'GPU'} thread(s), "
                                  f"batches of 4"})
    return rows


def format_table(rows: list[dict]) -> str:
    header = ("| case | images | segments/img | ours s | ours img/s | pq_compute s | ratio (ref/ours) "
              "| ratio of fastest | max diff | setup |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        ref = f"{row['ref_s']:.3f}" if row["ref_s"] is not None else "-"
        ratio = f"{row['ref_s'] / row['ours_s']:.2f}x" if row["ref_s"] is not None else "-"
        fastest = f"{row['ref_min_s'] / row['ours_min_s']:.2f}x" if row["ref_min_s"] is not None else "-"
        diff = f"{row['worst_diff']:.1e}" if row["worst_diff"] is not None else "-"
        seg = f"{row['segments']:.1f}" if row["segments"] is not None else "-"
        lines.append(f"| {row['case']} | {row['images']} | {seg} | {row['ours_s']:.3f} | "
                     f"{row['images'] / row['ours_s']:.1f} | {ref} | {ratio} | {fastest} | {diff} | {row['setup']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=16, help="images per dataset (default 16)")
    parser.add_argument("--procs", type=int, default=multiprocessing.cpu_count(),
                        help="our worker processes (default: cpu_count, what pq_compute uses)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    parser.add_argument("--iou-types", nargs="+", default=["segm", "boundary"], choices=["segm", "boundary"])
    parser.add_argument("--no-class", action="store_true", help="skip the in-memory class rows")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    nm.tune_cpu_allocator()  # both sides: the reference's forked workers inherit it
    reference = reference_module()
    if reference is None:
        print("note: BOUNDARY_IOU_API and PANOPTICAPI (paths of the two checkouts) are not both set: the reference "
              "is skipped", file=sys.stderr)
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rows = []
    for kind in args.kinds:
        rows += files_comparison(kind, args.images, args.procs, args.repeat, args.iou_types, reference)
        print(format_table(rows[-len(args.iou_types):]), file=sys.stderr, flush=True)
        if not args.no_class:
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            rows += class_rows(kind, min(args.images, 8), args.repeat, args.iou_types, devices)
            torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(format_table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


@functools.cache
def _port_data(size: int, seed: int):
    from tests.panoptic.scenes import categories_of, port_form

    scene = make_scene(max(size * 3 // 4, 8), size, [seed, 99], things=11, stuff=4)
    preds, target, crowd = tensor_form(scene)
    things = {c["id"] for c in categories() if c["isthing"]}
    stuffs = {c["id"] for c in categories() if not c["isthing"]}
    return preds, target, crowd, port_form(preds, target, crowd, things, stuffs), categories_of(things, stuffs)


def cases(size: int, device: str, batch: int = 1, seed: int = 0) -> list[Case]:
    """For run.py: the class vs the test port of pq_compute's rules, in memory (data made on the first call)."""
    from tests.reference import panoptic_port

    things = {c["id"] for c in categories() if c["isthing"]}
    stuffs = {c["id"] for c in categories() if not c["isthing"]}
    out = []
    for iou_type in ("segm", "boundary"):
        metric = nm.PanopticQuality(things, stuffs, True, iou_type=iou_type, output="dict", rules="panopticapi",
                                    validate_args=False).to(device)

        def ours(metric=metric) -> object:
            preds, target, crowd, _, _ = _port_data(size, seed)
            metric.reset()
            metric.update(preds.to(device)[None], target.to(device)[None], crowd.to(device)[None])
            return metric.compute()

        def ref(iou_type=iou_type) -> object:
            _, _, _, scene, cats = _port_data(size, seed)
            return panoptic_port.pq_compute([copy.copy(scene)], cats, iou_type, exact=True)

        out.append(Case(f"panoptic {iou_type}", size, device, ours, ref, "pq_compute rules (test port)", 1))
    return out


if __name__ == "__main__":
    sys.exit(main())
