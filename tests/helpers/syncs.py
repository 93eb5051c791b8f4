"""A CPU stand-in for ``torch.cuda.set_sync_debug_mode("error")``: record the ops that would make the host
wait for a CUDA device.

CI has no GPU, so this dispatch mode runs an update on CPU and lists every op that, on CUDA, reads a
value back to the host (``.item()``, ``bool(t)``, ``nonzero``, boolean-mask indexing, ``unique``,
``repeat_interleave`` without ``output_size``, ``bincount``) or copies host data to the device (``torch.tensor(list)``,
a Python-list index: ``lift_fresh``). It cannot see ``.to("cuda")`` of a CPU tensor (a no-op on CPU):
tests/test_cuda.py is the real check when a GPU is there.

Ops that size their work by the data read the host only where that is free (``ops.host_reads.free_on``:
CPU); the tests force the device paths by patching that switch, so what is recorded is what CUDA would run.
"""

from __future__ import annotations

import collections
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_ALWAYS = {"_local_scalar_dense", "nonzero", "masked_select", "unique", "_unique", "_unique2", "unique_dim",
           "unique_consecutive", "lift_fresh", "is_nonzero", "equal", "masked_scatter_", "nonzero_static"}


class HostSyncRecorder(TorchDispatchMode):
    """``with HostSyncRecorder() as recorder: ...`` then ``recorder.hits``: ``{(op, where): count}``."""

    def __init__(self) -> None:
        super().__init__()
        self.hits: collections.Counter[tuple[str, str]] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name.split("::")[1]
        syncs = name in _ALWAYS
        if name in ("index", "index_put", "index_put_", "_index_put_impl_"):
            syncs = any(t is not None and t.dtype == torch.bool for t in args[1])
        elif name == "bincount":
            syncs = True
        elif name == "repeat_interleave":
            syncs = kwargs.get("output_size") is None
        if syncs:
            frames = [f for f in traceback.extract_stack() if "nobg_metrics" in f.filename]
            where = " <- ".join(f"{f.filename.split('nobg_metrics/')[-1]}:{f.lineno}" for f in frames[::-1][:3])
            self.hits[(name, where)] += 1
        return func(*args, **kwargs)
