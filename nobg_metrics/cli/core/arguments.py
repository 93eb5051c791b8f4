"""Value types of the command's flags that several subcommands share (standard library only: the parser imports
them). A bad value is an ``argparse`` usage error naming what was expected and what came."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["count_at_least", "level"]


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
