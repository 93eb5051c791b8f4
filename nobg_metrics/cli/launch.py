"""One scoring process per core on CPU: ``--procs``.

torch's intra-op threads scale poorly on this workload (many small ops, scans and scatters run on one
thread, Python runs between them): on 2 cores two threads score an image ~1.5x faster than one, while
two single-threaded processes score two images in the time of one. So on CPU the command starts
``--procs`` ranks itself — the same ranks ``torchrun --nproc-per-node N`` would start: gloo process
group on localhost, images sharded ``rank, rank + N, ...``, metric states summed in ``compute()``, rank 0
writing the outputs — each with ``cores / N`` threads and its own decoding workers.

``auto`` starts one rank per core (at most 8) when there are at least 64 images per rank, otherwise one
process (starting a rank costs about a second of imports); on CUDA and under ``torchrun`` always one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import sys
import time
from collections.abc import Callable

import torch

IMAGES_PER_RANK = 64
"""``--procs auto`` starts no more ranks than this many images each can keep busy."""

FAILURE_GRACE_S = 10.0
"""After one rank fails, how long the others may take to finish on their own before they are stopped."""

MAX_AUTO_PROCS = 8
"""``--procs auto`` stops here: beyond, the ranks' memory (one copy of every metric state and buffer each)
outweighs the gain."""


def resolve_procs(choice: str, device: torch.device, images: int) -> int:
    """The number of scoring processes for ``--procs choice`` (``auto`` or a positive integer).

    Example:
        >>> resolve_procs("3", torch.device("cpu"), 10)
        3
        >>> resolve_procs("auto", torch.device("cpu"), 10)
        1
    """
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return 1  # already one rank of a torchrun launch
    if device.type != "cpu":
        if choice not in ("auto", "1"):  # a GPU rank per device is torchrun's job (and CUDA must not be forked)
            raise ValueError(f"--procs {choice} applies to CPU scoring; on CUDA start one rank per GPU with "
                             f"torchrun --nproc-per-node N -m nobg_metrics eval ...")
        return 1
    if choice != "auto":
        return int(choice)
    return max(1, min(usable_cores(), MAX_AUTO_PROCS, images // IMAGES_PER_RANK))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def default_workers() -> int:
    """Decoding workers per scoring process when ``--workers`` is not given: ``min(4, cores)`` shared by the
    ranks of this machine (``LOCAL_WORLD_SIZE`` under torchrun or ``--procs``), at least 1."""
    ranks_here = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    return max(1, min(4, usable_cores()) // ranks_here)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank_main(rank: int, procs: int, port: int, threads: int, run: Callable[[argparse.Namespace], int],
               args: argparse.Namespace) -> None:
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(procs),
                       "LOCAL_WORLD_SIZE": str(procs), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    torch.set_num_threads(threads)
    try:
        code = run(args)
    except KeyboardInterrupt:
        code = 130
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # no atexit handlers inherited from the parent (fork)


def run_ranks(procs: int, run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run ``run(args)`` as ``procs`` ranks of one process group; the exit status of the run.

    A rank that fails stops the others (they would wait for it in a collective); the first non-zero
    status is returned. Linux forks (nothing to re-import; no torch op has run yet, so no OpenMP pool is
    copied); other systems spawn.
    """
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    context = multiprocessing.get_context(method)
    threads = max(1, usable_cores() // procs)
    port = _free_port()
    ranks = [context.Process(target=_rank_main, args=(rank, procs, port, threads, run, args), daemon=False)
             for rank in range(procs)]
    for process in ranks:
        process.start()
    status = 0
    try:
        while any(process.is_alive() for process in ranks):
            failed = [p.exitcode for p in ranks if p.exitcode not in (None, 0)]
            if failed:
                status = failed[0]
                break
            time.sleep(0.05)
        # a failure every rank decides alike (unreadable files) ends them all: give rank 0 time to report
        deadline = time.monotonic() + FAILURE_GRACE_S
        while status and time.monotonic() < deadline and any(p.is_alive() for p in ranks):
            time.sleep(0.05)
    except KeyboardInterrupt:
        status = 130
    for process in ranks:
        if process.is_alive():
            process.terminate()
        process.join()
    return status or next((p.exitcode for p in ranks if p.exitcode), 0)
