"""Every use of torchmetrics' private names, in one module (``torchmetrics>=1.6,<2``: 1.6 added ``merge_state``).

The library builds on torchmetrics' public API — ``add_state``, ``update``, ``compute``, ``forward``,
``metric_state``, ``update_count``, ``merge_state``, ``reset``, ``sync``, ``persistent`` — and on ``nn.Module``.
Five pieces of torchmetrics' bookkeeping have no public setter (or getter), and a metric that computes a batch's
statistics before it touches any state (:meth:`~nobg_metrics.metrics.base.NobgMetric._accumulate`) or checks its
checkpoints (:mod:`nobg_metrics.metrics.checkpoint`) needs them:

- ``_update_count``: torchmetrics' update wrapper adds one *before* calling ``update``, so a rejected batch would
  still count; :func:`transactional_update` takes it back, and the collection's shared update counts each member
  with :func:`count_update` (what the wrapper does on entry);
- ``_computed``: the cached ``compute()`` value, cleared by every update and every load of states;
- ``_forward_cache``: the batch value of the last ``forward`` (Lightning logs it for ``on_step``);
- ``_defaults``: a state's reset value (a batch's own value in ``forward`` starts from it; a loaded state equal to it
  holds no data);
- ``_persistent``: which states ``state_dict`` saves (``persistent()`` sets it and has no getter): a metric's extra
  state is saved only with its states, and a load that brings none reports the persistent ones missing;

and ``_is_synced`` (``forward`` refuses synced states, as torchmetrics' does) and ``_plot`` (the scalar plot helper
torchmetrics' own metrics call from ``plot``).

``tests/library/test_torchmetrics_api.py`` checks each behaviour this module relies on, so a torchmetrics release that
changes one fails loudly there; CI runs the suite against the oldest and the newest supported torchmetrics.
"""

from __future__ import annotations

import functools
from typing import Any

from torch import Tensor
from torchmetrics import Metric


def count_update(metric: Metric, updates: int = 1) -> None:
    """What torchmetrics' update wrapper does before an update: ``updates`` more counted, the cached value dropped."""
    metric._computed = None
    metric._update_count += updates


def set_update_count(metric: Metric, count: int) -> None:
    """Set the update counter (a loaded checkpoint that holds data counts as updated)."""
    metric._update_count = count


def forget_computed(metric: Metric) -> None:
    """Drop the cached ``compute()`` value (states were replaced, by a load)."""
    metric._computed = None


def persistent_states(metric: Metric) -> dict[str, bool]:
    """Whether each state is saved in the ``state_dict`` (``add_state(persistent=...)``, ``metric.persistent()``)."""
    return dict(metric._persistent)


def set_forward_cache(metric: Metric, value: Any) -> None:
    """Record ``forward``'s batch value where torchmetrics (and Lightning's ``on_step`` logging) read it."""
    metric._forward_cache = value


def default_state(metric: Metric, name: str) -> Tensor | list:
    """The reset value of state ``name`` (as ``add_state`` registered it, moved with the metric)."""
    return metric._defaults[name]


def transactional_update(metric: Metric) -> None:
    """Make ``metric.update`` leave the update counter and the cached value as they were when it raises.

    torchmetrics wraps ``update`` in ``Metric.__init__`` (``self.update = self._wrap_update(self.update)``) and
    counts the update before the call. Our updates change no state before their last step, so restoring the two
    counters makes a rejected batch a no-op."""
    counted = metric.update

    @functools.wraps(counted)
    def update(*args: Any, **kwargs: Any) -> None:
        count, computed = metric._update_count, metric._computed
        try:
            counted(*args, **kwargs)
        except BaseException:
            metric._update_count, metric._computed = count, computed
            raise

    metric.update = update  # type: ignore[method-assign]  # an instance attribute, as torchmetrics sets it


def is_synced(metric: Metric) -> bool:
    """Whether the metric's states are the synced (gathered) ones, between ``sync()`` and ``unsync()``."""
    return bool(metric._is_synced)


def plot_value(metric: Metric, value: Any, ax: Any) -> Any:
    """torchmetrics' scalar plot of a value (or of ``compute()`` when ``value`` is None), the helper its own
    metrics' ``plot`` methods call."""
    return metric._plot(value, ax)
