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

SPINNER = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=["medium", "expensive"], nargs="+", default=["medium", "expensive"])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    print(f"{cores} cores; one spinner process keeps one core busy in the 'busy' column")
    print("| workload | configuration | threads | idle ms | busy ms | busy / idle(default) |")
    print("|---|---|---:|---:|---:|---:|")
    for workload in args.workload:
        idle_default = None
        for name, threads, env in configurations(cores):
            idle = run_child(workload, threads, args.repeat, env)
            spinner = subprocess.Popen([sys.executable, "-c", SPINNER.format(seconds=600)])
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
