"""File digests for the job cache (:mod:`nobg_metrics.cli.eval.cache`): BLAKE2b of a file's bytes, with a ``stat`` fast
path.

A folder's digests are kept in one record file (``files/<folder digest>.json``) by (size, mtime, inode, ctime): a
file whose ``stat`` matches its record is not read again. A file is recorded only when it was last modified at least
:data:`RACY_S` before it was hashed (a later write within one timestamp tick could not be told apart otherwise).
Records are written to a temporary name and renamed into place, with the user's umask. Importable without torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

RACY_S = 2.0
"""A file modified less than this many seconds before it was hashed is hashed again next run (no fast path)."""


_CHUNK = 1 << 20



def file_digest(path: Path) -> str:
    """BLAKE2b-256 of the file's bytes (hex)."""
    digest = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def text_digest(text: str) -> str:
    """BLAKE2b-256 (hex) of a text's bytes (a path's as the OS gives them: ``os_names.os_bytes``)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=32).hexdigest()


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # as a plain open() would create it (mkstemp makes it private)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Digests:
    """File digests with the stat fast path, one record file per folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: dict[str, dict[str, list]] = {}  # folder -> name -> [size, mtime_ns, ino, ctime_ns, digest]
        self.seen: dict[str, tuple[list[int], str]] = {}  # path -> (stamp when hashed, digest)
        self.started_ns = time.time_ns()

    def _record_path(self, folder: str) -> Path:
        return self.root / "files" / f"{text_digest(folder)}.json"

    def _folder(self, folder: str) -> dict[str, list]:
        if folder not in self.records:
            try:
                data = json.loads(self._record_path(folder).read_text(encoding="utf-8"))
                files = data["files"] if data.get("folder") == folder else {}
                self.records[folder] = files if isinstance(files, dict) else {}
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                self.records[folder] = {}  # none yet, or unreadable: hash again (rewritten at store)
        return self.records[folder]

    def digest(self, path: Path) -> str:
        """The content digest of ``path`` (OSError when it cannot be read)."""
        key = os.path.abspath(path)
        if key in self.seen:
            return self.seen[key][1]
        stamp = _stamp(os.stat(key))
        folder, name = os.path.split(key)
        record = self._folder(folder).get(name)
        if isinstance(record, list) and len(record) == 5 and record[:4] == stamp and isinstance(record[4], str):
            digest = record[4]
        else:
            digest = file_digest(Path(key))
        self.seen[key] = (stamp, digest)
        return digest

    def unchanged(self, path: Path) -> bool:
        """The file's ``stat`` is what it was when it was hashed (checked before its results are stored)."""
        key = os.path.abspath(path)
        try:
            return key in self.seen and _stamp(os.stat(key)) == self.seen[key][0]
        except OSError:
            return False

    def save(self) -> None:
        """Record the digests of the files hashed long enough after their last change (:data:`RACY_S`)."""
        settled = self.started_ns - int(RACY_S * 1e9)
        changed: dict[str, dict[str, list]] = {}
        for key, (stamp, digest) in self.seen.items():
            folder, name = os.path.split(key)
            if stamp[1] <= settled and self._folder(folder).get(name) != [*stamp, digest]:
                changed.setdefault(folder, {})[name] = [*stamp, digest]
        for folder, files in changed.items():
            self.records.pop(folder, None)  # read again: another run may have added records meanwhile
            merged = {**self._folder(folder), **files}
            write_json(self._record_path(folder), {"folder": folder, "files": merged})
            self.records[folder] = merged
