"""Writing a run's outputs all at once or not at all, one run per folder (docs/cli.md "Outputs written at once").

:func:`write_atomically`: every file goes into a temporary folder inside ``--out`` (``.nobg-metrics-tmp-*``), is
flushed to disk, and is then renamed into place — ``results.json`` last — while interrupting signals are held
(:func:`nobg_metrics.cli.core.signals.deferred`): an interrupted or failed run leaves the previous outputs as they were.
:class:`OutputLock` holds ``--out/.nobg-metrics.lock`` (``flock``) for the whole run, so two runs into one folder
never mix: the second fails at once. Files and folders follow the user's umask.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nobg_metrics.cli.core.errors import ConfigError
from nobg_metrics.cli.core.os_names import open_csv, readable
from nobg_metrics.cli.core.signals import checkpoint, deferred

try:
    import fcntl
    _HAS_FLOCK = True
except ImportError:  # Windows: no advisory locks; runs into one folder are not detected there
    _HAS_FLOCK = False

LOCK_NAME = ".nobg-metrics.lock"
"""The lock file a run holds in ``--out`` (removed when the run ends)."""

TMP_PREFIX = ".nobg-metrics-tmp-"
"""Prefix of the temporary folder the outputs are written into before they are moved into ``--out``."""


class OutputBusy(Exception):
    """``--out`` is held by another run (exit status 4)."""



def write_per_image_csv(path: Path, rows: list[dict[str, Any]], names: list[str]) -> None:
    """``dataset,method,image,resized,<metric>...``; empty cells for NaN; names as the OS's bytes
    (:func:`~nobg_metrics.cli.core.os_names.open_csv`)."""
    with open_csv(path, "w") as handle:
        writer = csv.writer(handle)
        writer.writerow(["dataset", "method", "image", "resized", *names])
        for row in rows:
            values = [repr(v) if v is not None and math.isfinite(v) else "" for v in (row[n] for n in names)]
            writer.writerow([row["dataset"], row["method"], row["image"], int(row["resized"]), *values])


def _fsync(path: Path, directory: bool = False) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    except OSError:
        return  # e.g. folders cannot be opened on Windows
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(out: Path, writers: dict[str, Callable[[Path], None]]) -> None:
    """Write every file into a temporary folder inside ``out`` (created if needed), then move them into
    ``out`` — ``results.json`` last — with interrupting signals held until all are in place.

    A failure or interruption while writing leaves ``out`` as it was; other files in ``out`` are kept.
    """
    out = Path(os.path.abspath(out))
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=out))
    try:
        for name, writer in writers.items():
            writer(tmp / name)
            _fsync(tmp / name)
        order = sorted(writers, key=lambda name: name == "results.json")  # the manifest goes last
        checkpoint()
        with deferred():
            for name in order:
                os.replace(tmp / name, out / name)
            _fsync(out, directory=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class OutputLock:
    """Hold ``out/.nobg-metrics.lock`` for a run (``with OutputLock(out): ...``).

    Entering creates ``out`` (and missing parents) when needed — which also proves the location can be
    written, before any scoring — takes an exclusive ``flock`` (:class:`OutputBusy` at once when another
    run holds it) and removes temporary folders that killed runs left behind. Leaving removes the lock
    file and the folders it created if they are still empty (a failed run leaves nothing behind).
    """

    def __init__(self, out: Path) -> None:
        self.out = Path(os.path.abspath(out))
        self.created: list[Path] = []
        self.fd: int | None = None

    def __enter__(self) -> OutputLock:
        try:
            self._make_folders()
            self._lock()
        except OutputBusy:
            self._remove_created()
            raise
        except OSError as error:
            self._remove_created()
            raise ConfigError(f"--out {self.out}: cannot write there ({error.strerror or error})") from None
        for entry in os.listdir(self.out):
            if entry.startswith(TMP_PREFIX):  # left by a run that was killed (we hold the lock: none is live)
                shutil.rmtree(self.out / entry, ignore_errors=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.out / LOCK_NAME)  # before unlocking: a waiting run re-checks the inode
            os.close(self.fd)
            self.fd = None
        self._remove_created()

    def _make_folders(self) -> None:
        missing = []
        folder = self.out
        while not os.path.isdir(folder):
            if os.path.lexists(folder):
                raise OSError(errno.ENOTDIR, f"{folder} is not a folder")
            missing.append(folder)
            folder = folder.parent
        for folder in reversed(missing):
            try:
                os.mkdir(folder)
            except FileExistsError:
                if not os.path.isdir(folder):
                    raise
                continue
            self.created.append(folder)

    def _lock(self) -> None:
        path = self.out / LOCK_NAME
        if not _HAS_FLOCK:
            return
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                holder = os.read(fd, 64).decode(errors="replace").strip()
                os.close(fd)
                if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                    raise
                raise OutputBusy(f"--out {self.out} is in use by another nobg-metrics run"
                                 f"{f' (pid {holder})' if holder.isdigit() else ''}; wait for it to end or "
                                 f"choose another --out") from None
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder removed the file as we opened it: lock the new one
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def _remove_created(self) -> None:
        for folder in reversed(self.created):  # deepest first; only if empty
            try:
                os.rmdir(folder)
            except OSError:
                break
        self.created = []


def text_writer(text: str, tex: bool = False) -> Callable[[Path], None]:
    """A writer of a fixed UTF-8 text for people: OS names' undecodable bytes as ``\\xNN``
    (:func:`~nobg_metrics.cli.core.os_names.readable`; ``tex``: for a LaTeX document)."""
    shown = readable(text, tex)

    def write(path: Path) -> None:
        path.write_text(shown, encoding="utf-8")
    return write


def json_writer(document: dict[str, Any]) -> Callable[[Path], None]:
    """A writer of a JSON document (strict: no NaN; ASCII, OS names' undecodable bytes as ``\\udcNN`` escapes)."""
    def write(path: Path) -> None:
        path.write_text(json.dumps(document, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return write
