"""The metric set of a run: which names a tier, list or protocol gives, and their collection with the options
of the protocol (``normalize``, ``empty_gt``, ``validate_args``, ``engine``), BiRefNet's own columns included.
"""

from __future__ import annotations

from typing import Any

import torch
from torchmetrics import MetricCollection

from nobg_metrics.cli.core.errors import ConfigError
from nobg_metrics.cli.eval.protocols import protocol_metrics
from nobg_metrics.collection import METRIC_NAMES, TIERS, accepted_options, make_collection

__all__ = ["VALIDATE_ARGS", "build_collection", "resolve_metrics"]

VALIDATE_ARGS = True
"""The metrics' value checks (NaN/inf, float ranges, trimap levels): on, once per input tensor (module notes)."""


def resolve_metrics(tier: str, names: list[str] | None, protocol: str = "pysodmetrics",
                    task: str = "sod") -> tuple[list[str], list[str]]:
    """``(names to score, skipped names)``: a tier's names, an explicit list, or a protocol's fixed set.

    The matting and BiRefNet protocols have fixed sets (:func:`~nobg_metrics.cli.eval.protocols.protocol_metrics`);
    ``names`` then picks among them (in the protocol's order). Every name is a catalog entry, so nothing is skipped
    here; the second list stays for the callers that report skipped names.
    """
    fixed = protocol_metrics(protocol, task)
    if fixed is not None:
        if names is not None:
            outside = [n for n in names if n not in fixed]
            if outside:
                raise ConfigError(f"--metrics {outside} are not part of --protocol {protocol}; "
                                  f"choose among {list(fixed)}")
        return [n for n in fixed if names is None or n in names], []
    if names is not None:
        unknown = [n for n in names if n not in METRIC_NAMES]
        if unknown:
            raise ConfigError(f"unknown metrics {unknown}; choose among {list(METRIC_NAMES)}")
    wanted = list(dict.fromkeys(names)) if names is not None else list(TIERS[tier])
    if not wanted:
        raise ConfigError("no metric to compute")
    return wanted, []


def build_collection(names: list[str], protocol: str, device: torch.device, sync: bool = True) -> MetricCollection:
    """The protocol's collection: pysodmetrics (and birefnet) = ``normalize=True, empty_gt="reference"``; raw, dim,
    p3m = defaults. BiRefNet's own columns (``birefnet_mse``, ``birefnet_hce``, ``birefnet_mba``) are catalog entries
    whose fixed arguments (no stretch, the DIS rule, the reference's empty band) take precedence.

    ``engine="data_sized"``: the command has no training step for the host to run ahead of, so on a GPU the
    members with two forms (connectivity and gradient errors, HCE, CCm) size their work by the data — far less device
    work (no effect on CPU, where ``"auto"`` is already ``"data_sized"``).
    """
    stretch = protocol in ("pysodmetrics", "birefnet")
    options: dict[str, Any] = {"normalize": stretch, "empty_gt": "reference" if stretch else "agreement",
               "validate_args": VALIDATE_ARGS, "engine": "data_sized"}
    accepted = set().union(*(accepted_options(name) for name in names))
    options = {k: v for k, v in options.items() if k in accepted}
    # the scratch collection of one image never syncs
    return make_collection(metrics=names, sync_on_compute=sync, **options).to(device)
