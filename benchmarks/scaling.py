"""Scaling of the expensive tier: time per image and peak memory vs resolution and vs batch size.

    python benchmarks/scaling.py --threads 1          # the run in docs/scaling.md (~3-5 min), docs/img/scaling.png
    python benchmarks/scaling.py --quick --only mae   # smoke run: 64² and 128², batches 1 and 2, one call each
    python benchmarks/scaling.py --device cuda        # GPU: peak from torch.cuda.max_memory_allocated

Every member of ``make_collection("expensive", normalize=True)`` is measured on its own, on the uint8 images of
``harness.sample_uint8`` (matting metrics also get a trimap: 128 in a band of ~1% of the side around the gt edge,
0 / 255 elsewhere). Points: batch 1 at each ``--sizes`` (H = W), and each ``--batches`` at ``--batch-size``.

One point (metric, size, batch) on CPU runs in a fresh process forked from a forkserver that only imported torch
and nobg_metrics (no OpenMP pool, no allocator state shared between points): load the inputs, warm up on a 64²
crop, reset the peak-RSS mark (``/proc/self/clear_refs`` = 5), then time ``update`` + ``compute`` 1-5 times.
Peak memory = ``ru_maxrss`` after the first call - RSS before it (extra resident memory of one call over the loaded
uint8 inputs); on CUDA, ``max_memory_allocated`` - ``memory_allocated`` before. Time = the fastest call (other
processes share the cores; load only adds time) / batch, with its user and system CPU time and page faults.
The slope of log(time) vs log(pixels) from ``--slope-from`` up is ~1 for work linear in pixels.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import math
import multiprocessing as mp
import os
import pathlib
import platform
import resource
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from harness import sample_uint8

REPO = pathlib.Path(__file__).resolve().parents[1]
FLAG_SLOPE = 1.15


def trimap_for(gts: np.ndarray) -> np.ndarray:
    """Trimaps :math:`(B, H, W)` uint8 for gts :math:`(B, H, W)`: 128 within ``max(2, H // 100)`` px of the gt edge."""
    import cv2

    width = max(2, gts.shape[1] // 100)
    out = np.empty_like(gts)
    for i, gt in enumerate(gts):
        fg = (gt > 127).astype(np.uint8)
        to_bg = cv2.distanceTransform(fg, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)  # on fg: distance to nearest bg
        to_fg = cv2.distanceTransform(1 - fg, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)  # on bg: distance to nearest fg
        band = np.where(fg.astype(bool), to_bg <= width, to_fg <= width)
        out[i] = np.where(band, 128, fg * 255)
    return out


def _calls(pixels: int) -> int:
    """Timed calls for one point of ``pixels`` = batch x H x W (the first also measures memory)."""
    return 5 if pixels <= 2**18 else 3 if pixels <= 2**20 else 2 if pixels <= 2**22 else 1


def _rss_mib() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize() / 2**20


def _measure(name: str, path: str, batch: int, calls: int, device: str, threads: int | None) -> dict[str, Any]:
    """Time and peak memory of ``update`` + ``compute`` of metric ``name`` on the first ``batch`` images in ``path``."""
    import torch

    import nobg_metrics as nm

    if threads:
        torch.set_num_threads(threads)

    data = np.load(path)
    tensors = [torch.from_numpy(np.ascontiguousarray(data[key][:batch])).to(device) for key in ("pred", "gt", "trimap")]
    metric = nm.make_collection("expensive", normalize=True)[name].to(device)
    if "trimap" not in inspect.signature(metric.update).parameters:
        tensors = tensors[:2]

    def call(inputs: list[torch.Tensor]) -> None:
        metric.update(*inputs)
        metric.compute()
        metric.reset()
        if device == "cuda":
            torch.cuda.synchronize()

    call([t[:, :64, :64] for t in tensors])  # lazy initialisation, kernels, thread pool
    gc.collect()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated() / 2**20
        method = "cuda max_memory_allocated"
    else:
        try:
            with open("/proc/self/clear_refs", "w") as handle:
                handle.write("5")  # peak RSS := current RSS (Linux >= 4.0)
            before, method = _rss_mib(), "ru_maxrss - rss, fresh process, peak reset"
        except OSError:
            before, method = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "ru_maxrss delta (lower bound)"
    runs = []  # (wall, user CPU, system CPU, minor page faults) of each call
    for i in range(calls):
        usage, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        call(tensors)
        wall, done = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
        runs.append((wall, done.ru_utime - usage.ru_utime, done.ru_stime - usage.ru_stime,
                     done.ru_minflt - usage.ru_minflt))
        if i == 0:
            after = torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else done.ru_maxrss / 1024
    wall, user, system, faults = min(runs)
    return {"ms_per_image": wall * 1e3 / batch, "user_ms_per_image": user * 1e3 / batch,
            "sys_ms_per_image": system * 1e3 / batch, "minor_faults_per_image": faults / batch,
            "all_ms": [run[0] * 1e3 for run in runs], "peak_mib": max(0.0, after - before), "calls": calls,
            "memory_method": method, "threads": torch.get_num_threads()}


def _child(conn: Any, *args: Any) -> None:
    try:
        conn.send(_measure(*args))
    except BaseException as error:  # noqa: BLE001 - any failure of the child (MemoryError too) is the point's result
        conn.send({"error": repr(error)})


def _point(ctx: Any, args: tuple, timeout_s: float) -> dict[str, Any]:
    """One measurement in a fresh forked process (CPU) or here (CUDA)."""
    if ctx is None:
        return _measure(*args)
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(sender, *args))
    process.start()
    sender.close()
    try:
        result = receiver.recv() if receiver.poll(timeout_s) else {"error": f"timeout {timeout_s:.0f} s"}
    except EOFError:
        result = {"error": "process died (out of memory?)"}
    process.join(10)
    if process.is_alive():
        process.kill()
        process.join()
    return result


def _save(folder: pathlib.Path, tag: str, size: int, batch: int, seed: int) -> str:
    preds, gts = sample_uint8(size, batch, seed=seed)
    path = folder / f"{tag}.npz"
    np.savez(path, pred=preds, gt=gts, trimap=trimap_for(gts))
    return str(path)


def fitted_slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log(ys) vs log(xs); None with fewer than two points."""
    points = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if y and y > 0]
    if len(points) < 2:
        return None
    mx, my = statistics.fmean(p[0] for p in points), statistics.fmean(p[1] for p in points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def slopes(rows: list[dict[str, Any]], names: list[str], sizes: list[int], slope_from: int) -> dict[str, dict]:
    """Per metric: time and memory slopes vs pixels over the sizes >= ``slope_from`` (else the two largest)."""
    fit_sizes = [s for s in sizes if s >= slope_from]
    fit_sizes = fit_sizes if len(fit_sizes) >= 2 else sorted(sizes)[-2:]
    out = {}
    for name in names:
        found = {r["size"]: r for r in rows if r["sweep"] == "resolution" and r["metric"] == name and "error" not in r}
        used = [s for s in fit_sizes if s in found]
        time_slope = fitted_slope([s * s for s in used], [found[s]["ms_per_image"] for s in used])
        mem_slope = fitted_slope([s * s for s in used], [found[s]["peak_mib"] for s in used])
        user_slope = fitted_slope([s * s for s in used], [found[s]["user_ms_per_image"] for s in used])
        out[name] = {"sizes": used, "time": time_slope, "memory": mem_slope, "user_cpu": user_slope,
                     "flag": time_slope is not None and time_slope > FLAG_SLOPE}
    return out


def _text(value: float | None, fmt: str = ".2f", flag: bool = False) -> str:
    return "-" if value is None else format(value, fmt) + (" ⚠" if flag else "")


def markdown(rows: list[dict[str, Any]], names: list[str], sizes: list[int], batches: list[int],
             fits: dict[str, dict], batch_size: int) -> str:
    """Three markdown tables: ms/image vs size (+ wall and user-CPU slopes, user/sys CPU at the largest size),
    peak MiB vs size (+ slope), ms/image [peak MiB] vs batch."""
    get = {(r["sweep"], r["metric"], r["size"], r["batch"]): r for r in rows if "error" not in r}
    fit = fits[names[0]]["sizes"] if names else []
    span = f"{fit[0]}²–{fit[-1]}²" if fit else ""
    heads = " | ".join(f"{s}²" for s in sizes)
    out = [f"| metric (ms per image, batch 1) | {heads} | slope {span} | user-CPU slope | {sizes[-1]}² user / sys "
           f"CPU ms |", "|---" * (len(sizes) + 4) + "|"]
    for name in names:
        cells = [get.get(("resolution", name, s, 1)) for s in sizes]
        last = cells[-1]
        out.append(f"| {name} | " + " | ".join(_text(c and c["ms_per_image"]) for c in cells)
                   + f" | {_text(fits[name]['time'], flag=fits[name]['flag'])} | {_text(fits[name]['user_cpu'])} | "
                   + ("-" if last is None else f"{last['user_ms_per_image']:.0f} / {last['sys_ms_per_image']:.0f}")
                   + " |")
    out += ["", f"| metric (peak MiB, batch 1) | {heads} | slope {span} |", "|---" * (len(sizes) + 2) + "|"]
    for name in names:
        cells = [get.get(("resolution", name, s, 1)) for s in sizes]
        out.append(f"| {name} | " + " | ".join(_text(c and c["peak_mib"], ".1f") for c in cells)
                   + f" | {_text(fits[name]['memory'])} |")
    out += ["", f"| metric (ms per image at {batch_size}², [peak MiB]) | " + " | ".join(f"B={b}" for b in batches)
            + " |", "|---" * (len(batches) + 1) + "|"]
    for name in names:
        cells = [get.get(("batch", name, batch_size, b)) for b in batches]
        out.append(f"| {name} | " + " | ".join(
            "-" if c is None else f"{c['ms_per_image']:.2f} [{c['peak_mib']:.0f}]" for c in cells) + " |")
    return "\n".join(out)


def plot(rows: list[dict[str, Any]], names: list[str], path: pathlib.Path, title: str) -> None:
    """Three log-log panels: ms/image vs megapixels, peak MiB vs megapixels, ms/image vs batch size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 3, figsize=(17, 6.2))
    colors = plt.get_cmap("tab20")
    for i, name in enumerate(names):
        style = {"color": colors(i % 20), "linestyle": ("-", "--", ":")[i % 3], "marker": "o", "markersize": 3}
        mine = [r for r in rows if r["metric"] == name and "error" not in r]
        res = sorted(((r["size"] ** 2 / 1e6, r) for r in mine if r["sweep"] == "resolution"), key=lambda p: p[0])
        bat = sorted(((r["batch"], r) for r in mine if r["sweep"] == "batch"), key=lambda p: p[0])
        axes[0].plot([m for m, _ in res], [r["ms_per_image"] for _, r in res], label=name, **style)
        axes[1].plot([m for m, _ in res], [max(r["peak_mib"], 0.1) for _, r in res], **style)
        axes[2].plot([b for b, _ in bat], [r["ms_per_image"] for _, r in bat], **style)
    sizes = sorted({r["size"] for r in rows if r["sweep"] == "resolution"})
    batches = sorted({r["batch"] for r in rows if r["sweep"] == "batch"})
    timed = [r["ms_per_image"] for r in rows if r["sweep"] == "resolution" and "error" not in r]
    if sizes and timed:  # guide: cost proportional to pixels, through the median metric's first point
        start = statistics.median(timed[:len(names)])
        axes[0].plot([s * s / 1e6 for s in sizes], [start * (s / sizes[0]) ** 2 for s in sizes], color="grey",
                     linewidth=3, alpha=0.3, label="∝ pixels (slope 1)")
    labels = (("megapixels (batch 1)", "ms per image"), ("megapixels (batch 1)", "peak extra MiB per call"),
              (f"batch size ({rows[-1]['size']}² images)" if batches else "batch size", "ms per image"))
    ticks = ([s * s / 1e6 for s in sizes], [f"{s * s / 1e6:.2g}\n({s}²)" for s in sizes])
    for axis, (xlabel, ylabel) in zip(axes, labels):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xticks(*(ticks if axis is not axes[2] else (batches, [str(b) for b in batches])))
        axis.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        axis.set_xlabel(xlabel)
        axis.set_ylabel(ylabel)
        axis.grid(True, which="both", alpha=0.3)
    fig.legend(loc="lower center", ncol=6, fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--batch-size", type=int, default=512, help="H = W of the batch sweep")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of metric names to keep")
    parser.add_argument("--quick", action="store_true", help="smoke run: 64² and 128², batches 1 2 at 64², 1 call")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--calls", type=int, default=None, help="timed calls per point (default: 5 to 1 by size)")
    parser.add_argument("--keep-freed-memory", action="store_true",
                        help="glibc keeps freed memory (MALLOC_MMAP_MAX_=0, no trim): no page faults after call 1")
    parser.add_argument("--slope-from", type=int, default=1024, help="fit the slopes over sizes >= this")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per point before giving up")
    parser.add_argument("--json", type=pathlib.Path, default=None, help="write the rows, slopes and machine here")
    parser.add_argument("--markdown", type=pathlib.Path, default=None, help="write the tables here")
    parser.add_argument("--plot", type=pathlib.Path, default=None,
                        help="PNG path (default docs/img/scaling.png; none in --quick unless given)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.batches, args.batch_size = [64, 128], [1, 2], 64
    plot_path = args.plot or (None if args.quick else REPO / "docs" / "img" / "scaling.png")

    import torch

    from nobg_metrics.collection import TIERS

    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: nothing to run on cuda", file=sys.stderr)
        return 2
    names = [n for n in TIERS["expensive"] if not args.only or any(key in n for key in args.only)]
    ctx = None
    if args.keep_freed_memory:  # read by glibc when the forkserver starts
        os.environ.update(MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_=str(2**40))
    if args.device == "cpu":
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["torch", "nobg_metrics", "numpy"])
    started = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="nobg_scaling_") as tmp:
        folder = pathlib.Path(tmp)
        plan = [("resolution", size, 1, _save(folder, f"r{size}", size, 1, 0)) for size in sorted(args.sizes)]
        batch_file = _save(folder, "batch", args.batch_size, max(args.batches), 1)
        plan += [("batch", args.batch_size, batch, batch_file) for batch in sorted(args.batches)]
        for sweep, size, batch, path in plan:
            for name in names:
                calls = args.calls or (1 if args.quick else _calls(batch * size * size))
                result = _point(ctx, (name, path, batch, calls, args.device, args.threads), args.timeout)
                rows.append({"sweep": sweep, "metric": name, "size": size, "batch": batch, **result})
                shown = result.get("error") or f"{result['ms_per_image']:.2f} ms/img, {result['peak_mib']:.1f} MiB"
                print(f"  {sweep} {name} {size}² x{batch}: {shown}", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - started
    fits = slopes(rows, names, sorted(args.sizes), args.slope_from)
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or platform.machine()
    machine = {"device": args.device, "device_name": device_name, "torch": torch.__version__,
               "threads": args.threads or torch.get_num_threads(), "cpus": mp.cpu_count(), "elapsed_s": elapsed,
               "loadavg_after": list(os.getloadavg()), "keep_freed_memory": args.keep_freed_memory}
    table = markdown(rows, names, sorted(args.sizes), sorted(args.batches), fits, args.batch_size)
    flagged = [name for name, fit in fits.items() if fit["flag"]]
    print(f"torch {machine['torch']}, {args.device} ({device_name}), {machine['threads']} threads, "
          f"{elapsed:.0f} s, load average after {machine['loadavg_after']}")
    print(table)
    print(f"time slope > {FLAG_SLOPE}: {', '.join(flagged) or 'none'}")
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "slopes": fits, "rows": rows}, indent=1))
    if plot_path:
        plot(rows, names, plot_path, f"nobg_metrics expensive tier, {args.device} ({device_name}), torch "
             f"{machine['torch']}, torch threads: {machine['threads']}, uint8 inputs, batch sweep at "
             f"{args.batch_size}²")
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
