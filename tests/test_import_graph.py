"""The package's imports go down its layers (docs/design.md "Layers") and never in a circle: every ``import`` of
every module, at the top or inside a function, is parsed."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nobg_metrics"

LAYERS = (  # lowest first; a module may import from its own layer and below
    ("nobg_metrics.ops", "nobg_metrics._shared_checks", "nobg_metrics.allocator", "nobg_metrics._version"),
    ("nobg_metrics._inputs", "nobg_metrics._seg_batch", "nobg_metrics._matting_inputs"),
    ("nobg_metrics.functional",),
    ("nobg_metrics.metrics", "nobg_metrics.plotting"),
    ("nobg_metrics.catalog", "nobg_metrics.collection"),
    ("nobg_metrics.cli",),
    ("nobg_metrics", "nobg_metrics.__main__"),
)


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


def _layer(module: str) -> int:
    best, depth = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = index, len(prefix)
    assert best is not None, f"{module} is in no layer of docs/design.md"
    return best


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``module`` imports (a name imported from a package counts as the package, a submodule as
    the submodule)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in modules else base)
    return {name for name in found if name in modules and name != module}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {module: _imports(module, path, modules) for module, path in modules.items()}


def test_every_import_goes_down_the_layers():
    upward = [f"{module} -> {target}" for module, targets in _graph().items() for target in sorted(targets)
              if _layer(target) > _layer(module)]
    assert not upward, "imports back up the layers:\n" + "\n".join(sorted(upward))


def test_no_module_imports_itself_through_a_circle():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(circle) for circle in circles)
