"""The package's imports go down its layers (docs/design.md "Layers") and never in a circle: every ``import`` of
every module, at the top or inside a function, is parsed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nobg_metrics"

LAYERS = (  # lowest first; a module may import from its own layer and below
    ("nobg_metrics.ops", "nobg_metrics._shared_checks", "nobg_metrics.allocator", "nobg_metrics._version",
     "nobg_metrics._lazy"),
    ("nobg_metrics.io", "nobg_metrics._inputs", "nobg_metrics._seg_batch", "nobg_metrics._matting_inputs",
     "nobg_metrics._panoptic_batch"),
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


def _resolve(node: ast.Import | ast.ImportFrom, module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules an import statement of ``module`` names (a name imported from a package counts as the package, a
    submodule as the submodule; relative imports resolved)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([base] if base else []))
    return {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names}


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``module`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= _resolve(node, module, path, modules)
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


# ---------------------------------------------------------------------------------------------- the command's start
COMMAND_START = ("nobg_metrics.cli.entry", "nobg_metrics.cli.parser")
"""What the console script loads before it knows what it is asked: ``--help``, ``--version``, usage errors, ``plot``
and ``merge``'s argument checks end there (docs/cli.md "Start-up")."""
HEAVY = ("torch", "torchmetrics", "numpy", "PIL", "matplotlib", "scipy", "cv2", "yaml", "openpyxl", "tqdm")
"""Libraries the command's start never loads (seconds for torch; optional extras for the last four)."""
SCORING_SIDE = ("nobg_metrics.cli.eval.main", "nobg_metrics.cli.eval.runner", "nobg_metrics.cli.outputs.run_outputs")
"""The command's modules that score or write a run: loaded after the arguments, within the start-up guard."""


def _runs_at_import(node: ast.AST) -> bool:
    """Whether a statement's body runs when its module is imported (not a function's, not ``if TYPE_CHECKING:``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return False
    return not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))


def _load_time_imports(module: str, path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """``(package modules, other top-level packages)`` that importing ``module`` imports itself: its module-level
    statements, class bodies included, not what its functions import (a package module comes with its packages)."""
    inside, outside = set(), set()
    stack = list(ast.parse(path.read_text()).body)
    while stack:
        node = stack.pop()
        if not _runs_at_import(node):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _resolve(node, module, path, modules):
                parts = name.split(".")
                if parts[0] == "nobg_metrics":
                    inside |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & set(modules)
                else:
                    outside.add(parts[0])
        stack.extend(ast.iter_child_nodes(node))
    return inside, outside


def _start_up() -> tuple[set[str], dict[str, set[str]]]:
    """The package modules the command's start loads (the closure of :data:`COMMAND_START`), and for each the other
    packages it imports when loaded."""
    modules = _modules()
    seen, outside, todo = set(), {}, list(COMMAND_START)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        inside, outside[module] = _load_time_imports(module, modules[module], modules)
        todo += sorted(inside - seen)
    return seen, outside


def test_the_command_starts_on_the_standard_library_and_its_torch_free_modules():
    """The parser side of the command never loads the scoring side, torch, numpy or an optional extra when it
    loads: a module the parser needs imports them inside the function that uses them (with a comment saying why).
    ``tests/cli/core/test_startup.py`` checks the same by running the command."""
    loaded, outside = _start_up()
    heavy = sorted(f"{module} -> {name}" for module, names in outside.items() for name in names if name in HEAVY)
    assert not heavy, "the command's start loads:\n" + "\n".join(heavy)
    assert not loaded & set(SCORING_SIDE), f"the command's start loads {sorted(loaded & set(SCORING_SIDE))}"
    torch_free = ("nobg_metrics", "nobg_metrics._version", "nobg_metrics.io", "nobg_metrics.io.errors")
    assert all(m in torch_free or m.startswith("nobg_metrics.cli") for m in loaded), \
        sorted(m for m in loaded if not m.startswith("nobg_metrics.cli") and m not in torch_free)


def test_the_command_is_entered_at_its_top():
    """Only the console script imports the run (``cli.eval.main``: the package's lazy ``main`` too); nothing but
    ``python -m nobg_metrics`` imports the console script; and the run's writers are imported by the two commands
    that write a run (``eval``, ``merge``)."""
    graph = _graph()
    importers = {target: sorted(m for m, targets in graph.items() if target in targets) for target in
                 ("nobg_metrics.cli.eval.main", "nobg_metrics.cli.entry", "nobg_metrics.cli.outputs.run_outputs")}
    assert importers == {"nobg_metrics.cli.eval.main": ["nobg_metrics.cli", "nobg_metrics.cli.entry"],
                         "nobg_metrics.cli.entry": ["nobg_metrics.__main__"],
                         "nobg_metrics.cli.outputs.run_outputs": ["nobg_metrics.cli.eval.main",
                                                                  "nobg_metrics.cli.merge.command"]}


BLOCK = ("import ", "from ", "#")


def _function_level_imports(path: Path) -> list[ast.stmt]:
    found = []
    for function in ast.walk(ast.parse(path.read_text())):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [node for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))]
    return found


def test_an_import_inside_a_function_says_why():
    """Imports go at the top of a module; one inside a function keeps something out of a start-up path or
    is an optional extra, and says so in a comment: on its line, or on the line that opens its block of imports (a
    comment line, ``try:``, ``if ...:``)."""
    silent = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in _function_level_imports(path):
            row = node.lineno - 1
            while row > 0 and (not lines[row - 1].strip() or lines[row - 1].lstrip().startswith(BLOCK)):
                row -= 1  # up through its block of imports, comments and blank lines
            opening = lines[row - 1].split("#")[0].rstrip().endswith(":") if row > 0 else False
            block = lines[row - 1 if opening else row: node.end_lineno]
            if not any("#" in line for line in block):
                silent.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not silent, "imports inside functions without a comment saying why:\n" + "\n".join(silent)


SPLIT = re.compile(r"_check_\w+_args|_\w+_(update|compute)")
"""The torchmetrics split (``_x_update`` -> statistics, ``_x_compute`` -> value, ``_check_x_args``): the helpers a
class calls so that the maths lives once, in its functional module (docs/design.md "Layers")."""


def _private_imports() -> list[tuple[str, str, str]]:
    """``(importer, source module, name)`` for every underscored name a package module imports from another."""
    modules, found = _modules(), []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nobg_metrics"):
                found += [(module, node.module, alias.name) for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_a_private_name_crosses_modules_only_from_a_functional_to_its_class():
    """A helper two modules need has a public name (or lives in ``ops/`` or a ``_common`` module); the one exception
    is the torchmetrics split, which a class under ``metrics/`` takes from a functional module."""
    crossing = [f"{importer} <- {source}.{name}" for importer, source, name in _private_imports()
                if not (importer.startswith("nobg_metrics.metrics.") and source.startswith("nobg_metrics.functional.")
                        and SPLIT.fullmatch(name))]
    assert not crossing, "private names imported across modules:\n" + "\n".join(sorted(crossing))
