"""The base every nobg_metrics ``Metric`` shares: fixed-size summed states whose dtype never changes.

States are sufficient statistics only (DESIGN.md "State"): float64 sums and int64 counts, created in
``__init__``, ``dist_reduce_fx="sum"`` (one all-reduce, harmless on a rank with no data), persistent so a
checkpoint taken mid-epoch resumes exactly. ``.half()``, ``.to(dtype)`` and ``set_dtype`` move the
metric between devices but never change a state's dtype: a float16 sum of a million pixels would lose
the 1e-5 parity, and an int64 count cast to float stops being exact.

``load_state_dict`` accepts only states of the same shapes, dtypes and options (a ``ValueError`` names the
mismatch). Updates and ``forward`` are transactional: a rejected batch changes no state and no counter.

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
        """Every update is transactional and runs outside autocast.

        A rejected batch (any exception) leaves the states and the update counter exactly as they were, so a
        ``ValueError`` on one bad batch never loses, nor half-counts, the epoch. Under AMP, convolutions and
        matmuls would otherwise be computed in half precision and lose the reference parity (inputs are upcast
        by the contract)."""
        wrapped = super()._wrap_update(update)

        @functools.wraps(wrapped)
        def transactional_update(*args: Any, **kwargs: Any) -> None:
            snapshot = take_snapshot(self)
            try:
                with torch.autocast("cpu", enabled=False), torch.autocast("cuda", enabled=False):
                    return wrapped(*args, **kwargs)
            except BaseException:
                restore_snapshot(self, snapshot)
                raise

        return transactional_update

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """``update`` with the batch and return the batch's value; a rejected batch changes no state.

        torchmetrics' forward resets the metric to score the batch alone and merges the accumulated states back
        afterwards; an exception in between would leave only the failed batch's (empty) state. The states, the
        update counter and the sync flags are restored before the exception propagates.
        """
        snapshot = take_snapshot(self)
        try:
            return super().forward(*args, **kwargs)
        except BaseException:
            restore_snapshot(self, snapshot)
            raise

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
        self._fingerprint_options = dict(options)
        self._add_count(f"options_{digest}")

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str]) -> None:
        """Load states only from a metric of the same configuration, shapes and dtypes (else a ``ValueError``).

        torchmetrics assigns whatever tensors it finds: a 64-threshold curve into a 256-threshold metric, or a
        float32 sum, would be accepted and fail (or round) later.
        """
        name = type(self).__name__
        ours = sorted(key for key in self._defaults if key.startswith("options_"))
        theirs = sorted(key[len(prefix):] for key in state_dict
                        if key.startswith(prefix + "options_") and "." not in key[len(prefix):])
        if theirs and theirs != ours:
            options = getattr(self, "_fingerprint_options", {})
            raise ValueError(f"the state_dict was saved by a {name} with other options (fingerprint {theirs}) than "
                             f"this one ({ours}: {options}); build the metric with the options it was saved with")
        for key, default in self._defaults.items():
            if isinstance(default, list):  # list states (per-detection statistics): the subclass checks them
                continue
            full = prefix + key
            if full not in state_dict:
                if strict and self._persistent[key]:
                    raise ValueError(f"the state_dict has no `{full}` for this {name} (states: {sorted(self._defaults)})")
                continue
            value, current = state_dict[full], getattr(self, key)
            if not isinstance(value, Tensor) or value.shape != current.shape or value.dtype != current.dtype:
                got = f"{value.dtype} {tuple(value.shape)}" if isinstance(value, Tensor) else type(value).__name__
                raise ValueError(f"`{full}` of this {name} must be a {current.dtype} tensor of shape "
                                 f"{tuple(current.shape)}; the state_dict holds {got}")
            state_dict[full] = value.to(current.device)
        counts = [state_dict[prefix + key] for key in self._defaults if key.endswith("count") and prefix + key in state_dict]
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        if any(bool(count.sum() > 0) for count in counts):  # loaded images are data: no "compute before update"
            self._update_count = max(self._update_count, 1)

    def _add_to_states(self, totals: Mapping[str, Tensor]) -> None:
        """``state = state + total`` for each ``{state name: total}``: new tensors (the snapshots rely on it),
        written into ``__dict__`` as ``Module.__setattr__`` would put a plain tensor (it costs ~15 µs per state
        through ``Metric.__setattr__``; the confusion family holds dozens)."""
        states = self.__dict__
        for name, total in totals.items():
            states[name] = states[name] + total

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



_SNAPSHOT_ATTRIBUTES = ("_update_count", "_computed", "_forward_cache", "_to_sync", "_should_unsync", "_is_synced",
                        "compute_on_cpu", "_enable_grad", "_cache")
"""The bookkeeping torchmetrics' update and forward change besides the states."""


def take_snapshot(metric: Metric) -> dict[str, Any]:
    """The states and update bookkeeping of a metric, by reference.

    References suffice for tensors: every update of the library assigns new state tensors (``state = state +
    batch``), as torchmetrics' ``reset``, ``forward`` and ``merge_state`` do, and never writes into one. List states
    are copied (shallow): torchmetrics' ``reset`` — which ``forward`` calls — empties them in place.
    """
    snapshot = {name: list(value) if isinstance(value, list) else value
                for name, value in ((name, metric.__dict__[name]) for name in metric._defaults)}
    for name in _SNAPSHOT_ATTRIBUTES:
        if name in metric.__dict__:
            snapshot[name] = metric.__dict__[name]
    return snapshot


def restore_snapshot(metric: Metric, snapshot: dict[str, Any]) -> None:
    """Put a :func:`take_snapshot` back: every state and the update counter as they were."""
    metric.__dict__.update(snapshot)
