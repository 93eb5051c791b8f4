"""A JSON file whose top level is an array, read a run of elements at a time (a results file of ~100 MB need not be
held whole, neither as text nor decoded).

:func:`array_runs` reads the file in chunks of :data:`CHUNK` characters and decodes them with the standard library's
decoder (the one ``json.load`` uses): the elements are the values ``json.load`` gives, and at most one chunk's
elements and one chunk of text are held besides what the caller keeps. The complete elements of a chunk are decoded
in one call, as the array ``"[" + text + "]"`` of the text up to the chunk's last ``}, {`` (an object's end, a comma,
an object's start: where a results file's detections meet); that is the text's own elements whenever it decodes (a
cut inside a string or a nested value leaves a string or a bracket open). What does not decode so — the chunk's last
element, a cut that was not between two elements, an error — is decoded one element at a time
(``json.JSONDecoder.raw_decode``) as far as the next chunk, which also gives an error's exact place.
:func:`array_items` gives the elements one by one.
A file that is not valid JSON is refused as ``json.load`` refuses it, with its message and its position in the whole
file (line, column, character), so errors read as before; a valid document that is not an array is decoded whole
(it is refused by the caller, and is rarely large).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from nobg_metrics.io.errors import InputError

CHUNK = 1 << 20
"""Characters read at a time (an element longer than this is read in several: the chunks double)."""

SLACK = 64
"""A decoding error this close to the end of what is read, when the file goes on, may be the read's cut (a number or
an escape cut in two): more is read and the element decoded again. A real error stays where it is and is reported
once the file is read past it."""

TAIL = 1 << 16
"""The last characters of a chunk searched for the cut of a run (elements longer than this: one at a time)."""

_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace (json.decoder's)
_BETWEEN_OBJECTS = re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{")
_DECODER = json.JSONDecoder()


class _Reader:
    """The text read and not yet decoded, with the position of its start in the file (for the error messages)."""

    def __init__(self, handle: TextIO, path: Path, role: str, chunk: int) -> None:
        self.handle, self.path, self.role, self.chunk = handle, path, role, chunk
        self.text, self.at = "", 0
        self.start = 0
        """The file position of ``text[0]``, in characters."""
        self.lines, self.last_newline = 0, -1
        """Newlines before ``text`` and the file position of the last of them (-1: none), for line and column."""
        self.done = False
        self.cut = -1
        """Where the run of complete elements may end: after the text's last ``}, {``'s ``}`` (-1: not searched)."""

    def more(self, wanted: int) -> bool:
        """Read at least ``wanted`` characters more (fewer at the end of the file); False at the end of the file."""
        if self.done:
            return False
        try:
            read = self.handle.read(max(wanted, self.chunk))
        except UnicodeDecodeError as error:
            raise InputError(f"{self.role} {self.path}: not valid JSON ({error})") from None
        except OSError as error:
            raise InputError(f"{self.role} {self.path}: cannot be read ({error.strerror or error})") from None
        if not read:
            self.done = True
            return False
        dropped = self.text[: self.at]  # what is decoded goes: the text held is one element and one read at most
        newlines = dropped.count("\n")
        if newlines:
            self.lines += newlines
            self.last_newline = self.start + dropped.rindex("\n")
        self.start += self.at
        self.text, self.at = self.text[self.at:] + read, 0
        self.cut = -1
        return True

    def skip_space(self) -> str:
        """Move past whitespace; the next character ('' at the end of the file)."""
        while True:
            self.at = _WHITESPACE.match(self.text, self.at).end()  # type: ignore[union-attr]
            if self.at < len(self.text) or not self.more(self.chunk):
                return self.text[self.at: self.at + 1]

    def error(self, message: str, at: int) -> InputError:
        """``json.load``'s message for an error at ``text[at]``, placed in the whole file."""
        position = self.start + at
        newline = self.text.rfind("\n", 0, at)
        line = self.lines + self.text.count("\n", 0, at) + 1
        column = at - newline if newline >= 0 else position - self.last_newline
        return InputError(f"{self.role} {self.path}: not valid JSON ({message}: line {line} column {column} "
                          f"(char {position}))")

    def run(self) -> list[Any]:
        """The elements from the read position up to the cut (those of the text read, but its last), decoded in one
        call; or the element at the read position when there is no such run (see the module notes)."""
        if self.cut < 0:
            last = None
            for last in _BETWEEN_OBJECTS.finditer(self.text, max(self.at, len(self.text) - TAIL)):  # noqa: B007
                pass
            self.cut = last.start() + 1 if last is not None else 0
        if self.cut > self.at:
            cut, self.cut = self.cut, 0  # tried once a read
            try:
                values = _DECODER.decode("[" + self.text[self.at: cut] + "]")
            except (json.JSONDecodeError, RecursionError):
                pass  # not a run of elements (or not valid JSON): element by element, for the error's place
            else:
                self.at = cut
                return values
        return [self.value()]

    def value(self) -> Any:
        """Decode the value at the read position (reading on while the value may be cut by the read's end)."""
        while True:
            try:
                value, end = _DECODER.raw_decode(self.text, self.at)
            except json.JSONDecodeError as error:
                cut = error.pos >= len(self.text) - SLACK or error.msg.startswith("Unterminated string")
                if cut and self.more(2 * (len(self.text) - self.at)):
                    continue
                raise self.error(error.msg, error.pos) from None
            if end <= len(self.text) - SLACK or not self.more(self.chunk):  # a number may go on ("1.5" of "1.5e3")
                self.at = end
                return value  # (else decoded again with what follows: the last element of a read, at most)


def array_items(path: Path, role: str, expected: str, chunk: int | None = None) -> Iterator[tuple[int, Any]]:
    """``(position, element)`` of each element of the JSON array of ``path`` (``role``: ``--dt-json-file``, ... for
    the messages), decoded as :func:`array_runs` decodes them (reads of ``chunk`` characters; default :data:`CHUNK`).

    Raises:
        InputError: the file cannot be read or is not valid JSON (``json.load``'s message and position), or is a
            JSON value other than an array (``"{path}: {expected}, got a JSON {type}"``).

    Examples:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "dt.json"
        >>> _ = path.write_text('[{"score": 0.5},\\n {"score": 1e-3, "bbox": [1, 2, 3, 4]}]')
        >>> list(array_items(path, "--dt-json-file", "expected a list", chunk=8))
        [(0, {'score': 0.5}), (1, {'score': 0.001, 'bbox': [1, 2, 3, 4]})]
        >>> _ = path.write_text('[{"score": 0.5},\\n {"score": 1e-3')
        >>> try:  # cut short
        ...     list(array_items(path, "--dt-json-file", "expected a list"))
        ... except InputError as error:
        ...     print(str(error).split(": ", 1)[1])
        not valid JSON (Expecting ',' delimiter: line 2 column 16 (char 32))
    """
    for position, values in array_runs(path, role, expected, chunk):
        for offset, value in enumerate(values):
            yield position + offset, value


def open_text(path: Path, role: str) -> TextIO:
    """``path`` opened as UTF-8 text (``role``: ``--gt-json-file``, ...), or an :class:`InputError` saying why not."""
    try:
        return open(path, encoding="utf-8")  # the caller closes it: a with block, or a generator as it ends
    except FileNotFoundError:
        raise InputError(f"{role} {path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{role} {path}: is a folder, not a JSON file") from None
    except OSError as error:
        raise InputError(f"{role} {path}: cannot be read ({error.strerror or error})") from None


def array_runs(path: Path, role: str, expected: str, chunk: int | None = None) -> Iterator[tuple[int, list[Any]]]:
    """``(position of the first, elements)`` of runs of consecutive elements of the JSON array of ``path``, in order
    (one chunk's complete elements, or one element; see the module notes): :func:`array_items` by runs, for a caller
    with work per element (it loops over a list instead of resuming a generator for each).

    Raises:
        InputError: as :func:`array_items`.

    Examples:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "dt.json"
        >>> _ = path.write_text('[{"score": 0.5}, {"score": 0.25}, {"score": 1}]')
        >>> list(array_runs(path, "--dt-json-file", "expected a list"))
        [(0, [{'score': 0.5}, {'score': 0.25}]), (2, [{'score': 1}])]
    """
    with open_text(path, role) as handle:
        reader = _Reader(handle, path, role, chunk or CHUNK)
        first = reader.skip_space()
        if first == "\ufeff" and reader.start + reader.at == 0:
            raise reader.error("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)
        if first != "[":  # not an array: decoded whole, as json.load would
            document = reader.value()
            if reader.skip_space():
                raise reader.error("Extra data", reader.at)
            raise InputError(f"{path}: {expected}, got a JSON {type(document).__name__}")
        reader.at += 1
        if reader.skip_space() == "]":
            reader.at += 1
        else:
            position = 0
            while True:
                values = reader.run()
                yield position, values
                position += len(values)
                following = reader.skip_space()
                reader.at += 1
                if following == "]":
                    break
                if following != ",":
                    raise reader.error("Expecting ',' delimiter", reader.at - 1)
                reader.skip_space()
        if reader.skip_space():
            raise reader.error("Extra data", reader.at)
