"""The metric set of a run: which names a tier, list or protocol gives, and their collection with the options
of the protocol (``normalize``, ``empty_gt``, ``validate_args``, ``allow_host_sync``), BiRefNet's own columns included.
"""

from __future__ import annotations

import functools

import torch
from torchmetrics import MetricCollection

from nobg_metrics.cli.config import ConfigError
from nobg_metrics.cli.protocols import protocol_metrics
from nobg_metrics.collection import (
    METRIC_NAMES,
    TIERS,
    accepted_options,
    make_collection,
    metric_class,
)

__all__ = ["VALIDATE_ARGS", "build_collection", "resolve_metrics"]

VALIDATE_ARGS = True
"""The metrics' value checks (NaN/inf, float ranges, trimap levels): on, once per input tensor (module notes)."""


def resolve_metrics(tier: str, names: list[str] | None, protocol: str = "pysodmetrics",
                    task: str = "sod") -> tuple[list[str], list[str]]:
    """``(available names, skipped names)``: a tier skips metrics this build lacks; an explicit list may not.

    The matting and BiRefNet protocols have fixed sets (:func:`~nobg_metrics.cli.protocols.protocol_metrics`);
    ``names`` then picks among them (in the protocol's order). BiRefNet's HCE is skipped (with a note) when this
    build has no HCE class.
    """
    fixed = protocol_metrics(protocol, task)
    if fixed is not None:
        if names is not None:
            outside = [n for n in names if n not in fixed]
            if outside:
                raise ConfigError(f"--metrics {outside} are not part of --protocol {protocol}; choose among {list(fixed)}")
        wanted = [n for n in fixed if names is None or n in names]
        available = [n for n in wanted if n not in _EXTRAS or _EXTRAS[n]() is not None]
        return available, [n for n in wanted if n not in available]
    if names is not None:
        unknown = [n for n in names if n not in METRIC_NAMES]
        if unknown:
            raise ConfigError(f"unknown metrics {unknown}; choose among {list(METRIC_NAMES)}")
    wanted = list(dict.fromkeys(names)) if names is not None else list(TIERS[tier])
    available = [n for n in wanted if _available(n)]
    skipped = [n for n in wanted if n not in available]
    if names is not None and skipped:
        raise ConfigError(f"metrics {skipped} are not available in this nobg_metrics build")
    if not available:
        raise ConfigError("no metric to compute")
    return available, skipped


def build_collection(names: list[str], protocol: str, device: torch.device, sync: bool = True) -> MetricCollection:
    """The protocol's collection: pysodmetrics (and birefnet) = ``normalize=True, empty_gt="reference"``; raw, dim,
    p3m = defaults; BiRefNet's own columns (:data:`_EXTRAS`) are added as they are built there.

    ``allow_host_sync``: the command has no training step for the host to run ahead of, so on a GPU the
    connectivity error labels with lists sized by the data — far less device work (no effect on CPU).
    """
    stretch = protocol in ("pysodmetrics", "birefnet")
    registered = [n for n in names if n not in _EXTRAS]
    options = {"normalize": stretch, "empty_gt": "reference" if stretch else "agreement",
               "validate_args": VALIDATE_ARGS, "allow_host_sync": True}
    accepted = set().union(*(accepted_options(name) for name in registered))
    options = {k: v for k, v in options.items() if k in accepted}
    # the scratch collection of one image never syncs
    collection = make_collection(metrics=registered, sync_on_compute=sync, **options)
    extras = {n: _EXTRAS[n]()(sync_on_compute=sync) for n in names if n in _EXTRAS}
    if extras:
        collection.add_metrics(extras)  # each its own compute group
    return collection.to(device)


def _birefnet_hce() -> type | None:
    """BiRefNet's HCE column: the DIS tool's rule (``pred_u8 > 128``, skeleton of ``gt > 128``), or ``None`` in a
    build without the HCE class."""
    try:
        from nobg_metrics.metrics.hce import HCE
    except ImportError:
        return None
    return functools.partial(HCE, protocol="dis", validate_args=VALIDATE_ARGS)


def _birefnet_mba() -> type:
    """BiRefNet's mBA column: raw bytes ``> 128`` (no stretch); an empty band is NaN, as there."""
    from nobg_metrics.metrics.mba import MBA

    return functools.partial(MBA, empty_gt="reference", validate_args=VALIDATE_ARGS)


def _birefnet_mse() -> type:
    from nobg_metrics.cli.birefnet import BinarisedGtMSE

    return functools.partial(BinarisedGtMSE, validate_args=VALIDATE_ARGS)


_EXTRAS = {"birefnet_hce": _birefnet_hce, "birefnet_mba": _birefnet_mba, "birefnet_mse": _birefnet_mse}
"""Metrics of the BiRefNet protocol built with options of their own (not collection names)."""


def _available(name: str) -> bool:
    try:
        metric_class(name)
    except AttributeError:
        return False
    return True
