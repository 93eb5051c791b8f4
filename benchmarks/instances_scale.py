"""``nobg-metrics instances`` at COCO and LVIS scale, whole process, against the reference evaluators.

Simulated results files, written to a temporary folder: a pool of ``--pool`` distinct COCO-like images
(:mod:`benchmarks.instance_data`: real-looking shapes, ``--detections`` detections an image as a model writes them,
RLE masks with ``bbox``) repeated under new image ids up to ``--images`` (the LVIS-like set also moves each copy's
categories, so all 1,203 are used). Presets:

- ``coco``: COCO val2017-like, 80 categories, 100 detections an image (val2017 is 5,000 images; the default here
  is 1,000 so that a run takes minutes on two cores: pass ``--images 5000`` for the full size);
- ``lvis``: LVIS v1 val-like, 1,203 categories with frequencies, 300 detections an image, federated lists
  (``neg_category_ids``, ``not_exhaustive_category_ids``) read with ``--lvis``'s rules (default 300 images).

Or ``--gt`` / ``--dt`` for existing files. Each contender runs as its own process, ``--repeat`` times, interleaved
(ours, then each reference, then ours again ...): wall seconds (best and median), images/s, and the peak
resident memory of that process (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a wrapper that runs only it: the largest
process of its tree — ours runs as two on CPU, ``--workers auto``, each about that size). The
references: faster-coco-eval (segm, boundary), pycocotools (segm), lvis 0.5.3 (LVIS segm) and the
boundary-iou-api ports of ``tests/reference`` (boundary, COCO and LVIS). Their printed summaries are compared with
ours (the same 3-decimal lines). ``--iou-types`` picks segm and / or boundary (the command has no bbox type).

    python benchmarks/instances_scale.py --preset coco                      # 1,000 images x 100
    python benchmarks/instances_scale.py --preset lvis --iou-types segm
    python benchmarks/instances_scale.py --preset coco --images 600 --seed 7    # a held-out set (not the default seed)
    python benchmarks/instances_scale.py --gt gt.json --dt dt.json --repeat 3 --skip pycocotools
    python benchmarks/instances_scale.py --tree before=/tmp/old-checkout   # ours against an older checkout
    python benchmarks/instances_scale.py --images 600 --keep /tmp/coco600  # the files kept for --gt / --dt

Run it from outside the repository when ``--tree`` is given (``python -m`` puts the current folder first on the path).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WRAP = """import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-4000:]}))
"""

REFERENCE = """import sys
sys.path.insert(0, {root!r})
kind, gt, dt, iou_type = sys.argv[1:5]
if kind == "faster-coco-eval":
    from faster_coco_eval import COCO, COCOeval_faster
    coco = COCO(gt)
    ev = COCOeval_faster(coco, coco.loadRes(dt), iouType=iou_type)
    ev.evaluate(); ev.accumulate(); ev.summarize()
    print(chr(10).join(f"] = {{value:0.3f}}" for value in ev.stats[:12]))  # (its summary goes to a logger)
elif kind == "pycocotools":
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    coco = COCO(gt)
    ev = COCOeval(coco, coco.loadRes(dt), iouType=iou_type)
    ev.evaluate(); ev.accumulate(); ev.summarize()
elif kind == "lvis":
    from lvis import LVIS, LVISEval, LVISResults
    from tests.reference.lvis_boundary_ap import numpy_float  # lvis 0.5.3 reads np.float
    with numpy_float():
        data = LVIS(gt)
        ev = LVISEval(data, LVISResults(data, dt, max_dets=300), iou_type)
        ev.run(); ev.print_results()
elif kind == "boundary-iou-api":
    import json
    from tests.reference.coco_boundary_ap import BoundaryCOCOeval, coco_from_dict
    coco = coco_from_dict(json.load(open(gt)))
    ev = BoundaryCOCOeval(coco, coco.loadRes(dt), iou_type, 0.02)
    ev.evaluate(); ev.accumulate(); ev.summarize()
elif kind == "boundary-iou-api (lvis)":
    import json
    from tests.reference.lvis_boundary_ap import run_lvis
    ev = run_lvis(json.load(open(gt)), json.load(open(dt)), iou_type)
    ev.print_results()
"""

REFERENCES = {  # (preset, iou type) -> contenders
    ("coco", "segm"): ["faster-coco-eval", "pycocotools"],
    ("coco", "boundary"): ["faster-coco-eval", "boundary-iou-api"],
    ("lvis", "segm"): ["lvis"],
    ("lvis", "boundary"): ["boundary-iou-api (lvis)"],
}


def make_files(folder: pathlib.Path, preset: str, images: int, detections: int, pool: int, seed: int
               ) -> tuple[pathlib.Path, pathlib.Path]:
    """Write ``gt.json`` and ``dt.json`` of the preset (module notes)."""
    import numpy as np

    from benchmarks.instance_data import make_images, to_coco

    lvis = preset == "lvis"
    categories = 1203 if lvis else 80
    sizes = [(480, 640), (427, 640), (640, 480), (375, 500)]
    base = make_images(pool, sizes, seed=seed, instances=12.0 if lvis else 7.0, detections=float(detections),
                       categories=categories, degrade="simple", crowd_rate=0.0 if lvis else 0.03)  # LVIS: no crowd
    dataset, results = to_coco(base, categories=categories, with_bbox=True)
    rng = np.random.default_rng(seed)
    by_image: dict[int, list[dict[str, Any]]] = {}
    for result in results:
        by_image.setdefault(result["image_id"], []).append(result)
    anns_by_image: dict[int, list[dict[str, Any]]] = {}
    for ann in dataset["annotations"]:
        anns_by_image.setdefault(ann["image_id"], []).append(ann)
    out_images, out_anns, out_results = [], [], []
    for index in range(images):
        source = dataset["images"][index % pool]
        shift = (index // pool) * 97 % categories if lvis else 0  # LVIS: each copy's categories moved

        def moved(category: int, shift: int = shift) -> int:
            return (category + shift) % categories

        image = {**source, "id": index + 1}
        anns = [{**a, "id": len(out_anns) + k + 1, "image_id": index + 1, "category_id": moved(a["category_id"])}
                for k, a in enumerate(anns_by_image.get(source["id"], []))]
        dets = [{**d, "image_id": index + 1, "category_id": moved(d["category_id"])}
                for d in by_image.get(source["id"], [])]
        if lvis:  # federated lists: some detected categories are verified absent, some present ones not exhaustive
            present = sorted({a["category_id"] for a in anns})
            others = sorted({d["category_id"] for d in dets} - set(present))
            image["neg_category_ids"] = [c for c in others if rng.random() < 0.5]
            image["not_exhaustive_category_ids"] = [c for c in present if rng.random() < 0.2]
        out_images.append(image)
        out_anns += anns
        out_results += dets
    cats = [{"id": c, "name": f"c{c}", **({"frequency": "rcf"[c % 3]} if lvis else {})} for c in range(categories)]
    gt_path, dt_path = folder / "gt.json", folder / "dt.json"
    gt_path.write_text(json.dumps({"images": out_images, "annotations": out_anns, "categories": cats}))
    dt_path.write_text(json.dumps(out_results))
    return gt_path, dt_path


def _measure(command: list[str], tree: str | None = None) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": tree} if tree else None  # another checkout's package (--tree)
    done = subprocess.run([sys.executable, "-c", WRAP, *command], capture_output=True, text=True, check=True, env=env)
    report = json.loads(done.stdout)
    if report["rc"] != 0:
        raise RuntimeError(f"{command[:6]} failed: {report['stderr']}")
    return report


def _summary(stdout: str) -> list[str]:
    """The 3-decimal values of the summary lines (ours prints the reference's lines)."""
    return re.findall(r"\] = (-?\d+\.\d{3})", stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", choices=["coco", "lvis"], default="coco")
    parser.add_argument("--images", type=int, default=None, help="default: 1000 (coco), 300 (lvis)")
    parser.add_argument("--detections", type=int, default=None, help="default: 100 (coco), 300 (lvis)")
    parser.add_argument("--pool", type=int, default=40, help="distinct generated images, repeated")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed (another seed: a held-out set)")
    parser.add_argument("--gt", type=pathlib.Path, help="an existing annotation file (with --dt)")
    parser.add_argument("--dt", type=pathlib.Path, help="an existing results file")
    parser.add_argument("--iou-types", nargs="+", default=["segm", "boundary"], choices=["segm", "boundary"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--skip", nargs="*", default=[], help="contenders to leave out (names as printed)")
    parser.add_argument("--tree", nargs="*", default=[], metavar="NAME=PATH",
                        help="also time other checkouts' command (PATH holds their nobg_metrics), e.g. before=...")
    parser.add_argument("--threads", default=None, help="NOBG_METRICS_THREADS for ours (default: the command's)")
    parser.add_argument("--keep", type=pathlib.Path, default=None,
                        help="write gt.json and dt.json into this folder (kept, for --gt / --dt later runs)")
    args = parser.parse_args(argv)
    lvis = args.preset == "lvis"
    images = args.images or (300 if lvis else 1000)
    detections = args.detections or (300 if lvis else 100)
    with tempfile.TemporaryDirectory() as folder:
        if args.gt is not None and args.dt is not None:
            gt_path, dt_path = args.gt, args.dt
        else:
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
            gt_path, dt_path = make_files(args.keep or pathlib.Path(folder), args.preset, images, detections,
                                          args.pool, args.seed)
        count = len(json.loads(gt_path.read_text())["images"])
        env_note = f"NOBG_METRICS_THREADS={args.threads}" if args.threads else "the command's threads"
        if args.threads:
            os.environ["NOBG_METRICS_THREADS"] = args.threads
        print(f"{args.preset}-like: {count} images, {dt_path.stat().st_size / 2**20:.0f} MiB results file, "
              f"best and median of {args.repeat}, load average {os.getloadavg()[0]:.2f}, ours with {env_note}")
        print(f"{'iou type':9s} {'contender':26s} {'best s':>8s} {'median s':>9s} {'img/s':>8s} {'peak MiB':>9s} "
              f"{'ratio':>7s}  summary")
        for iou_type in args.iou_types:
            ours = [sys.executable, "-m", "nobg_metrics", "instances", "--gt-json-file", str(gt_path),
                    "--dt-json-file", str(dt_path), "--iou-type", iou_type, *(["--lvis"] if lvis else [])]
            contenders = {"nobg-metrics instances": ours}
            trees = dict(item.split("=", 1) for item in args.tree)
            contenders.update({f"nobg-metrics ({name})": ours for name in trees})
            for name in REFERENCES[(args.preset, iou_type)]:
                if name not in args.skip:
                    contenders[name] = [sys.executable, "-c", REFERENCE.format(root=str(ROOT)), name, str(gt_path),
                                        str(dt_path), iou_type]
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in contenders}
            for _ in range(args.repeat):  # interleaved: the load drifts alike for everyone
                for name, command in contenders.items():
                    runs[name].append(_measure(command, trees.get(name[len("nobg-metrics ("):-1])))
            ours_best = min(r["seconds"] for r in runs["nobg-metrics instances"])
            ours_lines = _summary(runs["nobg-metrics instances"][0]["stdout"])
            for name, measured in runs.items():
                best = min(r["seconds"] for r in measured)
                lines = _summary(measured[0]["stdout"] + measured[0]["stderr"])  # (some print through logging)
                same = "ours" if name == "nobg-metrics instances" else ("same" if lines == ours_lines else
                                                                f"differs: {lines[:3]} vs {ours_lines[:3]}")
                print(f"{iou_type:9s} {name:26s} {best:8.2f} {statistics.median(r['seconds'] for r in measured):9.2f}"
                      f" {count / best:8.1f} {max(r['rss_mb'] for r in measured):9.0f} {best / ours_best:7.2f}  {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
