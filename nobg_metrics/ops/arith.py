"""Arithmetic that rounds the same on every device.

CUDA divides by a host scalar as a multiplication by its reciprocal (``x / 255`` is ``x * (1/255)`` there),
which rounds differently from IEEE division in about a third of the uint8 levels — enough to move a pixel
across a threshold (``single(k)/255 >= 0.3``) and change a connectivity error. The references divide
(numpy, MATLAB); so do we, by a 0-dim tensor on the input's device, which takes the true-division kernel.
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

    Example:
        >>> divide(torch.tensor([77.0], dtype=torch.float64), 255).item() == 77.0 / 255
        True
    """
    return tensor / torch.full((), divisor, dtype=tensor.dtype, device=tensor.device)
