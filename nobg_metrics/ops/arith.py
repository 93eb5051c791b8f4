"""Arithmetic that rounds the same on every device, and in every call.

CUDA divides by a host scalar as a multiplication by its reciprocal (``x / 255`` is ``x * (1/255)`` there),
which rounds differently from IEEE division in about a third of the uint8 levels — enough to move a pixel
across a threshold (``single(k)/255 >= 0.3``) and change a connectivity error. The references divide
(numpy, MATLAB); so do we, by a 0-dim tensor on the input's device, which takes the true-division kernel.

**The first vectorised transcendental of a CPU process can be wrong.** Measured with torch 2.13 (AVX512
build): in about one process in four, the *first* call of ``sqrt`` or ``exp`` on a tensor large enough
for the vector kernels returns values off by up to ~3e5 ulp (``sqrt``, float64) or ~3e7 ulp (``exp``,
float64; 1.7e3 ulp in float32) — every later call is within 1–2 ulp of numpy. One warm-up call of any
of them makes the first real call good for all of them (float32 and float64), so importing this module
runs one: :func:`warm_vector_math`. Without it, the weighted F-measure's ``B`` table (built at its first
use) and the first gradient error of a process differed run to run (7e-13 relative, caught by a
bit-identity test of the command).

Also here: :func:`any_along`, because torch's ``bool.any(dim)`` has no vectorised CPU kernel.
"""

from __future__ import annotations

import torch
from torch import Tensor


def divide(tensor: Tensor, divisor: float) -> Tensor:
    """``tensor / divisor`` rounded as IEEE division on CPU and CUDA alike (no host sync: a device fill).

    Args:
        tensor: any shape, floating dtype.
        divisor: a Python number.

    Returns:
        same shape and dtype.

    Examples:
        >>> divide(torch.tensor([77.0], dtype=torch.float64), 255).item() == 77.0 / 255
        True
    """
    return tensor / torch.full((), divisor, dtype=tensor.dtype, device=tensor.device)


def warm_vector_math() -> None:
    """One vectorised float64 ``sqrt`` on CPU: initialises torch's vector-math dispatch (see the module docstring).

    Examples:
        >>> warm_vector_math()
    """
    torch.sqrt(torch.ones(64, dtype=torch.float64))


warm_vector_math()


def any_along(mask: Tensor, dim: int | tuple[int, ...]) -> Tensor:
    """``mask.any(dim)`` as a ``uint8`` max: the same answer, ~50x faster on CPU (torch's bool ``any`` is
    not vectorised there: 0.6-2 ms against 0.02-0.03 ms for a 1024² mask).

    Args:
        mask: bool tensor, any strides.
        dim: the dimension(s) to reduce.

    Examples:
        >>> any_along(torch.tensor([[False, True], [False, False]]), 1)
        tensor([ True, False])
    """
    return mask.view(torch.uint8).amax(dim=dim) > 0
