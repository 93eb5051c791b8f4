"""A package whose names are imported from its sub-packages on first use (PEP 562's module ``__getattr__``).

``nobg_metrics.functional`` and ``nobg_metrics.metrics`` (written by ``tools/exports.py``) list each domain package
and the names it gives; importing one domain's module then does not import every other domain (the command's
start-up: docs/performance.md "Start-up").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, domains: Mapping[str, Sequence[str]], names: Sequence[str]
                    ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: a listed name is imported from its domain package on first
    use and bound in ``package``'s namespace (later look-ups do not reach ``__getattr__``).

    Args:
        package: the lazy package's ``__name__``.
        domains: ``{domain package: the names it gives}``.
        names: the package's ``__all__``.

    Examples:
        >>> getattr_, dir_ = lazy_attributes("json", {"json.decoder": ("JSONDecodeError",)}, ["JSONDecodeError"])
        >>> getattr_("JSONDecodeError").__name__, "JSONDecodeError" in dir_()
        ('JSONDecodeError', True)
    """
    source = {name: domain for domain, listed in domains.items() for name in listed}

    def __getattr__(name: str) -> Any:
        domain = source.get(name)
        if domain is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(domain), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(importlib.import_module(package))) | set(names))

    return __getattr__, __dir__
