"""Keep freed CPU tensor memory for the next update instead of handing it back to the kernel (glibc).

torch's CPU tensors come from ``malloc``. With glibc's defaults, blocks above a dynamic threshold are
``mmap``-ed and unmapped on free, and free memory at the top of the heap is returned to the kernel; the
next allocation of the same size then faults its pages back in, each one zeroed by the kernel. A metric
update makes and frees tens of MB of temporaries per 1024² image, so by default most of its memory is
fresh pages: the SOD suite update at 1024² (MAE, S, E, F, weighted F; two threads) took ~16 000–27 000
page faults and 28–49 ms of system time per image, 80–100 ms in all, against 63–69 ms and < 100 faults
with :func:`tune_cpu_allocator` (measured 2026-11-30 on a loop of updates; docs/performance.md).

:func:`tune_cpu_allocator` sets ``M_MMAP_THRESHOLD`` to 32 MiB (the most glibc accepts; larger blocks are
still mapped per use) and ``M_TRIM_THRESHOLD`` to 1 GiB, so freed blocks are reused. Resident memory
then stays at the process's peak working set, which is fixed per image size (it does not grow with the
dataset). It changes the allocator of the whole process, so the library never calls it on import: the
``nobg-metrics`` command calls it at start, scripts and training jobs may call it once (numpy and the
reference tools gain as well). Elsewhere (macOS, Windows, musl) it does nothing and returns ``False``.
"""

from __future__ import annotations

import ctypes
import functools
import platform

M_TRIM_THRESHOLD = -1
"""glibc ``mallopt`` parameter: free memory kept at the top of the heap before trimming it."""

M_MMAP_THRESHOLD = -3
"""glibc ``mallopt`` parameter: blocks at least this large are mapped (and unmapped on free)."""

MMAP_THRESHOLD_BYTES = 32 << 20
"""32 MiB: glibc's largest accepted ``M_MMAP_THRESHOLD`` on 64-bit (``HEAP_MAX_SIZE / 2``)."""

TRIM_THRESHOLD_BYTES = 1 << 30
"""1 GiB of free heap kept for reuse before any is returned to the kernel."""


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (the only one with these ``mallopt`` parameters), else ``None``."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") else None


def tune_cpu_allocator(*, mmap_threshold: int = MMAP_THRESHOLD_BYTES, trim_threshold: int = TRIM_THRESHOLD_BYTES
                       ) -> bool:
    """Make glibc keep freed blocks for reuse: fewer page faults per update (see the module docstring).

    Args:
        mmap_threshold: bytes from which a block is mapped on its own (``M_MMAP_THRESHOLD``), at most 32 MiB.
        trim_threshold: bytes of free heap kept before trimming (``M_TRIM_THRESHOLD``), below 2 GiB.

    Returns:
        ``True`` when both settings took effect; ``False`` on a C library other than glibc.

    Raises:
        TypeError: a threshold that is not an int.
        ValueError: a threshold outside ``[0, 2^31)``.

    Examples:
        >>> import nobg_metrics as nm
        >>> nm.tune_cpu_allocator() in (True, False)
        True
    """
    for name, value in (("mmap_threshold", mmap_threshold), ("trim_threshold", trim_threshold)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"`{name}` must be an int (bytes), got {type(value).__name__}")
        if not 0 <= value < 2**31:
            raise ValueError(f"`{name}` must be in [0, 2**31) bytes, got {value}")
    libc = _glibc()
    if libc is None:
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(libc.mallopt(M_TRIM_THRESHOLD,
                                                                                       trim_threshold))
