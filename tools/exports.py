"""Write the explicit export lists of ``nobg_metrics.functional`` and ``nobg_metrics.metrics`` (and of each domain
package in them) from their modules' ``__all__``, so that IDEs, mypy and the docs see every name statically.

Run from the repository root: ``python tools/exports.py`` rewrites the ``__init__.py`` files below their docstring;
``python tools/exports.py --check`` exits 1 when one differs from what the modules give
(``tests/library/test_exports.py`` checks the same). The modules are read as text (their literal ``__all__``), not
imported. A module whose name starts with ``_`` exports nothing.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nobg_metrics/functional", "nobg_metrics/metrics")
MARK = "# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand."


def module_all(path: Path) -> list[str]:
    """The literal ``__all__`` of a module (empty where it has none)."""
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__" and node.value is not None:  # type: ignore[attr-defined]
            return list(ast.literal_eval(node.value))  # type: ignore[attr-defined]
    return []


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def exports(package: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` a package re-exports: its public modules', then its sub-packages' lists, sorted by name."""
    found: list[tuple[str, list[str]]] = []
    for child in sorted(package.iterdir()):
        if child.name.startswith(("_", ".")):
            continue
        if child.is_dir() and (child / "__init__.py").exists():
            names = [name for _, listed in exports(child) for name in listed]
            if names:
                found.append((_dotted(child), sorted(names)))
        elif child.suffix == ".py":
            names = module_all(child)
            if names:
                found.append((_dotted(child), names))
    return found


def _all_order(name: str) -> tuple[int, str]:
    """ruff's ``__all__`` order (RUF022): constants, then classes, then the rest, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2), name


def _import_order(name: str) -> tuple[int, str]:
    """isort's order of the names of one import (ruff's I001): constants, classes, the rest, ignoring case."""
    return _all_order(name)[0], name.lower()


def _imports(found: list[tuple[str, list[str]]], indent: str = "") -> list[str]:
    """``from module import (names)`` lines, as isort lays them out."""
    lines = []
    for module, listed in found:
        if len(listed) == 1:
            lines.append(f"{indent}from {module} import {listed[0]}")
        else:
            lines.append(f"{indent}from {module} import (")
            lines.extend(f"{indent}    {name}," for name in sorted(listed, key=_import_order))
            lines.append(f"{indent})")
    return lines


def _wrapped(names: list[str], indent: str) -> list[str]:
    """``"a", "b", ...`` over lines of at most 120 characters."""
    lines, line = [], indent
    for name in names:
        item = f'"{name}",'
        if len(line) + len(item) + 1 > 120 and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += item + " "
    return [*lines, line.rstrip()]


LAZY_TAIL = """
if not TYPE_CHECKING:  # static tools see the imports above, and no catch-all attribute
    __getattr__, __dir__ = lazy_attributes(__name__, _DOMAINS, __all__)
"""
"""The lazy packages' attribute look-up (:func:`render` with ``lazy``)."""


def render(package: Path, lazy: bool | None = None) -> str:
    """The package's ``__init__.py``: its docstring kept, the imports and ``__all__`` written.

    ``lazy`` (default: for the top packages, ``PACKAGES``): each domain package is imported on the first use of one
    of its names (a module-level ``__getattr__``; the imports stay under ``TYPE_CHECKING`` for static tools), so that
    importing one domain's module (``nobg_metrics.functional.instance.statistics``) does not import every other
    domain (the command's start-up: docs/performance.md "Start-up"). A domain package is written with plain imports:
    some of its names are also its modules' names, which only an import of the name rebinds."""
    init = package / "__init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text())) if init.exists() else None
    head = f'"""{docstring}\n"""' if docstring else f'"""{_dotted(package)}."""'
    found = exports(package)
    names = sorted((name for _, listed in found for name in listed), key=_all_order)
    if not (package.relative_to(ROOT).as_posix() in PACKAGES if lazy is None else lazy):
        lines = [head, "", "from __future__ import annotations", "", MARK, *_imports(found), "", "__all__ = ["]
        lines.extend(f'    "{name}",' for name in names)
        return "\n".join([*lines, "]", ""])
    lines = [head, "", "from __future__ import annotations", "", "from typing import TYPE_CHECKING", "",
             "from nobg_metrics._lazy import lazy_attributes", "", MARK,
             "if TYPE_CHECKING:  # the names as static tools see them; at run time, __getattr__ below imports them",
             *_imports(found, "    "), "", "__all__ = ["]
    lines.extend(f'    "{name}",' for name in names)
    lines += ["]", "", "_DOMAINS: dict[str, tuple[str, ...]] = {"]
    for module, listed in found:
        lines += [f'    "{module}": (', *_wrapped(sorted(listed, key=_all_order), " " * 8), "    ),"]
    lines += ["}", '"""Each domain package and the names it gives: imported on the first use of one of them."""', ""]
    return "\n".join(lines) + LAZY_TAIL


TOP = "nobg_metrics/__init__.py"
TOP_START = "# The names below are written by tools/exports.py from nobg_metrics.metrics' list; do not edit by hand."
TOP_END = "# (end of the names written by tools/exports.py)"
TOP_NAMES = ("__version__", "functional", "make_collection", "tune_cpu_allocator")
"""The lazy top-level namespace's names besides the metric classes (``nobg_metrics._load`` binds them)."""


DOC_TOP = ('"""The package\'s names: what :func:`_load` binds on first use (``tests/test_package_lists.py`` '
           'checks the two agree;\na class added with ``catalog.register`` joins the loaded list too)."""')


def render_top(text: str) -> str:
    """``nobg_metrics/__init__.py`` with its written part renewed: ``__all__`` (the names above and every class of
    ``nobg_metrics.metrics``) and the same names imported under ``TYPE_CHECKING`` for static tools."""
    classes = [name for _, listed in exports(ROOT / "nobg_metrics/metrics") for name in listed]
    lines = [TOP_START, "__all__ = ["]
    lines.extend(f'    "{name}",' for name in sorted([*TOP_NAMES, *classes], key=_all_order))
    lines += ["]", DOC_TOP, "",
              "if TYPE_CHECKING:  # the lazy names as static tools (mypy, IDEs) should see them: the objects _load() "
              "binds",
              "    from nobg_metrics import functional as functional",
              "    from nobg_metrics.allocator import tune_cpu_allocator as tune_cpu_allocator",
              "    from nobg_metrics.collection import make_collection as make_collection",
              "    from nobg_metrics.metrics import (  # the classes (metrics.__all__, written by tools/exports.py)"]
    lines.extend(f"        {name}," for name in sorted(classes, key=_import_order))
    lines += ["    )", TOP_END]
    head, rest = text.split(TOP_START, 1)
    return head + "\n".join(lines) + rest.split(TOP_END, 1)[1]


MODULE_PACKAGES = ("nobg_metrics/ops", "nobg_metrics/io", "nobg_metrics/cli")
"""Packages (with their sub-packages) whose ``__all__`` lists their public modules (the command's root excepted: its
``__all__`` is its entry point)."""


def module_lists() -> list[Path]:
    """Every package whose ``__all__`` is its list of public modules."""
    found = []
    for top in MODULE_PACKAGES:
        found += sorted(init.parent for init in (ROOT / top).rglob("__init__.py"))
    return [package for package in found if package != ROOT / "nobg_metrics/cli"]


def render_modules(package: Path) -> str:
    """The package's ``__init__.py`` with its ``__all__`` renewed: its public modules and sub-packages, sorted."""
    modules = sorted(child.stem if child.is_file() else child.name for child in package.iterdir()
                     if not child.name.startswith(("_", ".")) and (
                         child.suffix == ".py" or (child / "__init__.py").is_file()))
    text = (package / "__init__.py").read_text()
    start = text.index("__all__ = [")
    end = text.index("]", start) + 1
    lines, line = [], "   "
    for name in modules:
        if len(line) + len(name) + 4 > 120:
            lines.append(line)
            line = "   "
        line += f' "{name}",'
    body = "__all__ = [" + ", ".join(f'"{name}"' for name in modules) + "]"
    if len(body) > 120:
        body = "__all__ = [\n" + "\n".join([*lines, line]) + "\n]"
    return text[:start] + body + text[end:]


def packages() -> list[Path]:
    """Every package whose ``__init__`` this tool writes: the two top packages and their domain packages."""
    found = []
    for top in PACKAGES:
        found.append(ROOT / top)
        found.extend(sorted(p.parent for p in (ROOT / top).glob("*/__init__.py") if not p.parent.name.startswith("_")))
    return found


def main(argv: list[str]) -> int:
    stale = []
    for package in packages():
        text, init = render(package), package / "__init__.py"
        if not init.exists() or init.read_text() != text:
            stale.append(str(init.relative_to(ROOT)))
            if "--check" not in argv:
                init.write_text(text)
    for package in module_lists():
        text, init = render_modules(package), package / "__init__.py"
        if init.read_text() != text:
            stale.append(str(init.relative_to(ROOT)))
            if "--check" not in argv:
                init.write_text(text)
    top = ROOT / TOP
    text = render_top(top.read_text())
    if top.read_text() != text:
        stale.append(TOP)
        if "--check" not in argv:
            top.write_text(text)
    if stale and "--check" in argv:
        print("stale export lists (run python tools/exports.py):", ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
