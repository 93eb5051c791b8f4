"""Check the Cityscapes port (:mod:`tests.reference.cityscapes_instances_port`) and ours — the library and
``nobg-metrics instances --cityscapes`` — against the real boundary-iou-api scripts, run by hand (the tests never
need them; how to unpack them: :mod:`tests.reference.cityscapes_reference_run`)::

    BOUNDARY_IOU_API=/tmp/bia CITYSCAPES_SCRIPTS=/tmp/css python -m tests.reference.check_cityscapes_port --seeds 0 12
    ... --size 1024 2048 --images 3 --seeds 0 2            # full-resolution images

For each seed: a generated Cityscapes-like dataset (:mod:`tests.helpers.cityscapes_data`) written in the Cityscapes
layout, evaluated with ``--iou-type segm`` (ratio 0.005) and ``boundary`` (0.005 and 0.02) by the tool and by us.
Prints the largest difference of every AP / AP50 / per-class / matrix value, how many are bit-identical, and whether
the printed tables are the same. A tool failure (its ``IndexError`` when every prediction of a class is ignored) is
reported with our value there (0).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CASES = (("segm", 0.005), ("boundary", 0.005), ("boundary", 0.02))


def _values(averages: dict, matrix: list, names: list[str]) -> list[float]:
    values = [averages["allAp"], averages["allAp50%"]]
    values += [averages["classes"][n][k] for n in names for k in ("ap", "ap50%")]
    values += [v for row in matrix for v in row]
    return [math.nan if v is None else float(v) for v in values]


def main(argv: list[str] | None = None) -> int:
    import numpy as np
    import torch

    from nobg_metrics.functional import cityscapes_instance_ap
    from tests.helpers.cityscapes_data import (
        as_torch,
        cityscapes_dataset,
        write_cityscapes_folders,
    )
    from tests.reference.cityscapes_instances_port import CLASSES, evaluate
    from tests.reference.cityscapes_reference_run import reference_paths, run_reference

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs=2, default=(0, 6))
    parser.add_argument("--size", type=int, nargs=2, default=None, help="H W of every image (default: random small)")
    parser.add_argument("--images", type=int, default=3)
    args = parser.parse_args(argv)
    if reference_paths() is None:
        print("set BOUNDARY_IOU_API and CITYSCAPES_SCRIPTS to the unpacked references", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    names = list(CLASSES.values())
    worst = {"port": 0.0, "library": 0.0, "command": 0.0}
    identical = dict.fromkeys(worst, 0)
    cells = tables = same_tables = 0
    for seed in range(*args.seeds):
        rng = np.random.default_rng(seed)
        if args.size:
            data = cityscapes_dataset(seed, [tuple(args.size)] * args.images, instances=20, groups=3, small=3)
        else:
            sizes = [tuple(int(v) for v in rng.integers(30, 220, 2)) for _ in range(int(rng.integers(2, 7)))]
            data = cityscapes_dataset(seed, sizes)
        preds, target = as_torch(data)
        with tempfile.TemporaryDirectory() as tmp:
            gt_dir, result_dir = write_cityscapes_folders(tmp, data)
            for iou_type, ratio in CASES:
                ours = cityscapes_instance_ap(preds, target, iou_type, ratio)
                try:
                    report = run_reference(gt_dir, result_dir, iou_type, ratio)
                except RuntimeError as error:
                    if "IndexError" not in str(error):
                        raise
                    print(f"seed {seed} {iou_type} {ratio}: the tool fails (IndexError, no entries); ours: "
                          f"{ours['ap'].item():.6f}")
                    continue
                reference = _values(report["result"]["averages"], report["result"]["resultApMatrix"][0], names)
                port = evaluate(data, iou_type, ratio)
                out = Path(tmp) / "out"
                subprocess.run([sys.executable, "-m", "nobg_metrics", "instances", "--cityscapes", "--gt-dir",
                                str(gt_dir), "--result-dir", str(result_dir), "--iou-type", iou_type,
                                "--dilation-ratio", repr(ratio), "--out", str(out), "--quiet"], check=True,
                               capture_output=True)
                document = json.loads((out / "results.json").read_text())
                shutil.rmtree(out)
                flat_port = [port["ap"], port["ap_50"]] + [
                    float(v) for pair in zip(port["ap_per_class"], port["ap_50_per_class"]) for v in pair]
                flat_port += list(np.asarray(port["ap_matrix"]).flatten())
                library = {k: v.tolist() for k, v in ours.items()}
                flat_library = [library["ap"], library["ap_50"]] + [v for pair in zip(
                    library["ap_per_class"], library["ap_50_per_class"]) for v in pair]
                flat_library += [v for row in library["ap_matrix"] for v in row]
                flat_command = _values(document["reference"]["averages"],
                                       document["reference"]["resultApMatrix"][0], names)
                for name, mine in (("port", flat_port), ("library", flat_library), ("command", flat_command)):
                    for a, b in zip(mine, reference):
                        if math.isnan(a) or math.isnan(b):
                            assert math.isnan(a) and math.isnan(b), (seed, iou_type, name)
                            identical[name] += 1
                            continue
                        worst[name] = max(worst[name], abs(a - b))
                        identical[name] += a == b
                cells += len(reference)
                printed = [line for line in report["stdout"].splitlines() if " :" in line or line.startswith("what")]
                ours_printed = [line for line in document["table"] if " :" in line or line.startswith("what")]
                tables += 1
                same_tables += printed == ours_printed
                if printed != ours_printed:
                    print(f"seed {seed} {iou_type} {ratio}: table cells differ:",
                          [(a, b) for a, b in zip(printed, ours_printed) if a != b])
    print(f"{cells} values: largest |difference| {worst}; bit-identical {identical}; tables identical "
          f"{same_tables}/{tables}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
