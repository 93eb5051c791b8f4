"""Real multi-process DDP for the tests: gloo on CPU, file:// rendezvous, and a deadline.

``run_ddp(worker, world_size, *args)`` spawns ``world_size`` processes that each call
``worker(rank, world_size, *args)`` inside an initialised process group and returns their results.
A process that hangs (a collective nobody else joins) makes the call fail after ``timeout`` seconds
instead of hanging the test run.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torchmetrics import Metric

from tests.helpers.tester import Sample, as_lists


def _entry(rank: int, world_size: int, init_file: str, out_dir: str, worker: Callable, args: tuple) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=60))
    try:
        result = worker(rank, world_size, *args)
        with open(os.path.join(out_dir, f"{rank}.pkl"), "wb") as handle:
            pickle.dump(result, handle)
    finally:
        dist.destroy_process_group()


def run_ddp(worker: Callable, world_size: int = 2, *args, timeout: float = 120.0) -> list:
    """Run ``worker(rank, world_size, *args)`` on ``world_size`` gloo ranks; return results by rank."""
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "rendezvous")
        context = mp.start_processes(_entry, args=(world_size, init_file, tmp, worker, args), nprocs=world_size,
                                     join=False, start_method="spawn")
        deadline = time.monotonic() + timeout
        while not context.join(timeout=1.0):
            if time.monotonic() > deadline:
                for process in context.processes:
                    process.kill()
                raise TimeoutError(f"DDP run did not finish within {timeout} s")
        results = []
        for rank in range(world_size):
            with open(os.path.join(tmp, f"{rank}.pkl"), "rb") as handle:
                results.append(pickle.load(handle))
        return results


def _values(metric: Metric) -> dict[str, torch.Tensor]:
    """``compute()`` as a dict of CPU float64 tensors (a MetricCollection's dict, or one value)."""
    value = metric.compute()
    items = value.items() if isinstance(value, dict) else [("value", value)]
    return {name: tensor.detach().double().cpu() for name, tensor in items}


def _metric_worker(rank: int, world_size: int, make_metric: Callable[[], Metric],
                   shares: Sequence[Sequence[Sample]]) -> dict[str, torch.Tensor]:
    metric = make_metric()
    share = shares[rank]
    for start in range(0, len(share), 2):
        metric.update(*as_lists(share[start:start + 2]))
    return _values(metric)


def check_ddp(make_metric: Callable[[], Metric], samples: Sequence[Sample], atol: float = 1e-9) -> None:
    """Two gloo ranks with uneven shares, then with one rank empty, equal the single-process value.

    ``make_metric`` must be picklable (a class, or ``functools.partial`` of one); it may build a
    ``MetricCollection`` to check several metrics in one run.
    """
    single = make_metric()
    single.update(*as_lists(samples))
    expected = _values(single)
    cut = max(1, len(samples) // 3)
    for shares in ([samples[:cut], samples[cut:]], [[], list(samples)]):
        for rank, values in enumerate(run_ddp(_metric_worker, 2, make_metric, shares)):
            for name, value in values.items():
                diff = (value - expected[name]).abs().max().item()
                assert diff <= atol, (f"{name}, rank {rank}, shares {[len(s) for s in shares]}: "
                                      f"{value} != {expected[name]}")
