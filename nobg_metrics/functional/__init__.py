"""Functional metrics: one call on a batch = the class's ``compute()`` after one ``update()``.

The public functions of every module of this package (each module's ``__all__``) are exported here, so a new
metric's module is its only registration: ``nobg_metrics.functional.mae``, ``nobg_metrics.functional.s_measure``,
... (docs/metric_names.md lists them with their classes).
"""

from __future__ import annotations

from typing import Any

from nobg_metrics._exports import export_modules

__all__: list[str] = export_modules(__name__, __path__, globals())


def __getattr__(name: str) -> Any:  # the exported names are module attributes; this only types the dynamic ones
    raise AttributeError(f"module 'nobg_metrics.functional' has no attribute {name!r}")
