"""Value types of the command's flags that several subcommands share (standard library only: the parser imports
them). A bad value is an ``argparse`` usage error naming what was expected and what came."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

__all__ = ["add_statistics_flags", "count_at_least", "level"]


def count_at_least(minimum: int) -> Callable[[str], int]:
    """An integer flag value ``>= minimum`` (``--bootstrap``, ``--seed``, ``--permutations``, ``--worst-k``).

    Examples:
        >>> count_at_least(1)("3")
        3
        >>> count_at_least(1)("0")
        Traceback (most recent call last):
        argparse.ArgumentTypeError: expected an integer >= 1, got '0'
    """
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value
    return parse


def level(text: str) -> float:
    """A number strictly between 0 and 1 (``--alpha``).

    Examples:
        >>> level("0.1")
        0.1
    """
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


def add_statistics_flags(parser: argparse.ArgumentParser, *, permutations: int, permutations_help: str,
                         compare_metavar: str, compare_help: str) -> argparse._ArgumentGroup:
    """The statistics flags of the structured-input commands (``instances``, ``panoptic``): ``eval``'s names and
    checks (``--bootstrap``, ``--seed``, ``--alpha``, ``--permutations``) and ``--compare``; statistics are written
    only when ``--bootstrap`` or ``--compare`` is given. Returns the group (a command adds its own flags to it)."""
    group = parser.add_argument_group("statistics (stats.json, stats.md; written only with --bootstrap or "
                                      "--compare)")
    group.add_argument("--bootstrap", type=count_at_least(0), default=None, metavar="N",
                       help="image-level bootstrap resamples per interval (default: no statistics; 1000 with "
                            "--compare; 0: tests only)")
    group.add_argument("--seed", type=count_at_least(0), default=0, help="seed of the bootstrap and swap draws")
    group.add_argument("--alpha", type=level, default=0.05, help="intervals are 1 - alpha; level of the test")
    group.add_argument("--permutations", type=count_at_least(1), default=permutations, metavar="N",
                       help=permutations_help)
    group.add_argument("--compare", type=Path, default=None, metavar=compare_metavar, help=compare_help)
    return group
