"""Multi-process runs under ``torchrun``: process-group setup, sharding and gathering.

``torchrun --nproc-per-node N -m nobg_metrics eval ...`` sets ``WORLD_SIZE``/``RANK``/``LOCAL_RANK``;
the process group is then initialised from those variables (``env://``): NCCL when scoring on CUDA,
gloo on CPU. Every rank scores the images ``rank, rank + N, ...`` of each job; the metric states are
summed by the metrics' own sync in ``compute()``; per-image records and problems are gathered as
Python objects, and only rank 0 writes outputs.
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist


def world() -> tuple[int, int]:
    """``(rank, world_size)`` of an initialised process group, ``(0, 1)`` without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def pick_device(choice: str) -> torch.device:
    """``auto`` -> CUDA when available; under torchrun each rank takes ``cuda:LOCAL_RANK``."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("--device cuda: no CUDA device is available")
        index = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(index)
        return torch.device("cuda", index)
    return torch.device("cpu")


def init_from_env(device: torch.device) -> bool:
    """Initialise the process group when launched by torchrun (``WORLD_SIZE`` > 1); True if we did."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or not dist.is_available() or dist.is_initialized():
        return False
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method="env://")
    return True


def gather_objects(value: Any) -> list[Any]:
    """Every rank's ``value``, in rank order (a one-element list without a process group)."""
    _rank, size = world()
    if size == 1:
        return [value]
    out: list[Any] = [None] * size
    dist.all_gather_object(out, value)
    return out


def shard(items: list, rank: int, size: int) -> list:
    """This rank's share: items ``rank, rank + size, ...``."""
    return items[rank::size]
