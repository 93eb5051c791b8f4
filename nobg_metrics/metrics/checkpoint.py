"""What a metric's ``state_dict`` carries, and what its ``load_state_dict`` accepts.

States are not persistent by default, as in torchmetrics: a model's ``state_dict`` — a Lightning checkpoint — holds
no metric state, so it loads into a module with the metric or without it. ``metric.persistent(True)`` makes every
state persistent (the ``options_<digest>`` fingerprint and a metric's extra state, such as the DAVIS sequence names,
with them): a checkpoint taken mid-epoch then resumes exactly.

A load is checked where torchmetrics assigns whatever it finds (a 64-threshold curve into a 256-threshold metric, or a
float32 sum, would be accepted and fail or round later):

- a ``state_dict`` saved under other options (another fingerprint) raises a ``ValueError``;
- each state must have the metric's dtype and shape (a list state: records of its layout), else a ``ValueError``;
- a ``state_dict`` that brings some of the states but not all raises under ``strict``; one that brings none loads
  nothing, and under ``strict`` reports the states this metric keeps persistent as missing keys (as ``nn.Module``
  does for a persistent buffer);
- states that hold data count as an update (``compute()`` right after does not warn); states that hold none leave the
  metric as a fresh one (``compute()`` warns, as torchmetrics does before any update).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from nobg_metrics.metrics import torchmetrics_api as api

Layout = tuple[torch.dtype, tuple[int, ...]]
"""A list state's records: their dtype and the shape after the first dimension."""

EXTRA_STATE = "_extra_state"
"""The key ``nn.Module`` saves a module's ``get_extra_state()`` under (after the module's prefix)."""


def keeps_states(metric: Metric) -> bool:
    """Whether any state of ``metric`` is persistent (then its extra state is saved with its states)."""
    return any(api.persistent_states(metric).values())


def checked_states(metric: Metric, layouts: Mapping[str, Layout], state_dict: dict[str, Any], prefix: str,
                   strict: bool, missing_keys: list[str]) -> bool | None:
    """Check the states ``state_dict`` brings for ``metric`` (module notes) and move them to its device, in place;
    ``layouts`` are the list states' record layouts.

    Returns:
        None when it brings no state; else whether the states hold data (a value other than the reset one).
    """
    name = type(metric).__name__
    ours = sorted(key for key in metric.metric_state if key.startswith("options_"))
    theirs = sorted(key[len(prefix):] for key in state_dict
                    if key.startswith(prefix + "options_") and "." not in key[len(prefix):])
    if theirs and theirs != ours:
        options = getattr(metric, "_fingerprint_options", {})
        raise ValueError(f"the state_dict was saved by a {name} with other options (fingerprint {theirs}) than "
                         f"this one ({ours}: {options}); build the metric with the options it was saved with")
    brought = [key for key in metric.metric_state if prefix + key in state_dict]
    if not brought:
        if strict:
            missing_keys.extend(prefix + key for key, kept in api.persistent_states(metric).items() if kept)
        return None
    absent = sorted(set(metric.metric_state) - set(brought))
    if absent and strict:
        raise ValueError(f"the state_dict has no `{prefix + absent[0]}` for this {name} "
                         f"(states: {sorted(metric.metric_state)})")
    holds_data = False
    for key in brought:
        full, current = prefix + key, getattr(metric, key)
        if isinstance(current, list):
            state_dict[full] = _checked_records(metric, layouts.get(key), full, state_dict[full])
            holds_data = holds_data or any(item.numel() for item in state_dict[full])
            continue
        value = state_dict[full]
        if not isinstance(value, Tensor) or value.shape != current.shape or value.dtype != current.dtype:
            got = f"{value.dtype} {tuple(value.shape)}" if isinstance(value, Tensor) else type(value).__name__
            raise ValueError(f"`{full}` of this {name} must be a {current.dtype} tensor of shape "
                             f"{tuple(current.shape)}; the state_dict holds {got}")
        state_dict[full] = value.to(current.device)
        default = api.default_state(metric, key)
        holds_data = holds_data or (not key.startswith("options_") and isinstance(default, Tensor)
                                    and not torch.equal(state_dict[full], default.to(current.device)))
    return holds_data


def _checked_records(metric: Metric, layout: Layout | None, full: str, value: Any) -> list[Tensor]:
    """The records of list state ``full``, each a tensor of its ``layout`` (None: a list state added without
    ``_add_list``, any tensors), on the metric's device."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, Tensor) or (layout is not None and (
                item.dtype != layout[0] or tuple(item.shape[1:]) != layout[1] or item.ndim != len(layout[1]) + 1)):
            got = f"{item.dtype} {tuple(item.shape)}" if isinstance(item, Tensor) else type(item).__name__
            expected = "a list of tensors" if layout is None else (
                f"a list of {layout[0]} records of shape (n, {', '.join(map(str, layout[1]))})")
            raise ValueError(f"`{full}` of this {type(metric).__name__} must be {expected}; the state_dict holds {got}")
    return [item.to(metric.device) for item in items]
