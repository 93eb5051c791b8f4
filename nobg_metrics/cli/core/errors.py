"""The command's two expected failures and how it names a misspelt word: a bad command line or config
(:class:`ConfigError`, exit status 2), inputs that are missing or unreadable (:class:`InputError`, exit status 1);
:func:`closest` adds "did you mean" to either. Both are printed without a traceback (docs/cli.md "Exit status").

Standard library only: every module of the command, the argument parser's among them, raises these;
:class:`InputError` is the file-format layer's (:mod:`nobg_metrics.io.errors`), which the readers raise.
"""

from __future__ import annotations

import difflib

from nobg_metrics.io.errors import InputError

__all__ = ["ConfigError", "InputError", "closest"]


class ConfigError(Exception):
    """A config or command line that cannot describe a run (exit status 2, shown without a traceback)."""


def closest(word: str, valid: list[str] | tuple[str, ...]) -> str:
    """``"; did you mean X?"`` for the closest valid word, or ``""``.

    Examples:
        >>> closest("suffx", ("path", "prefix", "suffix"))
        "; did you mean 'suffix'?"
    """
    same_letters = [str(v) for v in valid if str(v).lower() == str(word).lower()]
    found = same_letters or difflib.get_close_matches(str(word), [str(v) for v in valid], n=1)
    return f"; did you mean {found[0]!r}?" if found else ""
