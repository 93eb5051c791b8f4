"""File and folder names as the OS gives them, in every output of the command (docs/reliability.md).

On POSIX a file name is bytes; Python hands names that are not valid UTF-8 over as ``str`` with *surrogate escapes*
(``os.fsdecode(b"\\xe9t\\xe9")`` is ``"\\udce9t\\udce9"``): each undecodable byte ``0xNN`` becomes the lone surrogate
``U+DCNN``. Such a name reaches the outputs unchanged (image, dataset and method names come from the folders), and
each kind of output keeps it in the one form it can hold:

- **CSV** (``per_image.csv``, ``combined.csv``, ``curves.csv``): the name's bytes as the OS gives them
  (``os.fsencode``; UTF-8 with ``errors="surrogateescape"``, :func:`open_csv`); read back the same way
  (``nobg-metrics merge``) they give the same ``str``.
- **JSON** (``results.json``, ``stats.json``, the ``--cache`` entries, the ``curves.npz`` manifest): ASCII JSON, the
  surrogates as ``\\udcNN`` escapes; ``json.loads`` gives the same ``str`` back (``os.fsencode`` of it: the bytes).
- **Text for people** (``table.md`` / ``.tex``, ``combined.md`` / ``.tex`` / ``.xlsx``, ``worst.md``, ``stats.md``,
  ``groups.md``, ``report.html``, the plots, the console): valid UTF-8, each undecodable byte printed as ``\\xNN``
  (:func:`readable`; ``\\textbackslash{}xNN`` in LaTeX), so the document stays readable and the name unambiguous.
- **Digests** (the cache keys, the statistics' seeds): the name's bytes (:func:`os_bytes`).

Valid UTF-8 names are unchanged by all of these. Importable without torch.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import IO

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match[str], tex: bool) -> str:
    code = ord(match.group())
    text = f"x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"u{code:04x}"  # an escaped byte, or a stray one
    return (r"\textbackslash{}" if tex else "\\") + text


def readable(text: str, tex: bool = False) -> str:
    """``text`` for a document people read: every undecodable byte of an OS name (a surrogate escape) as ``\\xNN``
    (``tex=True``: ``\\textbackslash{}xNN``, for text already escaped for LaTeX); other text unchanged.

    Examples:
        >>> import os
        >>> readable(os.fsdecode(b"\\xe9t\\xe9.png")), readable("été.png"), readable("\\udce9", tex=True)
        ('\\\\xe9t\\\\xe9.png', 'été.png', '\\\\textbackslash{}xe9')
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda match: _escaped(match, tex), text)


def os_bytes(text: str) -> bytes:
    """The bytes of a name as the OS gives them (``os.fsencode`` for file names; UTF-8 for every valid name).

    Examples:
        >>> os_bytes("\\udce9t\\udce9"), os_bytes("été")
        (b'\\xe9t\\xe9', b'\\xc3\\xa9t\\xc3\\xa9')
    """
    return text.encode("utf-8", "surrogateescape")


def open_csv(path: Path, mode: str = "r") -> IO[str]:
    """A CSV file opened for ``csv`` (``newline=""``): UTF-8, names kept as the OS's bytes (module notes)."""
    return open(path, mode, newline="", encoding="utf-8", errors="surrogateescape")
