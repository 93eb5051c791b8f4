"""Check the ports of :mod:`tests.reference.coco_boundary_ap` and :mod:`tests.reference.lvis_boundary_ap` against the
real boundary-iou-api, run by hand (the tests never need boundary-iou-api)::

    mkdir -p /tmp/bia && git -C <boundary-iou-api mirror> archive 37d2558 | tar -x -C /tmp/bia
    BOUNDARY_IOU_API=/tmp/bia python -m tests.reference.check_ports [--images 40]

Generates COCO-like data (real-shape objects, crowd gts, tied scores, duplicates, sizes 45x60, 105x140, 465x620
and others), writes the gt and result JSON files, and evaluates them with boundary-iou-api's
``coco_instance_api.COCOeval`` and ``lvis_instance_api.LVISEval`` (``iouType`` segm and boundary) and with the
ports; prints the largest difference of the precision and recall arrays and of the summary values (0 expected).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any


def _lvis_extras(images: list[Any], categories: int, seed: int) -> dict[int, str]:
    import numpy as np

    rng = np.random.default_rng(seed)
    for image in images:
        present = sorted(set(image.gt_labels.tolist()))
        absent = [c for c in range(categories) if c not in present]
        image.extra["neg_category_ids"] = rng.choice(absent, size=min(3, len(absent)), replace=False) if absent else []
        image.extra["not_exhaustive_category_ids"] = present[:1] if present and rng.random() < 0.5 else []
        image.extra["ignore"] = rng.random(len(image.gt_labels)) < 0.1  # boundary-iou-api ORs it with iscrowd
    return {c: "rcf"[c % 3] for c in range(categories)}


def main(argv: list[str] | None = None) -> int:
    import contextlib
    import io

    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images", type=int, default=30)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    root = os.environ.get("BOUNDARY_IOU_API")
    if not root:
        print("set BOUNDARY_IOU_API to an unpacked boundary-iou-api", file=sys.stderr)
        return 2
    sys.path.insert(0, root)
    if "float" not in np.__dict__:
        np.float = float  # type: ignore[attr-defined]  # boundary-iou-api's accumulate writes np.float
    from boundary_iou.coco_instance_api.coco import COCO as BiaCOCO
    from boundary_iou.coco_instance_api.cocoeval import COCOeval as BiaCOCOeval
    from boundary_iou.lvis_instance_api.eval import LVISEval as BiaLVISEval
    from boundary_iou.lvis_instance_api.lvis import LVIS as BiaLVIS

    from benchmarks.instance_data import make_images, to_coco
    from tests.reference.coco_boundary_ap import run_coco
    from tests.reference.lvis_boundary_ap import run_lvis

    sizes = [(45, 60), (105, 140), (465, 620), (37, 53), (96, 64)]
    categories = 8
    images = make_images(args.images, sizes, seed=args.seed, instances=6, detections=16, categories=categories,
                         crowd_rate=0.08)
    frequencies = _lvis_extras(images, categories, args.seed)
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for with_bbox in (False, True):
            dataset, results = to_coco(images, categories, with_bbox=with_bbox)
            for entry in dataset["categories"]:
                entry["frequency"] = frequencies[entry["id"]]
            gt_file, dt_file = os.path.join(tmp, "gt.json"), os.path.join(tmp, "dt.json")
            with open(gt_file, "w") as handle:
                json.dump(dataset, handle)
            with open(dt_file, "w") as handle:
                json.dump(results, handle)
            for iou_type in ("segm", "boundary"):
                with contextlib.redirect_stdout(io.StringIO()):
                    gt = BiaCOCO(gt_file, get_boundary=iou_type == "boundary", dilation_ratio=0.02)
                    real = BiaCOCOeval(gt, gt.loadRes(dt_file), iouType=iou_type, dilation_ratio=0.02)
                    real.evaluate()
                    real.accumulate()
                    real.summarize()
                    port = run_coco(dataset, results, iou_type)
                    port.summarize()
                diffs = [np.abs(real.eval[k] - port.eval[k]).max() for k in ("precision", "recall", "scores")]
                diffs.append(np.abs(np.array(real.stats) - np.array(port.stats)).max())
                print(f"COCO {iou_type:8s} bbox={with_bbox}: max |diff| precision, recall, scores, stats = {diffs}; "
                      f"AP {port.stats[0]:.4f}")
                worst = max(worst, *diffs)
                with contextlib.redirect_stdout(io.StringIO()):
                    lvis_gt = BiaLVIS(gt_file)
                    real_lvis = BiaLVISEval(lvis_gt, dt_file, iou_type=iou_type, max_dets=300, dilation_ratio=0.02)
                    real_lvis.run()
                    port_lvis = run_lvis(dataset, results, iou_type)
                diffs = [np.abs(real_lvis.eval[k] - port_lvis.eval[k]).max() for k in ("precision", "recall")]
                diffs.append(max(abs(real_lvis.results[k] - port_lvis.results[k]) for k in real_lvis.results))
                print(f"LVIS {iou_type:8s} bbox={with_bbox}: max |diff| precision, recall, results = {diffs}; "
                      f"AP {port_lvis.results['AP']:.4f}")
                worst = max(worst, *diffs)
    print(f"worst difference: {worst}")
    return 0 if worst == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
