"""The base every nobg_metrics ``Metric`` shares: one way to accumulate, fixed dtypes, checked checkpoints.

A metric writes two methods and declares its states:

- ``_statistics(*inputs)``: the batch's sufficient statistics, ``{state name: tensor}`` — a call of its functional
  module's ``_x_update``, so the maths lives once, in :mod:`nobg_metrics.functional`;
- ``_value(states)``: the dataset value from a mapping of states — its functional module's ``_x_compute``;
- states in ``__init__``: float64 sums (:meth:`NobgMetric._add_sum`) and int64 counts (:meth:`NobgMetric._add_count`),
  ``dist_reduce_fx="sum"``, or, where the statistics grow with the detections (instance AP), lists concatenated
  over ranks (:meth:`NobgMetric._add_list`).

Everything else is here: ``update`` is ``_accumulate(_statistics(...))``, ``compute`` is ``_value(metric_state)``,
``forward`` scores the batch from the same statistics, and :meth:`NobgMetric._accumulate` is the only place a state
changes — after every statistic of the batch exists, in one step — so a rejected batch changes no state, through
``update``, ``forward`` or a collection (:mod:`nobg_metrics.collection`). States are created in ``__init__``,
never change dtype (``.half()``, ``.to(dtype)``, ``set_dtype`` move a metric between devices only: a float16 sum of
a million pixels would lose the 1e-12 parity) and load only from a metric of the same options (``options_<digest>``,
below). Statistics are computed outside autocast: under AMP, convolutions and matmuls would otherwise run in half
precision.

States are not persistent, as torchmetrics' are not: a model's ``state_dict`` (a Lightning checkpoint) carries no
metric state, and loads into a module with or without the metric. ``metric.persistent(True)`` (or a collection's)
puts every state in the ``state_dict`` — the fingerprint and a metric's extra state included — so a checkpoint taken
mid-epoch resumes exactly; it survives ``clone()``, pickling and ``.to()``. A load that brings states that hold data
counts as an update: ``compute()`` right after it does not warn (a load that brings none, or only empty ones, does).

Options that change a metric's statistics are fingerprinted into the name of one zero-valued int64 state,
``options_<digest>``: torchmetrics' automatic compute groups merge two
metrics only when their state names agree, so ``IoU(threshold=0.3)`` and ``IoU(threshold=0.7)`` are never merged into
one wrong number, and a ``state_dict`` saved under other options does not load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities.distributed import gather_all_tensors
from torchmetrics.utilities.exceptions import TorchMetricsUserError

from nobg_metrics._inputs import InputMaps, check_flag
from nobg_metrics.metrics import checkpoint
from nobg_metrics.metrics import torchmetrics_api as api

Statistics = Mapping[str, Tensor]
"""A batch's sufficient statistics: ``{state name: tensor}`` (for a list state, the batch's entry)."""

_Metric = TypeVar("_Metric", bound="NobgMetric")
"""A metric type: what ``to()`` returns (the class it is called on)."""


class NobgMetric(Metric):
    """Base class: one accumulation step, dtype-protected states (not persistent unless ``persistent(True)``),
    checked ``load_state_dict``, a scalar ``plot``.

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
        check_flag("validate_args", validate_args)
        self.validate_args = validate_args
        self._list_layouts: dict[str, tuple[torch.dtype, tuple[int, ...]]] = {}
        api.transactional_update(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickling re-wraps ``update`` (torchmetrics drops the wrappers from the pickle): transactional again."""
        super().__setstate__(state)
        api.transactional_update(self)

    # -------------------------------------------------------------------------------- what a metric writes
    def _statistics(self, *inputs: Any, **named: Any) -> Statistics:  # pragma: no cover - abstract
        """The batch's sufficient statistics, ``{state name: tensor}``; raises on bad input before any state moves."""
        raise NotImplementedError

    def _value(self, states: Mapping[str, Any]) -> Any:  # pragma: no cover - abstract
        """The value of accumulated ``states`` (``metric_state``, or a batch's own in ``forward``)."""
        raise NotImplementedError

    # -------------------------------------------------------------------------------- the one way to accumulate
    def update(self, pred: InputMaps, gt: InputMaps) -> None:
        """Add a batch: ``pred``, ``gt`` of shape :math:`(B, 1, H, W)`, :math:`(B, H, W)`, :math:`(H, W)` or lists."""
        self._accumulate(self._batch_statistics(pred, gt))

    def compute(self) -> Any:
        """The dataset value of the accumulated (and, under DDP, synced) states."""
        return self._value(self.metric_state)

    def _batch_statistics(self, *inputs: Any, **named: Any) -> Statistics:
        """``_statistics`` outside autocast (the reference parity needs full-precision convolutions and matmuls)."""
        with torch.autocast("cpu", enabled=False), torch.autocast("cuda", enabled=False):
            return self._statistics(*inputs, **named)

    def _accumulate(self, statistics: Statistics) -> None:
        """Add statistics to the states: ``state + statistic`` for sums; for lists, the batch's record appended (a list
        of records, as ``merge_state`` brings, extends them).

        Every new value is formed before the first is assigned, and each is a new object (no in-place write): an
        error leaves every state as it was, and references to the old states stay valid."""
        updated: dict[str, Tensor | list[Tensor]] = {}
        for name, statistic in statistics.items():
            state = getattr(self, name)
            if isinstance(state, list):
                records = list(statistic) if isinstance(statistic, (list, tuple)) else [statistic]
                updated[name] = [*state, *(record.cpu() if self.compute_on_cpu else record for record in records)]
                continue
            total = state + statistic
            if total.shape != state.shape or total.dtype != state.dtype:
                raise RuntimeError(f"{type(self).__name__}: statistic `{name}` of shape {tuple(statistic.shape)} "
                                   f"and dtype {statistic.dtype} does not fit its state "
                                   f"({tuple(state.shape)}, {state.dtype})")
            updated[name] = total
        previous = {name: getattr(self, name) for name in updated}
        try:
            for name, value in updated.items():
                setattr(self, name, value)
        except BaseException:  # an interrupt between two assignments
            for name, value in previous.items():
                setattr(self, name, value)
            raise

    def forward(self, *inputs: Any, **named: Any) -> Any:
        """``update`` with the batch and return the batch's own value, from one statistics pass.

        A rejected batch changes no state and no counter. With ``dist_sync_on_step=True`` the batch's states are
        synced before its value is taken, as torchmetrics does."""
        if api.is_synced(self):
            raise TorchMetricsUserError("The Metric shouldn't be synced when performing ``forward``. "
                                        "HINT: Did you forget to call ``unsync`` ?.")
        statistics = self._batch_statistics(*inputs, **named)
        value = self._batch_value(statistics)
        self._accumulate(statistics)
        api.count_update(self)
        api.set_forward_cache(self, value)
        return value

    def _batch_value(self, statistics: Statistics) -> Any:
        """The value of one batch's statistics alone (synced over ranks under ``dist_sync_on_step``)."""
        states: dict[str, Any] = {}
        for name in self.metric_state:
            default = api.default_state(self, name)
            if name not in statistics:
                states[name] = default
            elif isinstance(default, list):
                states[name] = [statistics[name]]
            else:
                states[name] = default.to(statistics[name].device) + statistics[name]
        if self.dist_sync_on_step and self.distributed_available_fn():
            states = _synced(self, states)
        return _squeezed(self._value(states))

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """Add another metric's states (or a ``metric_state`` dict) to this one's, as one more batch: sums add, the
        incoming records follow this metric's. Merging an updated metric makes this one updated too."""
        if isinstance(incoming_state, Metric):
            if not isinstance(incoming_state, type(self)):
                raise ValueError(f"Expected incoming state to be an instance of {type(self).__name__} but got "
                                 f"{type(incoming_state)}")
            incoming, updates = incoming_state.metric_state, incoming_state.update_count
        elif isinstance(incoming_state, dict):
            incoming, updates = incoming_state, 1
        else:
            raise ValueError(f"Expected incoming state to be a dict or an instance of Metric but got "
                             f"{type(incoming_state)}")
        missing = sorted(set(self.metric_state) - set(incoming))
        if missing:
            raise ValueError(f"the incoming state of {type(self).__name__} lacks the states {missing}")
        self._accumulate(self._incoming_statistics({name: incoming[name] for name in self.metric_state}))
        api.count_update(self, updates)

    def _incoming_statistics(self, incoming: dict[str, Any]) -> dict[str, Any]:
        """Another metric's states as statistics to add to this one's (a metric whose records carry arrival numbers
        renumbers them here)."""
        return incoming

    def sync(self, dist_sync_fn: Callable | None = None, process_group: Any = None, should_sync: bool = True,
             distributed_available: Callable | None = None) -> None:
        """torchmetrics' ``sync``; a rank without records first holds an empty record of each list state's layout, so
        that it gathers with the ranks that have data (torchmetrics would send a 1-D float32 empty tensor)."""
        available = distributed_available or self.distributed_available_fn
        if should_sync and self._list_layouts and available():
            empty = {name: torch.zeros((0, *shape), dtype=dtype, device=self.device)
                     for name, (dtype, shape) in self._list_layouts.items() if not self.metric_state[name]}
            if empty:
                self._accumulate(empty)
        super().sync(dist_sync_fn=dist_sync_fn, process_group=process_group, should_sync=should_sync,
                     distributed_available=distributed_available)

    # -------------------------------------------------------------------------------- states
    def _add_sum(self, name: str, shape: Sequence[int] = ()) -> None:
        """A float64 sum state of fixed ``shape``."""
        self.add_state(name, torch.zeros(tuple(shape), dtype=torch.float64), dist_reduce_fx="sum")

    def _add_count(self, name: str, shape: Sequence[int] = ()) -> None:
        """An int64 count state of fixed ``shape``."""
        self.add_state(name, torch.zeros(tuple(shape), dtype=torch.int64), dist_reduce_fx="sum")

    def _add_list(self, name: str, dtype: torch.dtype, shape: Sequence[int] = ()) -> None:
        """A list state of records :math:`(n, *shape)` of ``dtype``, one per batch, concatenated over batches and
        ranks (``dist_reduce_fx="cat"``); only for statistics that grow with the data itself (per-detection or
        per-frame records), never with pixels."""
        self._list_layouts[name] = (dtype, tuple(shape))
        self.add_state(name, [], dist_reduce_fx="cat")

    def _add_fingerprint(self, options: Mapping[str, object]) -> None:
        """The ``options_<digest>`` state naming the options that change the statistics (module notes).

        Examples:
            >>> from nobg_metrics import MAE
            >>> def fingerprint(metric):
            ...     return [name for name in metric.metric_state if name.startswith("options_")]
            >>> fingerprint(MAE()) == fingerprint(MAE(normalize=True)), fingerprint(MAE()) == fingerprint(MAE())
            (False, True)
        """
        digest = hashlib.sha1(repr(sorted(options.items())).encode()).hexdigest()[:8]
        self._fingerprint_options = dict(options)
        self._add_count(f"options_{digest}")

    # -------------------------------------------------------------------------------- dtypes and checkpoints
    def to(self: _Metric, *args: Any, **kwargs: Any) -> _Metric:
        """``nn.Module.to`` for the device only: a dtype argument is ignored (states keep float64 / int64)."""
        kwargs.pop("dtype", None)
        kept: list[Any] = [arg.device if isinstance(arg, Tensor) else arg for arg in args
                           if not isinstance(arg, torch.dtype)]
        return super().to(*kept, **kwargs)

    def set_dtype(self, dst_type: str | torch.dtype) -> NobgMetric:
        """States never change dtype (module notes): a no-op, as ``half()``, ``float()`` and ``double()`` are."""
        return self

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        """``nn.Module``'s, with a metric's extra state saved only with its states (when they are persistent)."""
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if not checkpoint.keeps_states(self):
            destination.pop(prefix + checkpoint.EXTRA_STATE, None)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str]) -> None:
        """Load states only from a metric of the same options, shapes and dtypes (else a ``ValueError``); states
        that hold data count as an update (:mod:`nobg_metrics.metrics.checkpoint`)."""
        holds_data = checkpoint.checked_states(self, self._list_layouts, state_dict, prefix, strict, missing_keys)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        if holds_data is None:  # nothing loaded: an extra state saved only with the states is not missing either
            if not checkpoint.keeps_states(self) and prefix + checkpoint.EXTRA_STATE in missing_keys:
                missing_keys.remove(prefix + checkpoint.EXTRA_STATE)
            return
        api.forget_computed(self)
        api.set_update_count(self, max(self.update_count, 1) if holds_data else 0)

    def plot(self, val: Tensor | Sequence[Tensor] | None = None, ax: Any = None) -> Any:
        """Plot a value (or a sequence of values, e.g. one per epoch) of the metric.

        Args:
            val: the output of ``compute()``/``forward()`` or a list of them; computed when omitted.
            ax: a matplotlib axis to draw into.

        Returns:
            ``(figure, axis)`` (needs matplotlib, the ``plot`` extra).
        """
        return api.plot_value(self, val, ax)


def _synced(metric: NobgMetric, states: dict[str, Any]) -> dict[str, Any]:
    """A batch's states reduced over the ranks as ``sync()`` reduces the metric's own (``dist_sync_on_step``)."""
    gather = metric.dist_sync_fn or gather_all_tensors
    synced: dict[str, Any] = {}
    for name, value in states.items():
        if isinstance(value, list):
            local = torch.cat(value) if value else torch.zeros(0)
            synced[name] = [torch.cat(gather(local, group=metric.process_group))]
        else:
            synced[name] = torch.stack(gather(value, group=metric.process_group)).sum(dim=0)
    return synced


def _squeezed(value: Any) -> Any:
    """One-element tensors as scalars, in a dict too (what ``compute()`` returns through torchmetrics)."""
    if isinstance(value, dict):
        return {key: _squeezed(item) for key, item in value.items()}
    return value.squeeze() if isinstance(value, Tensor) and value.numel() == 1 else value
