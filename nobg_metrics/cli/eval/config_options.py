"""Run options in our config file: ``options: {preset: sod, out: results, batch_size: 16, ...}``.

Every ``eval`` flag can be given there under its name (``batch_size`` or ``batch-size``), except the inputs,
which the config's ``datasets`` / ``methods`` describe (``gt``, ``pred``, ``trimap``, ``image``, ``prefix``,
``suffix``, ``config``, ``dataset_json``, ``method_json``). A value goes through the flag's own parsing (its
type, choices and checks), so ``tier: cheep`` fails exactly as ``--tier cheep`` does — as a config error naming
the key; an unknown key is an error naming the closest valid one. Relative paths (``out``, ``cache``,
``aliases``, ``plot_style``, ``categories``) are resolved against the config file's folder, like its datasets.

Precedence: a flag given on the command line wins; a flag left at its default takes the config's value (a
flag given with exactly its default value cannot be told apart from an absent one, and so yields to the
config). Importable without torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

from nobg_metrics.cli.core.errors import ConfigError, closest
from nobg_metrics.cli.parser import build_parser

INPUTS = ("gt", "pred", "trimap", "image", "prefix", "suffix", "config", "dataset_json", "method_json")
"""Flags a config describes in its ``datasets`` / ``methods`` instead."""
PATHS = ("out", "cache", "aliases", "plot_style", "categories")
"""Options whose relative paths are resolved against the config file's folder."""


class _Refused(Exception):
    pass


def _eval_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["eval"]


def _tokens(action: argparse.Action, value: Any, where: str) -> list[str]:
    flag = action.option_strings[0]
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false; got {value!r}")
        return [flag] if value != action.default else []
    values = value if isinstance(value, list) else [value]
    if action.nargs in (None, "?") and isinstance(value, list):
        raise ConfigError(f"{where}: expected one value; got a list {value!r}")
    if not values:
        raise ConfigError(f"{where}: expected at least one value; got an empty list")
    return [flag, *(str(v) for v in values)]


def apply_config_options(args: argparse.Namespace, options: dict[str, tuple[Any, Path, str]]) -> None:
    """Fill ``args`` from a config's ``options`` (``key -> (value, config folder, where)``); see the module notes.

    Examples:
        >>> args = argparse.Namespace(tier=None, batch_size=8)
        >>> apply_config_options(args, {"batch-size": (16, Path("."), "run.yaml options.batch-size")})
        >>> args.batch_size
        16
    """
    if not options:
        return
    parser = _eval_parser()
    parser.exit_on_error = False
    parser.error = _raise  # type: ignore[method-assign]  # argparse's error() would exit the process
    actions = {a.dest: a for a in parser._actions if a.option_strings and a.dest not in ("help",)}
    valid = sorted(set(actions) - set(INPUTS))
    for key, (value, base, where) in options.items():
        dest = key.replace("-", "_")
        if dest in INPUTS:
            raise ConfigError(f"{where}: {key!r} is an input: give it in the config's 'datasets' / 'methods'")
        if dest not in actions:
            raise ConfigError(f"{where}: unknown option {key!r}{closest(dest, valid)}")
        action = actions[dest]
        if getattr(args, dest, action.default) != action.default:
            continue  # given on the command line: it wins
        if dest in PATHS and isinstance(value, str) and value.strip():
            value = str(base / value)
        tokens = _tokens(action, value, where)
        if not tokens:
            continue
        try:
            parsed = parser.parse_args(tokens)
        except (argparse.ArgumentError, _Refused) as error:
            raise ConfigError(f"{where}: {error}") from None
        setattr(args, dest, getattr(parsed, dest))


def _raise(message: str) -> NoReturn:
    raise _Refused(message)
