"""One scoring process per core on CPU: ``--procs``.

torch's intra-op threads scale poorly on this workload (many small ops, scans and scatters run on one
thread, Python runs between them): on 2 cores two threads score an image ~1.5x faster than one, while
two single-threaded processes score two images in the time of one. So on CPU the command starts
``--procs`` ranks itself — the same ranks ``torchrun --nproc-per-node N`` would start: gloo process
group on localhost, images sharded ``rank, rank + N, ...``, metric states summed in ``compute()``, rank 0
writing the outputs — each with ``cores / N`` threads and its own decoding workers.

``auto`` starts one rank per core (at most 8) when there are at least 64 images per rank, otherwise one
process (starting a rank costs about a second of imports); on CUDA and under ``torchrun`` always one.

Stopping: every rank dies with the launcher (``PR_SET_PDEATHSIG``, even when the launcher is killed),
and its decoding workers with it. A rank stopped by a signal, or the launcher interrupted (SIGINT,
SIGTERM, SIGHUP), stops all ranks at once: SIGTERM, then SIGKILL after ``STOP_GRACE_S`` (a rank blocked
in a collective cannot run its handler). A rank failing otherwise (exit status 1 to 3: every rank
decides alike, or its peers' collectives break) gives the others ``FAILURE_GRACE_S`` to end on their own.
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

from nobg_metrics.cli.core.ranks import LAUNCHED_ENV
from nobg_metrics.cli.core.signals import checkpoint, die_with_parent, exit_status, signal_name

IMAGES_PER_RANK = 64
"""``--procs auto`` starts no more ranks than this many images each can keep busy."""

FAILURE_GRACE_S = 10.0
"""After one rank fails, how long the others may take to finish on their own before they are stopped."""

STOP_GRACE_S = 5.0
"""After SIGTERM, how long a rank may take to stop (shut its workers down) before it is killed."""

MAX_AUTO_PROCS = 8
"""``--procs auto`` stops here: beyond, the ranks' memory (one copy of every metric state and buffer each)
outweighs the gain."""


def resolve_procs(choice: str, device: torch.device, images: int) -> int:
    """The number of scoring processes for ``--procs choice`` (``auto`` or a positive integer).

    Examples:
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
               args: argparse.Namespace, launcher: int) -> None:
    code = 3
    try:
        die_with_parent(launcher)
        os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(procs),
                           "LOCAL_WORLD_SIZE": str(procs), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                           LAUNCHED_ENV: "1"})
        torch.set_num_threads(threads)
        code = run(args)
    except KeyboardInterrupt as interrupt:  # signals.Interrupted, or one that came before its handler
        code = exit_status(getattr(interrupt, "signum", 2))
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)  # no atexit handlers inherited from the parent (fork)


def process_status(exitcode: int | None) -> int:
    """A child's status as a shell reports it: killed by signal N -> 128 + N.

    Examples:
        >>> process_status(-15), process_status(1), process_status(None)
        (143, 1, 0)
    """
    if exitcode is None:
        return 0
    return exit_status(-exitcode) if exitcode < 0 else exitcode


def _stopped_by_signal(status: int) -> bool:
    return status > 128


def _stop(ranks: list) -> None:
    """Stop every rank still running: SIGTERM, then SIGKILL after ``STOP_GRACE_S``; reap them all."""
    alive = [p for p in ranks if p.pid is not None and p.is_alive()]
    for process in alive:
        process.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for process in alive:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in alive:
        if process.is_alive():
            process.kill()
    for process in ranks:
        if process.pid is not None:
            process.join()


def _watch(ranks: list) -> int:
    """Wait for the ranks; the run's status (the first failure's)."""
    while any(process.is_alive() for process in ranks):
        checkpoint()
        failed = [(rank, process_status(p.exitcode)) for rank, p in enumerate(ranks) if p.exitcode not in (None, 0)]
        if failed:
            rank, status = failed[0]
            if _stopped_by_signal(status):
                print(f"nobg-metrics: rank {rank} was stopped by {signal_name(status - 128)}; stopping the run",
                      file=sys.stderr)
                return status
            # a failure every rank decides alike (unreadable files) ends them all: give rank 0 time to report
            deadline = time.monotonic() + FAILURE_GRACE_S
            while time.monotonic() < deadline and any(p.is_alive() for p in ranks):
                checkpoint()
                time.sleep(0.05)
            return status
        time.sleep(0.05)
    return next((process_status(p.exitcode) for p in ranks if p.exitcode), 0)


def run_ranks(procs: int, run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run ``run(args)`` as ``procs`` ranks of one process group; the exit status of the run.

    A rank that fails stops the others (they would wait for it in a collective); the first non-zero
    status is returned. An interruption of this process (:class:`~nobg_metrics.cli.core.signals.Interrupted`)
    stops every rank, then propagates. Linux forks (nothing to re-import; no torch op has run yet, so no
    OpenMP pool is copied); other systems spawn.
    """
    linux = sys.platform.startswith("linux")
    context = multiprocessing.get_context("fork") if linux else multiprocessing.get_context("spawn")
    threads = max(1, usable_cores() // procs)
    port = _free_port()
    ranks = [context.Process(target=_rank_main, args=(rank, procs, port, threads, run, args, os.getpid()),
                             daemon=False) for rank in range(procs)]
    try:
        for process in ranks:
            process.start()
            checkpoint()  # a signal during the fork (an at-fork callback) was dropped by Python
        return _watch(ranks)
    finally:
        _stop(ranks)
