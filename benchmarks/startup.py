"""The console script's start-up against torch's own import: ``instances --help``, a 1-image ``instances`` run and a
1-image ``panoptic`` run, whole process, beside ``python -c "import torch"`` (docs/performance.md "Start-up").

Each repetition runs every case once, in turn (interleaved: on a shared machine the load drifts between cases alike).
``... with scipy.signal`` runs the same command after importing ``scipy.signal`` first: the cost the command's deferral
of it saves (:mod:`nobg_metrics.cli.core.startup`). ``import torch, collector paused`` is torch's import as the command
makes it (``gc`` paused: :func:`nobg_metrics.cli.core.startup.collector_paused`), for what the command adds to it.
Printed: median and minimum seconds, and the median minus torch's plain import (the target: within 0.5 s).

``--tree NAME=PATH`` also runs the command cases from another copy of the package (``PATH/nobg_metrics``, e.g. from
``git archive OLD nobg_metrics | tar -x -C PATH``), interleaved with these: before / after on one machine state.

    python benchmarks/startup.py --repeat 7
    python benchmarks/startup.py --repeat 7 --tree before=/tmp/old
    python benchmarks/startup.py --importtime instances   # where the 1-image run's imports go (python -X importtime)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent

ENTRY = "import sys\n{pre}from nobg_metrics.cli.entry import main\nsys.exit(main(sys.argv[1:]))\n"

TREE = "sys.path.insert(0, {path!r})\n"
"""``--tree``: the package imported from ``path`` (ahead of an editable install, whose finder comes last)."""


def _instances_files(root: pathlib.Path) -> list[str]:
    square = [[4.0, 4.0, 20.0, 4.0, 20.0, 20.0, 4.0, 20.0]]
    gt = {"images": [{"id": 1, "height": 48, "width": 64}], "categories": [{"id": 1, "name": "thing"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": square, "area": 256,
                           "iscrowd": 0}]}
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": square}]
    (root / "gt.json").write_text(json.dumps(gt))
    (root / "dt.json").write_text(json.dumps(dt))
    return ["instances", "--gt-json-file", str(root / "gt.json"), "--dt-json-file", str(root / "dt.json"),
            "--iou-type", "boundary", "--device", "cpu", "--quiet"]


def _panoptic_files(root: pathlib.Path) -> list[str]:
    sys.path.insert(0, str(HERE))
    from panoptic_scenes import make_scene, write_dataset

    paths = write_dataset([make_scene(48, 64, 0, things=2, stuff=1)], root / "panoptic")
    return ["panoptic", "--gt-json-file", paths["gt_json"], "--pred-json-file", paths["pred_json"], "--procs", "1",
            "--quiet"]


def cases(root: pathlib.Path, trees: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Each case's command line (and each of ``trees``' command cases, named ``case (tree)``)."""
    python = [sys.executable, "-c"]
    instances, panoptic = _instances_files(root), _panoptic_files(root)
    found = {"python -c 'import torch'": [*python, "import torch"],  # the command pauses the collector over it:
             "python -c 'import torch', collector paused": [*python, "import gc\ngc.disable()\nimport torch"]}
    for name, path in {"": None, **(trees or {})}.items():
        tree = TREE.format(path=str(pathlib.Path(path).resolve())) if path else ""
        suffix = f" ({name})" if name else ""
        found.update({
            f"instances --help{suffix}": [*python, ENTRY.format(pre=tree), "instances", "--help"],
            f"instances, 1 image{suffix}": [*python, ENTRY.format(pre=tree), *instances],
            f"instances, 1 image, with scipy.signal{suffix}": [
                *python, ENTRY.format(pre=tree + "import scipy.signal\n"), *instances],
            f"panoptic, 1 image{suffix}": [*python, ENTRY.format(pre=tree), *panoptic],
        })
    return found


def _seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def importtime(command: str, top: int = 25) -> None:
    """The largest cumulative import times of the 1-image run of ``command``."""
    with tempfile.TemporaryDirectory() as tmp:
        argv = cases(pathlib.Path(tmp))[f"{command}, 1 image"]
        result = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True)
    rows = []
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                rows.append((int(cumulative), name.rstrip()))
    for micros, name in sorted(rows, reverse=True)[:top]:
        print(f"{micros / 1e6:7.3f} s {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--importtime", choices=["instances", "panoptic"], default=None)
    parser.add_argument("--tree", nargs="*", default=[], metavar="NAME=PATH",
                        help="also run the command cases with the package of PATH/nobg_metrics")
    args = parser.parse_args(argv)
    if args.importtime:
        importtime(args.importtime)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        commands = cases(pathlib.Path(tmp), dict(item.split("=", 1) for item in args.tree))
        times: dict[str, list[float]] = {name: [] for name in commands}
        loads = []
        for _ in range(args.repeat):
            loads.append(os.getloadavg()[0])
            for name, command in commands.items():
                times[name].append(_seconds(command))
    torch_s = statistics.median(times["python -c 'import torch'"])
    print(f"{args.repeat} interleaved repetitions; load average (1 min) {min(loads):.2f}-{max(loads):.2f}")
    print("| case | median s | min s | median - torch's import |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {min(values):.2f} | {median - torch_s:+.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
