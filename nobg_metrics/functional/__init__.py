"""Functional metrics: one call on a batch = the class's ``compute()`` after one ``update()``.

The public functions of every module of this package (each module's ``__all__``) are exported here, so a new
metric's module is its only registration: ``nobg_metrics.functional.mae``, ``nobg_metrics.functional.s_measure``,
... (docs/metric_names.md lists them with their classes).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

__all__: list[str] = []


def _export_modules() -> None:
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for name in getattr(module, "__all__", ()):
            globals()[name] = getattr(module, name)
            __all__.append(name)
    __all__.sort()


_export_modules()


def __getattr__(name: str) -> Any:  # the exported names are module attributes; this only types the dynamic ones
    raise AttributeError(f"module 'nobg_metrics.functional' has no attribute {name!r}")
