"""The scoring commands' OpenMP threads and wait policy, chosen before torch loads (docs/performance.md "A busy
machine").

torch runs its CPU ops on OpenMP threads, one per core. When another process keeps a core busy, the thread that
shares that core finishes its half of every parallel region late, and the others wait for it at the region's
barrier — spinning, by libgomp's default, for ~300 000 rounds before they sleep, on the very cores the late thread
could use. A run of many small ops then took up to 10x its time next to one busy core (two threads on two cores).
Two settings, both read by libgomp when torch loads it (so set in the environment before ``import torch``, which is
why the command's start is torch-free), avoid it:

- ``OMP_WAIT_POLICY=PASSIVE``: a thread that waits at a barrier sleeps at once and leaves its core to the late one;
- ``OMP_NUM_THREADS``: no more threads than the cores other processes leave free, counted when the command starts
  (the runnable tasks of ``/proc/loadavg``, sampled a few times, the smallest count kept: a process that merely
  passes by is not counted; where there is no ``/proc``, the 1-minute load average).

A setting the user made wins: ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` already in the environment leaves the wait
policy alone, ``OMP_NUM_THREADS`` (or ``NOBG_METRICS_THREADS=auto`` off: ``NOBG_METRICS_THREADS=default``) the thread
count. Child processes (decoding workers, ``--procs`` ranks) inherit the environment; the ranks still set their own
share of the cores. Importable without torch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

POLICY_ENV = "NOBG_METRICS_THREADS"
"""``default``: leave torch's threads and libgomp's wait policy as they are (the command's behaviour before it chose
them); anything else, or unset: choose (module notes)."""

USER_WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
"""Environment variables that set how OpenMP threads wait: any of them present, the wait policy is the user's."""

SAMPLES = 3
"""Reads of ``/proc/loadavg`` at start (the smallest runnable count is kept)."""

SAMPLE_GAP_S = 0.005
"""Seconds between two reads (the whole check costs ~10 ms)."""


@dataclass(frozen=True)
class ThreadPolicy:
    """What to put in the environment before torch loads, and why (for ``--verbose`` style notes and tests)."""

    environ: dict[str, str] = field(default_factory=dict)
    reason: str = ""


def thread_policy(environ: Mapping[str, str], cores: int, busy: float) -> ThreadPolicy:
    """The settings for a run on ``cores`` usable cores while other processes keep ``busy`` cores' worth busy.

    A pure function of its inputs (:func:`apply_thread_policy` reads them from the machine).

    Args:
        environ: the environment the command started with.
        cores: the cores this process may run on (its CPU affinity).
        busy: runnable tasks of other processes (a load estimate; fractions allowed).

    Returns:
        The variables to set (none of them already set by the user) and a one-line reason.

    Examples:
        >>> thread_policy({}, 2, 0.0).environ
        {'OMP_WAIT_POLICY': 'PASSIVE'}
        >>> thread_policy({}, 2, 1.0).environ
        {'OMP_WAIT_POLICY': 'PASSIVE', 'OMP_NUM_THREADS': '1'}
        >>> thread_policy({"OMP_NUM_THREADS": "2"}, 2, 5.0).environ
        {'OMP_WAIT_POLICY': 'PASSIVE'}
        >>> thread_policy({"NOBG_METRICS_THREADS": "default"}, 2, 5.0).environ
        {}
    """
    if environ.get(POLICY_ENV, "").strip().lower() == "default":
        return ThreadPolicy({}, f"{POLICY_ENV}=default: torch's threads and libgomp's wait policy left as they are")
    chosen: dict[str, str] = {}
    reasons = []
    if any(name in environ for name in USER_WAIT_SETTINGS):
        reasons.append("wait policy: the user's")
    else:
        chosen["OMP_WAIT_POLICY"] = "PASSIVE"
        reasons.append("waiting threads sleep (OMP_WAIT_POLICY=PASSIVE)")
    if "OMP_NUM_THREADS" in environ:
        reasons.append(f"threads: the user's OMP_NUM_THREADS={environ['OMP_NUM_THREADS']}")
    else:
        taken = min(max(0, int(busy + 0.5)), cores - 1)  # a core counts as taken when half a task or more runs there
        if taken > 0:
            chosen["OMP_NUM_THREADS"] = str(cores - taken)
            reasons.append(f"{cores - taken} thread(s): {taken} of {cores} cores busy with other processes")
        else:
            reasons.append(f"threads: torch's default ({cores} cores, none busy)")
    return ThreadPolicy(chosen, "; ".join(reasons))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS tells, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _runnable_now(read: Callable[[], str]) -> int | None:
    """Other processes' runnable tasks from one read of ``/proc/loadavg`` (``"0.52 0.58 0.59 2/345 6789"``: the
    4th field counts this process's running thread too); ``None`` if it cannot be read."""
    try:
        running = read().split()[3].split("/")[0]
        return max(0, int(running) - 1)
    except (OSError, IndexError, ValueError):
        return None


def _read_loadavg() -> str:
    with open("/proc/loadavg", encoding="ascii") as handle:
        return handle.read()


def other_load(read: Callable[[], str] = _read_loadavg, samples: int = SAMPLES, gap_s: float = SAMPLE_GAP_S) -> float:
    """How many cores other processes keep busy now: the smallest of ``samples`` runnable counts, or the 1-minute
    load average where ``/proc/loadavg`` cannot be read (0 where neither can)."""
    counts = []
    for sample in range(samples):
        if sample:
            time.sleep(gap_s)
        count = _runnable_now(read)
        if count is None:
            break
        counts.append(count)
    if counts:
        return float(min(counts))
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return 0.0


_CHOSEN: dict[str, str] = {}
"""What :func:`apply_thread_policy` put in this process's environment (a value the user set is never here)."""


def free_cores() -> int:
    """The cores other processes leave free, as :func:`apply_thread_policy` counted them at start (all usable cores
    where it chose no thread count)."""
    return int(_CHOSEN.get("OMP_NUM_THREADS", usable_cores()))


def _fewer_threads(environ: dict[str, str] | None, threads_left: Callable[[int], int]) -> None:
    """``OMP_NUM_THREADS`` set to ``threads_left(current)`` (at least 1), ``current`` the count chosen at start (all
    usable cores if none); a thread count the user set, or ``NOBG_METRICS_THREADS=default``, stays."""
    target = os.environ if environ is None else environ
    if target.get(POLICY_ENV, "").strip().lower() == "default":
        return
    if "OMP_NUM_THREADS" in target and "OMP_NUM_THREADS" not in _CHOSEN:
        return
    threads = int(_CHOSEN.get("OMP_NUM_THREADS", usable_cores()))
    target["OMP_NUM_THREADS"] = _CHOSEN["OMP_NUM_THREADS"] = str(max(1, threads_left(threads)))


def share_cores(processes: int, environ: dict[str, str] | None = None) -> None:
    """Torch's threads split among ``processes`` scoring processes of the command (at least one each): a shared
    ``instances`` run. A thread count the user set, or ``NOBG_METRICS_THREADS=default``, stays.

    Examples:
        >>> environ = {"NOBG_METRICS_THREADS": "default"}
        >>> share_cores(2, environ); environ
        {'NOBG_METRICS_THREADS': 'default'}
    """
    _fewer_threads(environ, lambda threads: threads // processes)


def leave_a_core(environ: dict[str, str] | None = None) -> None:
    """One thread fewer for torch (at least one): the command runs a busy process of its own beside it (the
    ``instances`` reading process). A thread count the user set, or ``NOBG_METRICS_THREADS=default``, stays.

    Examples:
        >>> environ = {"OMP_NUM_THREADS": "4"}  # the user's
        >>> leave_a_core(environ); environ
        {'OMP_NUM_THREADS': '4'}
    """
    _fewer_threads(environ, lambda threads: threads - 1)


def apply_thread_policy(environ: dict[str, str] | None = None) -> ThreadPolicy:
    """Decide (:func:`thread_policy`) and set the variables in ``environ`` (default ``os.environ``); call before
    torch is imported (afterwards libgomp has read them: the call changes nothing for this process)."""
    target = os.environ if environ is None else environ
    if target.get(POLICY_ENV, "").strip().lower() == "default":
        return thread_policy(target, 1, 0.0)
    policy = thread_policy(target, usable_cores(), other_load())
    for name, value in policy.environ.items():
        target[name] = value
    if environ is None:
        _CHOSEN.clear()
        _CHOSEN.update(policy.environ)
    return policy
