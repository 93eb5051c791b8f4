"""The command's start-up: a module a run never uses is not imported on its way (docs/cli.md "Start-up").

``import torchmetrics`` runs ``import scipy.signal`` whenever SciPy is installed (its package ``__init__`` and
``functional/audio``: only to alias ``scipy.signal.hamming`` for SRMRpy's audio metric). Loading ``scipy.signal``
takes 0.6–1.5 s (it pulls in ``scipy.stats``), a third of the command's imports, for audio metrics the command
never builds. While the command imports its modules, :func:`deferred_imports` answers ``import scipy.signal`` with a
stand-in that has the ``hamming`` torchmetrics checks for; any other use of the stand-in loads the real module. On
leaving, the stand-in is dropped, so a later ``import scipy.signal`` anywhere loads the real module as usual.

Used by the console script only (:mod:`nobg_metrics.cli.entry`); importing :mod:`nobg_metrics.cli.eval.main` or the
library directly imports torchmetrics as it is. Importable without torch.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

DEFERRED: dict[str, dict[str, str]] = {"scipy.signal": {"hamming": "windows.hamming"}}
"""Modules the command's imports need not load: ``name -> {attribute asked for on import: where it really is}``."""


_ACTIVE: list[_Finder] = []
"""The finders of the :func:`deferred_imports` blocks now open."""


def _real(name: str) -> types.ModuleType:
    """The real module ``name``, imported now (its stand-in, if still registered, replaced by it; no longer
    deferred by an open block)."""
    for finder in _ACTIVE:
        finder.deferred.pop(name, None)
    module = sys.modules.get(name)
    if isinstance(module, _StandIn):
        del sys.modules[name]
    real = importlib.import_module(name)
    parent, _, child = name.rpartition(".")
    if parent and isinstance(getattr(sys.modules.get(parent), child, None), _StandIn):
        setattr(sys.modules[parent], child, real)
    return real


def _forward(name: str, path: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        target: Any = _real(name)
        for part in path.split("."):
            target = getattr(target, part)
        return target(*args, **kwargs)

    return call


class _StandIn(types.ModuleType):
    """A module object standing in for a deferred one: the listed attributes forward to the real module's; any
    other attribute loads the real module."""

    def __init__(self, name: str, attributes: dict[str, str]) -> None:
        super().__init__(name)
        for attribute, path in attributes.items():
            setattr(self, attribute, _forward(name, path))

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):  # the import system's probes (__path__, __file__, ...): a plain module's answer
            raise AttributeError(attribute)
        return getattr(_real(self.__name__), attribute)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, deferred: dict[str, dict[str, str]]) -> None:
        self.deferred = deferred

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(name, self) if name in self.deferred else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StandIn(spec.name, self.deferred[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        return None


@contextlib.contextmanager
def deferred_imports(deferred: dict[str, dict[str, str]] | None = None) -> Iterator[None]:
    """Within the block, ``import NAME`` of a module of ``deferred`` (default :data:`DEFERRED`) not imported yet gives
    a stand-in (module notes); on leaving, the stand-ins are dropped from ``sys.modules`` and their parents.

    Examples:
        >>> import sys
        >>> with deferred_imports({"nobg_deferred_example": {"answer": "real.attribute"}}):
        ...     import nobg_deferred_example
        ...     during = type(sys.modules["nobg_deferred_example"]).__name__, hasattr(nobg_deferred_example, "answer")
        >>> during, "nobg_deferred_example" in sys.modules
        (('_StandIn', True), False)
    """
    wanted = {name: attributes for name, attributes in (DEFERRED if deferred is None else deferred).items()
              if name not in sys.modules}
    finder = _Finder(wanted)
    sys.meta_path.insert(0, finder)
    _ACTIVE.append(finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        _ACTIVE.remove(finder)
        for name in wanted:
            if isinstance(sys.modules.get(name), _StandIn):
                del sys.modules[name]
            parent, _, child = name.rpartition(".")
            module = sys.modules.get(parent) if parent else None
            if module is not None and isinstance(module.__dict__.get(child), _StandIn):
                delattr(module, child)
