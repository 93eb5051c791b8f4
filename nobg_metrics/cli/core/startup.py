"""The command's start-up: a module a run never uses is not imported on its way (docs/cli.md "Start-up").

``import torchmetrics`` runs ``import scipy.signal`` whenever SciPy is installed (its package ``__init__`` and
``functional/audio``: only to alias ``scipy.signal.hamming`` for SRMRpy's audio metric). Loading ``scipy.signal``
takes 0.6–1.5 s (it pulls in ``scipy.stats``), a third of the command's imports, for audio metrics the command
never builds. While the command imports its modules, :func:`deferred_imports` answers ``import scipy.signal`` with a
stand-in that has the ``hamming`` torchmetrics checks for; any other use of the stand-in loads the real module. On
leaving, the stand-in is dropped, so a later ``import scipy.signal`` anywhere loads the real module as usual.

``torchmetrics.utilities.plot`` (imported by ``torchmetrics.metric``) imports ``matplotlib.pyplot`` whenever
matplotlib is installed: 0.3 s, for torchmetrics' own ``Metric.plot``, which the command never calls (its figures
are drawn with matplotlib directly, imported when one is drawn). While the block is open, that module finds
torchmetrics' flag ``_MATPLOTLIB_AVAILABLE`` false (:data:`HIDDEN`) and defines its stand-ins instead; so, in the
command's process only, torchmetrics' ``plot`` methods raise torchmetrics' own "expects matplotlib" error. Nothing
is hidden where matplotlib is already imported (no time to save), and the flag is restored on leaving.

The first import of torch in a process makes some 300,000 objects, and the cyclic garbage collector's full passes
over them during the command's imports cost ~0.1 s each (measured: docs/performance.md "Start-up"):
:func:`collector_paused` holds the collector during the import of a command's run and then freezes what the imports
made (``gc.freeze``: modules, classes and functions, kept for the process's life, are no longer scanned), only where
torch is not imported yet (a fresh process).

Used by the console script only (:mod:`nobg_metrics.cli.entry`); importing :mod:`nobg_metrics.cli.eval.main` or the
library directly imports torchmetrics as it is. Importable without torch.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

DEFERRED: dict[str, dict[str, str]] = {"scipy.signal": {"hamming": "windows.hamming"}}
"""Modules the command's imports need not load: ``name -> {attribute asked for on import: where it really is}``."""


HIDDEN: dict[str, tuple[str, str, str]] = {
    "torchmetrics.utilities.plot": ("matplotlib", "torchmetrics.utilities.imports", "_MATPLOTLIB_AVAILABLE"),
}
"""Modules that, imported inside the block, see an optional dependency as absent: ``name -> (the dependency, the
module of the flag that says it is installed, the flag)``."""


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
    def __init__(self, deferred: dict[str, dict[str, str]], hidden: dict[str, tuple[str, str, str]]) -> None:
        self.deferred = deferred
        self.hidden = hidden
        self.flags: list[tuple[types.ModuleType, str, Any]] = []
        """The flags set false: ``(module, flag, value before)``, restored on leaving."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name in self.hidden:  # the module itself is found as usual: its dependency's flag reads false meanwhile
            dependency, where, flag = self.hidden.pop(name)
            if dependency not in sys.modules:
                module = importlib.import_module(where)
                self.flags.append((module, flag, getattr(module, flag)))
                setattr(module, flag, False)
            return None
        return importlib.machinery.ModuleSpec(name, self) if name in self.deferred else None

    def restore(self) -> None:
        """The hidden dependencies' flags as they were."""
        for module, flag, value in reversed(self.flags):
            setattr(module, flag, value)
        self.flags.clear()

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _StandIn(spec.name, self.deferred[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        return None


@contextlib.contextmanager
def deferred_imports(deferred: dict[str, dict[str, str]] | None = None,
                     hidden: dict[str, tuple[str, str, str]] | None = None) -> Iterator[None]:
    """Within the block, ``import NAME`` of a module of ``deferred`` (default :data:`DEFERRED`) not imported yet gives
    a stand-in, and a module of ``hidden`` (default :data:`HIDDEN`) not imported yet sees its dependency's flag false
    (module notes); on leaving, the stand-ins are dropped from ``sys.modules`` and their parents, and the flags
    restored.

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
    hiding = {name: entry for name, entry in (HIDDEN if hidden is None else hidden).items() if name not in sys.modules}
    finder = _Finder(wanted, hiding)
    sys.meta_path.insert(0, finder)
    _ACTIVE.append(finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        _ACTIVE.remove(finder)
        finder.restore()
        for name in wanted:
            if isinstance(sys.modules.get(name), _StandIn):
                del sys.modules[name]
            parent, _, child = name.rpartition(".")
            module = sys.modules.get(parent) if parent else None
            if module is not None and isinstance(module.__dict__.get(child), _StandIn):
                delattr(module, child)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The block's imports without the cyclic garbage collector, what they made frozen on leaving (``gc.freeze``), the
    collector running again; only where torch is not imported yet and the collector runs (elsewhere: a plain block).

    Examples:
        >>> import gc
        >>> with collector_paused():  # torch imported already (the doctests): nothing changes
        ...     import torch
        >>> gc.isenabled()
        True
    """
    if "torch" in sys.modules or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
