"""How much slower the metrics get when another process keeps a core busy, and what a user can set against it.

A training process rarely has the machine to itself: DataLoader workers decode next to it. torch's intra-op
threads (one per core by default) then compete with them, and on a small machine every parallel region waits for
its slowest thread. This script times one workload in fresh child processes (so each gets its own thread pool and
OpenMP settings), each configuration alone and next to a *spinner* (a process busy-looping on one core):

- ``default``: torch's default intra-op threads (one per core);
- ``threads=1``: ``torch.set_num_threads(1)``;
- ``threads=N-1``: one thread fewer than the cores (the busy core left to the other process);
- ``passive``: the default threads with ``OMP_WAIT_POLICY=PASSIVE`` (idle OpenMP threads sleep instead of spinning;
  it must be set before torch is imported).

Workloads: ``medium`` (``make_collection("medium")``, the SOD + matting set a validation step logs) and
``expensive`` (adds S, weighted F, connectivity), one 1024² realistic pair per update (``shapes.real_pairs``).

    python benchmarks/busy_machine.py                      # both workloads, every configuration
    python benchmarks/busy_machine.py --workload medium --repeat 7

Printed: median ms per update per configuration, idle and busy, and the slowdown busy / idle(default).

``--commands eval instances panoptic`` times the console script instead, whole process (imports included), on
generated inputs in a temporary folder (``eval``: 1024² PNG pairs, default metrics; ``instances``: 640×480-class
images with ~20 detections each, ``--iou-type boundary``; ``panoptic``: 640×480 scenes, Boundary PQ). Each
repetition runs the command idle, then next to a spinner pinned to the last core (a bounded loop that stops itself),
so idle and busy runs interleave on a shared machine; the load average before each pair is printed. Policies:
``command``: the command's own (docs/performance.md "A busy machine"); ``before``: what the command did before it
chose (torch's threads, libgomp's default spin: ``OMP_NUM_THREADS=<cores> GOMP_SPINCOUNT=300000``, which the
command then leaves alone as the user's setting)::

    python benchmarks/busy_machine.py --commands eval instances panoptic --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time
sys.path.insert(0, {here!r})
import numpy as np, torch
threads = {threads}
if threads:
    torch.set_num_threads(threads)
from shapes import real_pairs
import nobg_metrics as nm
pred, gt = real_pairs((1024, 1024), count=1, seed=0)[0]
pred = torch.from_numpy(pred)[None, None]
gt = torch.from_numpy(gt)[None, None]
trimap = torch.full_like(gt, 128)
trimap[gt == 0] = 0
trimap[gt == 255] = 255
metric = nm.make_collection({workload!r}, normalize=True)
metric.update(pred, gt, trimap=trimap)  # warm-up: compute groups, first-call costs
times = []
for _ in range({repeat}):
    start = time.perf_counter()
    metric.update(pred, gt, trimap=trimap)
    times.append(time.perf_counter() - start)
print(json.dumps({{"ms": 1e3 * float(np.median(times)), "threads": torch.get_num_threads()}}))
"""

SPINNER = ("import os, time\nif hasattr(os, 'sched_setaffinity'):\n    os.sched_setaffinity(0, {{{core}}})\n"
           "end = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n")
"""A process busy on one core (pinned to ``core``), stopping itself after ``seconds``."""


def run_child(workload: str, threads: int, repeat: int, env: dict[str, str]) -> dict:
    code = CHILD.format(here=str(HERE), threads=threads, workload=workload, repeat=repeat)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def configurations(cores: int) -> list[tuple[str, int, dict[str, str]]]:
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    configs = [("default", 0, base), ("threads=1", 1, base)]
    if cores > 2:
        configs.append((f"threads={cores - 1}", cores - 1, base))
    configs.append(("passive", 0, dict(base, OMP_WAIT_POLICY="PASSIVE")))
    return configs


# ------------------------------------------------------------------------------------------- the console script
POLICIES = {"command": {}, "before": {"GOMP_SPINCOUNT": "300000"}}
"""Environment of each policy (``before`` also gets ``OMP_NUM_THREADS=<cores>``)."""


def _make_eval(root: pathlib.Path) -> list[str]:
    import cv2
    from harness import sample_uint8

    (root / "gt").mkdir(parents=True)
    (root / "pred").mkdir()
    for index in range(12):
        preds, gts = sample_uint8(1024, 1, seed=index)
        cv2.imwrite(str(root / "gt" / f"{index:04d}.png"), gts[0])
        cv2.imwrite(str(root / "pred" / f"{index:04d}.png"), preds[0])
    return ["eval", "--gt", str(root / "gt"), "--pred", str(root / "pred"), "--device", "cpu", "--quiet"]


def _make_instances(root: pathlib.Path) -> list[str]:
    sys.path.insert(0, str(HERE.parent))
    from benchmarks.instance_data import make_images, to_coco

    gt, results = to_coco(make_images(IMAGES, [(480, 640), (427, 640), (640, 480)], seed=0, detections=20.0),
                          with_bbox=True)
    root.mkdir(parents=True)
    (root / "gt.json").write_text(json.dumps(gt))
    (root / "dt.json").write_text(json.dumps(results))
    return ["instances", "--gt-json-file", str(root / "gt.json"), "--dt-json-file", str(root / "dt.json"),
            "--iou-type", "boundary", "--device", "cpu", "--quiet"]


def _make_panoptic(root: pathlib.Path) -> list[str]:
    from panoptic_scenes import make_scene, write_dataset

    paths = write_dataset([make_scene(480, 640, seed) for seed in range(12)], root)
    return ["panoptic", "--gt-json-file", paths["gt_json"], "--pred-json-file", paths["pred_json"], "--iou-type",
            "boundary", "--quiet"]


IMAGES = 96
"""Images of the ``instances`` run (a few seconds of scoring after ~3 s of imports on 2 cores)."""

COMMANDS = {"eval": _make_eval, "instances": _make_instances, "panoptic": _make_panoptic}
"""Each command's inputs (written under a folder) and its arguments."""


def _time_command(argv: list[str], env: dict[str, str], out: pathlib.Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nobg_metrics", *argv, "--out", str(out)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def command_main(commands: list[str], policies: list[str], repeat: int) -> int:
    """Idle and busy runs of each command, interleaved, for each policy; the ratio busy / idle of each pair."""
    import statistics
    import tempfile

    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    cores, core = len(usable), usable[-1]
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    print(f"{cores} cores; the spinner holds core {core}; whole-process seconds")
    print("| command | policy | run | load avg (1 min) | idle s | busy s | busy / idle |")
    print("|---|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for command in commands:
            argv = COMMANDS[command](pathlib.Path(tmp) / command)
            for policy in policies:
                env = dict(base, **POLICIES[policy])
                if policy == "before":
                    env["OMP_NUM_THREADS"] = str(cores)
                ratios = []
                for run in range(1, repeat + 1):
                    load = os.getloadavg()[0]
                    idle = _time_command(argv, env, pathlib.Path(tmp) / "out")
                    spinner = subprocess.Popen([sys.executable, "-c", SPINNER.format(seconds=300, core=core)])
                    try:
                        time.sleep(0.5)
                        busy = _time_command(argv, env, pathlib.Path(tmp) / "out")
                    finally:
                        spinner.kill()
                        spinner.wait()
                    ratios.append(busy / idle)
                    print(f"| {command} | {policy} | {run} | {load:.2f} | {idle:.2f} | {busy:.2f} | "
                          f"{busy / idle:.2f}x |", flush=True)
                print(f"| {command} | {policy} | median | | | | **{statistics.median(ratios):.2f}x** |", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["medium", "expensive"], nargs="+", default=["medium", "expensive"])
    parser.add_argument("--commands", choices=list(COMMANDS), nargs="+", default=None,
                        help="time the console script's commands instead of a library workload")
    parser.add_argument("--policies", choices=list(POLICIES), nargs="+", default=list(POLICIES))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if args.commands:
        return command_main(args.commands, args.policies, args.repeat)
    cores = os.cpu_count() or 1
    print(f"{cores} cores; one spinner process keeps one core busy in the 'busy' column")
    print("| workload | configuration | threads | idle ms | busy ms | busy / idle(default) |")
    print("|---|---|---:|---:|---:|---:|")
    for workload in args.workload:
        idle_default = None
        for name, threads, env in configurations(cores):
            idle = run_child(workload, threads, args.repeat, env)
            spinner = subprocess.Popen([sys.executable, "-c", SPINNER.format(seconds=600, core=cores - 1)])
            try:
                time.sleep(0.5)
                busy = run_child(workload, threads, args.repeat, env)
            finally:
                spinner.kill()
                spinner.wait()
            idle_default = idle["ms"] if idle_default is None else idle_default
            print(f"| {workload} | {name} | {idle['threads']} | {idle['ms']:.1f} | {busy['ms']:.1f} | "
                  f"{busy['ms'] / idle_default:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
