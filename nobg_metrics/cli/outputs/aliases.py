"""``--aliases FILE``: the printed names and order of datasets and methods in every table (docs/tables.md).

Importable without torch (the argument parser's modules use it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError, closest
from nobg_metrics.cli.core.json_yaml import load_json_or_yaml
from nobg_metrics.cli.outputs.marks import tex_escape

__all__ = ["Aliases", "check_aliases", "check_plan_aliases", "read_aliases"]


@dataclass
class Aliases:
    """Printed names and order of datasets and methods: ``{"datasets": {name: alias or None}, "methods": ...}``
    (insertion order = table order; names not listed follow in the run's order)."""

    datasets: dict[str, str | None] = field(default_factory=dict)
    methods: dict[str, str | None] = field(default_factory=dict)

    def order(self, kind: str, names: list[str]) -> list[str]:
        listed = [name for name in getattr(self, kind) if name in names]
        return listed + [name for name in names if name not in listed]

    def shown(self, kind: str, name: str, tex: bool = False) -> str:
        """The alias as written (LaTeX in it is kept), else the name (escaped for LaTeX)."""
        alias = getattr(self, kind).get(name)
        if alias is not None:
            return alias
        if tex:
            return tex_escape(name)
        return name


def read_aliases(path: Path | None) -> Aliases:
    """``--aliases FILE``: YAML or JSON with the keys ``datasets`` and ``methods``, each a mapping ``name: alias``
    (``null``: the name itself) or a list of names (order only). A wrong key or type is a usage error naming it."""
    if path is None:
        return Aliases()
    data = load_json_or_yaml(path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"--aliases {path}: expected a mapping with 'datasets' and/or 'methods', "
                          f"got {type(data).__name__}")
    aliases = Aliases()
    for key, value in data.items():
        if key not in ("datasets", "methods"):
            raise ConfigError(f"--aliases {path}: unknown key {key!r}{closest(key, ('datasets', 'methods'))} "
                              "(expected datasets, methods)")
        if isinstance(value, list):
            value = dict.fromkeys(value)
        if not isinstance(value, dict):
            raise ConfigError(f"--aliases {path}: '{key}' must be a mapping name -> alias or a list of names")
        for name, alias in value.items():
            if not isinstance(name, (str, int)) or not (alias is None or isinstance(alias, (str, int, float))):
                raise ConfigError(f"--aliases {path}: {key}.{name}: names and aliases must be strings")
            getattr(aliases, key)[str(name)] = None if alias is None else str(alias)
    return aliases


def check_aliases(aliases: Aliases, datasets: list[str], methods: list[str], where: str = "--aliases") -> None:
    """Every aliased name must be one of the run's (a wrong one names the closest); no two may print the same."""
    for kind, valid in (("datasets", datasets), ("methods", methods)):
        shown: dict[str, str] = {}
        for name in getattr(aliases, kind):
            if name not in valid:
                raise ConfigError(f"{where}: {kind} has {name!r}, which is not in this run{closest(name, valid)} "
                                  f"(have {', '.join(valid)})")
        for name in valid:
            printed = getattr(aliases, kind).get(name) or name
            if printed in shown:
                raise ConfigError(f"{where}: {kind} {shown[printed]!r} and {name!r} both print as {printed!r}")
            shown[printed] = name


def check_plan_aliases(args: argparse.Namespace, plan: Any) -> None:
    """``--aliases`` checked against the run's plan before scoring (a misspelt name never costs a run)."""
    if getattr(args, "aliases", None) is not None:
        check_aliases(read_aliases(args.aliases), [dataset.name for dataset in plan.datasets], list(plan.methods))
