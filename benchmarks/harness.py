"""Side-by-side timing: ours and the reference in one process, same data, ratio = reference / ours.

Each ``bench_*.py`` module in this folder exposes ``cases(size: int, device: str) -> list[Case]``;
``run.py`` collects and prints them. Timings are medians of several runs after a warm-up, the two sides
alternating call by call; CUDA timings synchronise before reading the clock.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass
class Case:
    """One comparison: ``ours`` and (optionally) ``reference`` do the same work on the same images.

    ``images`` is how many images one call processes (for images/s).
    """

    name: str
    size: int
    device: str
    ours: Callable[[], Any]
    reference: Callable[[], Any] | None = None
    reference_name: str = ""
    images: int = 1


def timeit(fn: Callable[[], Any], device: str = "cpu", repeat: int = 5, warmup: int = 1,
           budget_s: float = 20.0) -> float:
    """Median wall time of ``fn()`` in seconds (fewer repeats when one call is slow)."""
    for _ in range(warmup):
        fn()
    times: list[float] = []
    start_all = time.perf_counter()
    for _ in range(repeat):
        times.append(_timed(fn, device))
        if time.perf_counter() - start_all > budget_s:
            break
    return statistics.median(times)


SHAPES = "real"
"""What :func:`sample_uint8` draws: ``"real"`` (``shapes.real_pairs``: person, animal, text, blobs and large objects
with model-like predictions; seed ``s`` gives ``shapes.KINDS[s % 5]``) or ``"disc"`` (:func:`disc_uint8`, the sets
used until 2026-12-01). ``run.py --shapes`` sets it."""


def sample_uint8(size: int, batch: int = 1, seed: int = 0, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``batch`` uint8 (pred, gt) pairs of ``size x width`` of the current :data:`SHAPES` (copies of a cache)."""
    preds, gts = _sample(SHAPES, size, batch, seed, width or size)
    return preds.copy(), gts.copy()


@functools.lru_cache(maxsize=64)
def _sample(shapes: str, size: int, batch: int, seed: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    if shapes == "disc":
        preds, gts = disc_uint8(size, batch, seed, width)
    else:
        from shapes import real_pairs  # benchmarks/ is on sys.path wherever harness is imported

        pairs = real_pairs((size, width), count=batch, seed=seed)
        preds, gts = np.stack([p for p, _ in pairs]), np.stack([g for _, g in pairs])
    preds.flags.writeable = gts.flags.writeable = False
    return preds, gts


def disc_uint8(size: int, batch: int = 1, seed: int = 0, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``batch`` uint8 (pred, gt) pairs of ``size x width``: a disc gt and a noisy soft prediction."""
    rng = np.random.default_rng(seed)
    width = width or size
    yy, xx = np.mgrid[0:size, 0:width]
    preds, gts = [], []
    for _ in range(batch):
        cy, cx, r = rng.uniform(0.3, 0.7) * size, rng.uniform(0.3, 0.7) * width, rng.uniform(0.15, 0.35) * size
        dist = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
        gt = np.where(dist <= r, 255, 0).astype(np.uint8)
        soft = 1 / (1 + np.exp((dist - r * rng.uniform(0.9, 1.1)) / 4)) + rng.normal(0, 0.05, dist.shape)
        preds.append(np.clip(soft * 255, 0, 255).astype(np.uint8))
        gts.append(gt)
    return np.stack(preds), np.stack(gts)


def combine_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One row for the same case timed on several pairs: mean times, ratio of the summed times."""
    ours_ms = statistics.fmean(row["ours_ms"] for row in rows)
    has_ref = all(row["ref_ms"] is not None for row in rows)
    ref_ms = statistics.fmean(row["ref_ms"] for row in rows) if has_ref else None
    combined = dict(rows[0], ours_ms=ours_ms, ref_ms=ref_ms, ratio=None if ref_ms is None else ref_ms / ours_ms)
    combined["images_per_s"] = rows[0]["images_per_s"] * rows[0]["ours_ms"] / ours_ms
    return combined


def format_rows(rows: list[dict[str, Any]]) -> str:
    """A markdown table of benchmark rows."""
    header = "| metric | size | device | ours ms | reference | ref ms | ratio (ref/ours) | images/s |"
    lines = [header, "|" + "---|" * 8]
    for row in rows:
        ref_ms = f"{row['ref_ms']:.2f}" if row["ref_ms"] is not None else "-"
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else "-"
        lines.append(f"| {row['name']} | {row['size']}² | {row['device']} | {row['ours_ms']:.2f} | "
                     f"{row['reference_name'] or '-'} | {ref_ms} | {ratio} | {row['images_per_s']:.1f} |")
    return "\n".join(lines)


def _timed(fn: Callable[[], Any], device: str) -> float:
    """Wall time of one call in seconds (CUDA: synchronised before and after)."""
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def run_case(case: Case, repeat: int = 5, budget_s: float = 40.0, block: int = 1) -> dict[str, Any]:
    """Time one case and return its row: medians of ``repeat`` calls of each side after a warm-up.

    The two sides alternate call by call, so a burst of load from elsewhere on a shared machine hits both
    rather than one (the ratio is what docs/performance.md quotes). Fewer repeats when the calls are slow.

    With ``block > 1`` they alternate in blocks of ``block`` calls and only the calls after the first of
    each block count: the steady per-image cost of scoring images one after another, without the cost
    this VM adds to the first ~100 ms of work after any switch (docs/performance.md), which weighs more on
    the shorter side.
    """
    case.ours()
    if case.reference is not None:
        case.reference()
    ours: list[float] = []
    ref: list[float] = []
    start_all = time.perf_counter()
    skip = 1 if block > 1 else 0  # a block's first call carries the switch cost
    for _ in range(repeat):
        ours.extend([_timed(case.ours, case.device) for _ in range(block)][skip:])
        if case.reference is not None:
            ref.extend([_timed(case.reference, "cpu") for _ in range(block)][skip:])
        if time.perf_counter() - start_all > budget_s:
            break
    ours_s = statistics.median(ours)
    ref_s = statistics.median(ref) if ref else None
    return {
        "name": case.name, "size": case.size, "device": case.device, "ours_ms": ours_s * 1e3,
        "reference_name": case.reference_name, "ref_ms": None if ref_s is None else ref_s * 1e3,
        "ratio": None if ref_s is None else ref_s / ours_s, "images_per_s": case.images / ours_s,
    }
