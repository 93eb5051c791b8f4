"""Where a host read is free: the one switch between the CPU paths and the sync-free device paths.

On CPU, reading a value back (``int(t)``, ``nonzero``) costs nothing, so some ops size their work by the
data (the feature columns of a distance transform, the gt's box of the weighted F blur, ``bincount``).
On an accelerator the same read stalls the host until the device catches up, so those ops take a
fixed-size path instead. Both paths give the same numbers; tests force the device paths on CPU by
monkeypatching :func:`free_on`.
"""

from __future__ import annotations

from torch import Tensor


def free_on(tensor: Tensor) -> bool:
    """True when ``tensor`` lives in host memory (data-dependent shapes cost no device sync).

    Example:
        >>> import torch
        >>> free_on(torch.zeros(1))
        True
    """
    return tensor.device.type == "cpu"
