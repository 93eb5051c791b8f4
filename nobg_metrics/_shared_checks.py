"""Value checks shared by the members of one collection call: each input tensor is checked once.

The value checks of the input contract (NaN/inf and range, trimap levels; ``validate_args=True``) read the whole
input and, on a GPU, wait for it. In a collection every member validates the same batch again: the ``expensive``
tier scanned a float prediction fifteen times and a trimap three times per update (14-21 % and 9 % of an update
at 1024², measured for the command). Inside :func:`shared_checks` (entered by every
:class:`~nobg_metrics.collection.NobgCollection` update and forward) a check that passed is remembered for that
exact data — the same memory, offset, shape, strides, dtype and version counter (an in-place write bumps it) —
and not run again until the call ends. Outside a scope (a metric on its own) every check runs, as before.

Examples:
    >>> import torch
    >>> calls = []
    >>> pred = torch.rand(2, 4, 4)
    >>> with shared_checks():
    ...     for _ in range(3):
    ...         check_once("values", pred[:, None][:, 0], lambda: calls.append(1))
    >>> len(calls)
    1
"""

from __future__ import annotations

import contextlib
import contextvars
import weakref
from collections.abc import Callable, Iterator

from torch import Tensor

from nobg_metrics.ops.threads import one_thread_if_small

_Passed = dict[int, tuple[weakref.ref[Tensor], set[tuple[object, ...]]]]
"""Per root tensor (by id): a weak reference to it and the signatures of the checks passed on its data."""

_SCOPE: contextvars.ContextVar[_Passed | None] = contextvars.ContextVar("nobg_metrics_shared_checks", default=None)


def _root(tensor: Tensor) -> Tensor:
    while tensor._base is not None:
        tensor = tensor._base
    return tensor


@contextlib.contextmanager
def shared_checks() -> Iterator[None]:
    """A scope in which each passed check is remembered per data (nested scopes share the outer one)."""
    if _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def check_once(kind: str, tensor: Tensor, check: Callable[[], None]) -> None:
    """Run ``check()`` (it raises on bad data) unless it passed on this very data in the current scope (a small CPU
    tensor's scan on one intra-op thread: :func:`nobg_metrics.ops.threads.one_thread_if_small`)."""
    passed = _SCOPE.get()
    if passed is None:
        _scan(tensor, check)
        return
    root = _root(tensor)
    signature = (kind, tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype,
                 tensor._version)
    entry = passed.get(id(root))
    if entry is not None and entry[0]() is root and signature in entry[1]:
        return
    _scan(tensor, check)
    if entry is None or entry[0]() is not root:
        entry = passed[id(root)] = (weakref.ref(root), set())
    entry[1].add(signature)


def _scan(tensor: Tensor, check: Callable[[], None]) -> None:
    with one_thread_if_small(tensor.numel(), tensor.device):
        check()
