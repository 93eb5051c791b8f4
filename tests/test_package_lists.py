"""Every package of the library states its names in a literal ``__all__`` (static tools, IDEs and the docs read it):
the metric packages list the names their modules export (``tools/exports.py``, checked in
``tests/library/test_exports.py``), every other package lists its public modules."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nobg_metrics"
NAME_PACKAGES = ("functional", "metrics", "catalog")
"""Packages whose ``__all__`` holds names, not modules: the metric packages (their modules' ``__all__``, written by
``tools/exports.py``) and the catalog's registry."""


def _literal_all(init: Path) -> list[str] | None:
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _packages() -> list[Path]:
    return sorted(init.parent for init in PACKAGE.rglob("__init__.py"))


def test_every_package_has_a_literal_all():
    missing = [str(package.relative_to(PACKAGE.parent)) for package in _packages()
               if _literal_all(package / "__init__.py") is None]
    assert not missing, f"packages without a literal __all__: {missing}"


def test_a_package_of_modules_lists_exactly_its_public_modules():
    wrong = {}
    for package in _packages():
        relative = package.relative_to(PACKAGE).parts
        if not relative or relative == ("cli",) or relative[0] in NAME_PACKAGES:
            continue  # the lazy top-level namespace, the command's entry point, the packages of names
        modules = sorted(child.stem if child.is_file() else child.name for child in package.iterdir()
                         if not child.name.startswith(("_", ".")) and (
                             child.suffix == ".py" or (child / "__init__.py").is_file()))
        if sorted(_literal_all(package / "__init__.py") or []) != modules:
            wrong[str(package.relative_to(PACKAGE.parent))] = modules
    assert not wrong, f"__all__ should list these modules: {wrong}"


def test_the_top_level_list_is_what_the_lazy_namespace_binds():
    """``nobg_metrics.__all__`` is written out (static tools read it) and equals what the first use loads."""
    import nobg_metrics

    written = _literal_all(PACKAGE / "__init__.py")
    assert sorted(written) == sorted(nobg_metrics._load()["__all__"])
