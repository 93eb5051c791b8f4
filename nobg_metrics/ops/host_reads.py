"""Where a host read is free: the one switch between the CPU paths and the sync-free device paths.

On CPU, reading a value back (``int(t)``, ``nonzero``) costs nothing, so some ops size their work by the
data (the feature columns of a distance transform, the gt's box of the weighted F blur, ``bincount``).
On an accelerator the same read stalls the host until the device catches up, so those ops take a
fixed-size path instead. Both paths give the same numbers; tests force the device paths on CPU by
monkeypatching :func:`free_on`.

An op with both forms takes one switch, ``engine`` (:data:`Engine`): ``"data_sized"`` sizes its lists and loops by
the data (host reads), ``"fixed"`` sizes everything by the input's shape and runs fixed round counts (no host read),
``"auto"`` (the default) picks ``"data_sized"`` where host reads are free and ``"fixed"`` elsewhere
(:func:`resolve_engine`). Metrics and functionals with both forms take the same ``engine=``
(:func:`engine_option`; their older ``allow_host_sync=True`` is ``engine="data_sized"``, deprecated).
"""

from __future__ import annotations

import warnings
from typing import Literal, NamedTuple, get_args

import torch
from torch import Tensor

from nobg_metrics.ops.arith import any_along


def free_on(tensor: Tensor) -> bool:
    """True when ``tensor`` lives in host memory (data-dependent shapes cost no device sync).

    Examples:
        >>> import torch
        >>> free_on(torch.zeros(1))
        True
    """
    return tensor.device.type == "cpu"


Engine = Literal["auto", "data_sized", "fixed"]
"""How an op with a data-sized and a sync-free form runs: ``"data_sized"`` (lists sized by the data: host reads),
``"fixed"`` (sizes and round counts from the input's shape only: no host read), ``"auto"`` (``"data_sized"`` where
:func:`free_on`, else ``"fixed"``)."""


def resolve_engine(engine: Engine, tensor: Tensor) -> Literal["data_sized", "fixed"]:
    """The form an op runs for ``engine`` on the device of ``tensor``: ``"auto"`` resolved by :func:`free_on`.

    Raises:
        ValueError: ``engine`` is not one of :data:`Engine`.

    Examples:
        >>> resolve_engine("auto", torch.zeros(1)), resolve_engine("fixed", torch.zeros(1))
        ('data_sized', 'fixed')
    """
    if engine not in get_args(Engine):
        raise ValueError(f"`engine` must be one of {get_args(Engine)}, got {engine!r}")
    if engine == "auto":
        return "data_sized" if free_on(tensor) else "fixed"
    return engine


def engine_for(allow_host_sync: bool) -> Engine:
    """The switch an older ``allow_host_sync`` flag meant: ``True`` is ``"data_sized"`` on every device, ``False``
    is ``"auto"`` (data-sized where host reads are free, sync-free elsewhere).

    Examples:
        >>> engine_for(True), engine_for(False)
        ('data_sized', 'auto')
    """
    return "data_sized" if allow_host_sync else "auto"


def engine_option(engine: Engine, allow_host_sync: bool | None, owner: str) -> Engine:
    """The ``engine`` a metric or functional runs, from its ``engine=`` and the deprecated ``allow_host_sync=`` it
    still accepts (``True`` = ``"data_sized"``, ``False`` = ``"auto"``, with a ``DeprecationWarning``).

    Args:
        engine: ``"auto"``, ``"data_sized"`` or ``"fixed"`` (:data:`Engine`).
        allow_host_sync: the old flag, or ``None`` (not given).
        owner: the caller's name, for the messages.

    Raises:
        ValueError: ``engine`` is not one of :data:`Engine`, or both are given and disagree.
        TypeError: ``allow_host_sync`` is not a bool.

    Examples:
        >>> engine_option("fixed", None, "HCE")
        'fixed'
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     engine_option("auto", True, "HCE")
        'data_sized'
    """
    if engine not in get_args(Engine):
        raise ValueError(f"{owner}: `engine` must be one of {get_args(Engine)}, got {engine!r}")
    if allow_host_sync is None:
        return engine
    if not isinstance(allow_host_sync, bool):
        raise TypeError(f"{owner}: `allow_host_sync` must be a bool, got {type(allow_host_sync).__name__}")
    warnings.warn(f"{owner}: `allow_host_sync={allow_host_sync}` is deprecated; pass "
                  f"`engine={engine_for(allow_host_sync)!r}` (the same switch under the ops' name)",
                  DeprecationWarning, stacklevel=3)
    if engine != "auto" and engine != engine_for(allow_host_sync):
        raise ValueError(f"{owner}: `allow_host_sync={allow_host_sync}` contradicts `engine={engine!r}`; pass `engine` "
                         "only")
    return engine_for(allow_host_sync) if engine == "auto" else engine


class Window(NamedTuple):
    """A box of a (B, H, W) batch and the crop around it that a filter needs.

    Attributes:
        rows, cols: the crop (the box plus the margin, clamped to the image).
        inner_rows, inner_cols: the box, relative to the crop.
    """

    rows: slice
    cols: slice
    inner_rows: slice
    inner_cols: slice

    @property
    def inner(self) -> tuple[slice, slice, slice]:
        """The box as an index of the whole batch: ``tensor[window.inner]``."""
        return (slice(None), _shift(self.inner_rows, self.rows), _shift(self.inner_cols, self.cols))

    @property
    def crop(self) -> tuple[slice, slice, slice]:
        """The crop as an index of the whole batch."""
        return (slice(None), self.rows, self.cols)


def window(mask: Tensor, margin: int) -> Window:
    """The bounding box of ``mask``'s True pixels over the batch, with a crop of ``margin`` pixels around it.

    A filter of half-size ``margin`` evaluated on the crop is exact on the box: where the crop stops short
    of ``margin`` it stops at the image border, whose padding the filter applies itself. Only where host
    reads are free (CPU); elsewhere the whole image (no sync). An all-False mask gives an empty box.

    Args:
        mask: :math:`(B, H, W)` bool.
        margin: pixels kept around the box.

    Returns:
        :class:`Window`.

    Examples:
        >>> mask = torch.zeros(1, 8, 8, dtype=torch.bool); mask[0, 3, 4] = True
        >>> window(mask, 2)  # doctest: +NORMALIZE_WHITESPACE
        Window(rows=slice(1, 6, None), cols=slice(2, 7, None),
               inner_rows=slice(2, 3, None), inner_cols=slice(2, 3, None))
    """
    _, height, width = mask.shape
    if not free_on(mask):
        return Window(slice(0, height), slice(0, width), slice(0, height), slice(0, width))
    any_row, any_col = any_along(mask, (0, 2)), any_along(mask, (0, 1))
    if not bool(any_row.any()):
        return Window(slice(0, 0), slice(0, 0), slice(0, 0), slice(0, 0))
    r0, r1 = _first_last(any_row)
    c0, c1 = _first_last(any_col)
    rows = slice(max(0, r0 - margin), min(height, r1 + 1 + margin))
    cols = slice(max(0, c0 - margin), min(width, c1 + 1 + margin))
    return Window(rows, cols, slice(r0 - rows.start, r1 + 1 - rows.start), slice(c0 - cols.start, c1 + 1 - cols.start))


def _first_last(flags: Tensor) -> tuple[int, int]:
    """First and last index of a True in a 1-D bool tensor (host reads)."""
    where = torch.nonzero(flags).flatten()
    return int(where[0]), int(where[-1])


def _shift(inner: slice, outer: slice) -> slice:
    """``inner`` (relative to ``outer``) as a slice of the whole image."""
    return slice(inner.start + outer.start, inner.stop + outer.start)


def raise_if_nan(value: Tensor, message: str) -> Tensor:
    """Raise ``RuntimeError(message)`` if ``value`` holds a NaN (one host read: for ``compute()``), else return it.

    The sync-free paths with a fixed budget (HCE, CCm) mark an image whose budget was short with NaN instead of
    reading the device; their ``compute()`` turns that into this error.

    Examples:
        >>> raise_if_nan(torch.tensor(1.5), "short budget")
        tensor(1.5000)
    """
    if bool(torch.isnan(value).any()):
        raise RuntimeError(message)
    return value


def raise_if_inf(value: Tensor, message: str) -> Tensor:
    """Raise ``RuntimeError(message)`` if ``value`` holds an infinity (one host read: for ``compute()``), else return
    it: the marker of a sync-free path whose values are finite otherwise, kept apart from a NaN (no image scored, or
    a NaN input let through by ``validate_args=False``).

    Examples:
        >>> raise_if_inf(torch.tensor(float("nan")), "short budget")
        tensor(nan)
    """
    if bool(torch.isinf(value).any()):
        raise RuntimeError(message)
    return value
