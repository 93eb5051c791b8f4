"""Peak memory and CPU time of one metric on one image, measured in a fresh child process.

``tracemalloc`` does not see torch's allocations, so the child reads the kernel's counters: the peak resident set
(``VmHWM`` of ``/proc/self/status``, reset through ``/proc/self/clear_refs`` just before the call; where that file
cannot be written, ``ru_maxrss``, which the smaller calls before it stay under) minus the resident set just before
the call, and the call's user + system CPU time (``resource.getrusage``: the machine's other jobs add wall time,
little CPU time). Each metric runs alone in its process, on one thread, after a warm-up on a small crop.

Inputs: random uint8 predictions and a random gt (every pixel its own coin flip: the worst case of the data-sized
paths — as many components, runs and contour points as an image can have), a trimap with every seventh column
unknown, and a random RGB image for CCm.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = r'''
import json, resource, sys, time
import torch
torch.set_num_threads(1)
from nobg_metrics.collection import IMAGE_NAMES, make_collection

name, sizes, long_side = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]


def inputs(pixels):
    generator = torch.Generator().manual_seed(pixels)
    shape = (1, 1, 1, pixels) if long_side == "width" else (1, 1, pixels, 1)
    gt = (torch.rand(shape, generator=generator) > 0.5).to(torch.uint8) * 255  # uint8: every metric reads it
    pred = torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8)
    trimap = gt.clone()
    trimap.view(-1)[::7] = 128
    image = torch.randint(0, 256, (1, 3, *shape[2:]), generator=generator, dtype=torch.uint8)
    return pred, gt, trimap, image


def score(arguments):
    pred, gt, trimap, image = arguments
    metric = make_collection(metrics=[name])
    extra = {"image": image} if name in IMAGE_NAMES else {}
    metric.update(pred, gt, trimap=trimap, **extra)
    return metric.compute()


def resident_kib(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field))


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


score(inputs(64))  # lazy initialisation
out = {}
for pixels in sizes:  # increasing: the last call's peak is the largest
    arguments = inputs(pixels)
    before = resident_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # the peak resident set restarts from the current one
        peak_field = "VmHWM"
    except OSError:
        peak_field = None
    start = cpu_seconds()
    score(arguments)
    seconds = cpu_seconds() - start
    peak = resident_kib(peak_field) if peak_field else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out[pixels] = {"bytes": max(0, peak - before) * 1024, "seconds": seconds}
print(json.dumps(out))
'''


def footprint(name: str, sizes: list[int], long_side: str, timeout: float = 600) -> dict[int, dict[str, float]]:
    """``{pixels: {"bytes": peak extra resident bytes, "seconds": CPU seconds}}`` of ``make_collection(metrics=
    [name])`` scoring one ``1 x pixels`` (``long_side="width"``) or ``pixels x 1`` (``"height"``) image per size."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-c", _CHILD, name, json.dumps(sizes), long_side], check=False,
                            capture_output=True, text=True, timeout=timeout, cwd=root, env=env)
    if result.returncode:
        raise RuntimeError(f"{name} ({long_side}) failed:\n{result.stderr[-2000:]}")
    return {int(pixels): value for pixels, value in json.loads(result.stdout.strip().splitlines()[-1]).items()}


if __name__ == "__main__":  # python tests/helpers/footprint.py NAME[,NAME...]: the table of docs/scaling.md
    for metric in sys.argv[1].split(","):
        for side in ("width", "height"):
            measured = footprint(metric, [100_000, 1_000_000], side)
            small, large = measured[100_000], measured[1_000_000]
            print(json.dumps({"name": metric, "long_side": side, "bytes_per_pixel": large["bytes"] / 1e6,
                              "seconds": large["seconds"], "ratio": large["seconds"] / max(small["seconds"], 1e-3)}),
                  flush=True)
