"""The base every nobg_metrics ``Metric`` shares: fixed-size summed states whose dtype never changes.

States are sufficient statistics only (DESIGN.md "State"): float64 sums and int64 counts, created in
``__init__``, ``dist_reduce_fx="sum"`` (one all-reduce, harmless on a rank with no data), persistent so a
checkpoint taken mid-epoch resumes exactly. ``.half()``, ``.to(dtype)`` and ``set_dtype`` move the
metric between devices but never change a state's dtype: a float16 sum of a million pixels would lose
the 1e-5 parity, and an int64 count cast to float stops being exact.

Options that change a metric's statistics are fingerprinted into the name of one zero-valued int64 state,
``options_<digest>``: torchmetrics' automatic compute groups merge two metrics only when their state names
agree, so ``IoU(threshold=0.3)`` and ``IoU(threshold=0.7)`` (or ``SMeasure(alpha=0.4)`` and the default) are
never merged into one wrong number, while metrics with equal statistics still share an update; and a
``state_dict`` saved under other options does not load (missing/unexpected key) instead of mixing statistics.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric


class NobgMetric(Metric):
    """Base class: state helpers, dtype-protected states, and a scalar ``plot``.

    Args:
        validate_args: run the input checks that force a device sync (NaN, inf, value range).
        kwargs: passed to :class:`torchmetrics.Metric` (``sync_on_compute``, ``dist_sync_fn``, ...).
    """

    full_state_update = False
    is_differentiable = False
    higher_is_better: bool | None = None
    plot_lower_bound: float | None = 0.0
    plot_upper_bound: float | None = 1.0

    def __init__(self, *, validate_args: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validate_args = validate_args

    def _wrap_update(self, update: Callable) -> Callable:
        """Run every update outside autocast: under AMP, convolutions and matmuls would otherwise be
        computed in half precision and lose the reference parity (inputs are upcast by the contract)."""
        wrapped = super()._wrap_update(update)

        @functools.wraps(wrapped)
        def full_precision_update(*args: Any, **kwargs: Any) -> None:
            with torch.autocast("cpu", enabled=False), torch.autocast("cuda", enabled=False):
                return wrapped(*args, **kwargs)

        return full_precision_update

    def _add_fingerprint(self, options: Mapping[str, object]) -> None:
        """The ``options_<digest>`` state naming the options that change the statistics (module notes).

        Example:
            >>> from nobg_metrics import MAE
            >>> def fingerprint(metric):
            ...     return [name for name in metric._defaults if name.startswith("options_")]
            >>> fingerprint(MAE()) == fingerprint(MAE(normalize=True)), fingerprint(MAE()) == fingerprint(MAE())
            (False, True)
        """
        digest = hashlib.sha1(repr(sorted(options.items())).encode()).hexdigest()[:8]
        self._add_count(f"options_{digest}")

    def _add_sum(self, name: str, shape: Sequence[int] = ()) -> None:
        """A float64 sum state of fixed ``shape``."""
        self.add_state(name, torch.zeros(tuple(shape), dtype=torch.float64), dist_reduce_fx="sum", persistent=True)

    def _add_count(self, name: str, shape: Sequence[int] = ()) -> None:
        """An int64 count state of fixed ``shape``."""
        self.add_state(name, torch.zeros(tuple(shape), dtype=torch.int64), dist_reduce_fx="sum", persistent=True)

    def _apply(self, fn: Callable, exclude_state: Sequence[str] = "") -> torch.nn.Module:
        """Move states with the module (device) but never change a state's dtype (not even briefly)."""

        def keep_dtype(tensor: Tensor) -> Tensor:
            moved = fn(tensor)
            return moved if moved.dtype == tensor.dtype else tensor.to(moved.device)

        return super()._apply(keep_dtype, exclude_state)

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:
        """Plot a value (or a sequence of values, e.g. one per epoch) of the metric.

        Args:
            val: the output of ``compute()``/``forward()`` or a list of them; computed when omitted.
            ax: a matplotlib axis to draw into.

        Returns:
            ``(figure, axis)`` (needs matplotlib, the ``plot`` extra).
        """
        return self._plot(val, ax)

