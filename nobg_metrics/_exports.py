"""The packages whose modules are their own registration (``functional``, ``metrics``): every public module's
``__all__`` exported into the package's namespace."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from typing import Any


def export_modules(package: str, path: Iterable[str], namespace: dict[str, Any]) -> list[str]:
    """Import every module of ``package`` (found on ``path``) whose name does not start with ``_``, put the names of
    its ``__all__`` into ``namespace``, and return all of them sorted (the package's ``__all__``)."""
    exported: list[str] = []
    for module_info in sorted(pkgutil.iter_modules(path), key=lambda info: info.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package}.{module_info.name}")
        for name in getattr(module, "__all__", ()):
            namespace[name] = getattr(module, name)
            exported.append(name)
    return sorted(exported)
