"""``torchmetrics.Metric`` classes: fixed-size summed states, synced over DDP.

The classes of every module of this package (each module's ``__all__``) are exported here; a metric's module is its
only registration. The registered names, tiers and groups are the catalog's (:mod:`nobg_metrics.catalog`).
"""

from __future__ import annotations

from typing import Any

from nobg_metrics._exports import export_modules

__all__: list[str] = export_modules(__name__, __path__, globals())


def __getattr__(name: str) -> Any:  # the exported names are module attributes; this only types the dynamic ones
    raise AttributeError(f"module 'nobg_metrics.metrics' has no attribute {name!r}")
