"""One intra-op thread for small CPU calls: the per-call cost of torch's thread pool, removed where it dominates.

Every torch op on more than ~32 768 elements splits its work over the intra-op threads (OpenMP on CPU): a fork,
a join, and the threads' spin-wait in between. On a small image each op is a few microseconds of work, so that
cost dominates — and on a machine whose other cores are busy the join waits for a descheduled thread: with
torch's 2 threads on the shared 2-core VM (load ~10), scoring the bundled sample's 48 images took 27.7 s of wall
time for HCE and 20.9 s for the context measure, against 3.6 s and 1.0 s on one thread (measured 2026-12-01,
same process, alternating). :func:`one_thread_if_small` runs a call on one thread when its images are small
(:data:`SMALL_CALL_PIXELS`) and puts the caller's setting back afterwards; larger calls keep every thread.

The values do not depend on it beyond the last bits of the sums that torch itself parallelises (which already
depend on the thread count, and on the batch size).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

SMALL_CALL_PIXELS = 1 << 18
"""Calls over at most this many pixels (a 512² image; four 256² ones) run on one intra-op thread on CPU."""


@contextlib.contextmanager
def one_thread_if_small(pixels: int, device: torch.device) -> Iterator[None]:
    """Run the block on one intra-op thread when it is a CPU call over at most :data:`SMALL_CALL_PIXELS` pixels.

    ``torch.set_num_threads`` costs ~10 µs a round trip (measured); the caller's thread count is restored even when
    the block raises.

    Examples:
        >>> threads = torch.get_num_threads()
        >>> with one_thread_if_small(64 * 64, torch.device("cpu")):
        ...     inside = torch.get_num_threads()
        >>> inside, torch.get_num_threads() == threads
        (1, True)
    """
    threads = torch.get_num_threads()
    if device.type != "cpu" or pixels > SMALL_CALL_PIXELS or threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
