"""Which files of a folder are images to score, matched by name: every entry either a candidate or listed with the
reason it is not scored (docs/cli.md "Files").

- **every entry of a folder** is either a candidate image or listed with the reason it is not scored
  (:func:`scan_folder`): hidden names, other extensions (``.gif``, ``.txt``), subfolders, special files,
  names that do not fit the prefix/suffix. A broken or looping symlink with an image extension stays a
  candidate, so that reading it reports it as unreadable (by name) instead of dropping it.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from nobg_metrics.io.errors import ReadError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
"""Extensions considered when matching by stem, in order of preference for duplicate stems."""


@dataclass(frozen=True)
class Source:
    """Where one folder's files live: ``prefix + stem + suffix`` (suffix may hold the extension)."""

    path: Path
    prefix: str = ""
    suffix: str = ""


def has_extension(suffix: str) -> bool:
    return suffix.lower().endswith(IMAGE_EXTENSIONS)


@dataclass
class Listing:
    """One folder's entries: the candidate image of each stem and everything else, with reasons."""

    found: dict[str, Path] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    not_scored: list[tuple[str, str]] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)
    """``stem -> why its file cannot be read`` for the candidates that are not regular files (a broken or looping
    symlink, an entry that cannot be stat-ed): a gt of them is named as unreadable even when no prediction asks
    for it (:func:`nobg_metrics.cli.eval.jobs.build_jobs`)."""


def entry_kind(path: Path) -> str:
    """``file``, ``folder``, ``special``, ``broken symlink``, ``symlink loop`` or ``unreadable (...)``."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "symlink loop"
        if error.errno == errno.ENOENT and os.path.islink(path):
            return "broken symlink"
        return f"unreadable ({error.strerror or error})"
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "special"


def scan_folder(source: Source) -> Listing:
    """Every entry of a folder: each image stem's file, or why an entry is not scored.

    A ``suffix`` ending in an image extension (``"_sal.png"``) must match the file name exactly; otherwise
    ``prefix + stem + suffix`` is matched against the name without extension, across extensions. Two
    files with one stem: a readable file before a broken link, then the ``IMAGE_EXTENSIONS`` order; the
    other is listed in ``duplicates``. Raises :class:`ReadError` when the folder cannot be listed.
    """
    listing = Listing()
    kinds: dict[Path, str] = {}
    rank = {ext: index for index, ext in enumerate(IMAGE_EXTENSIONS)}
    with_ext = has_extension(source.suffix)
    try:
        names = sorted(os.listdir(source.path))
    except OSError as error:
        raise ReadError(f"cannot list the folder {source.path}: {error.strerror or error}") from None
    for entry in names:
        path = source.path / entry
        kind = kinds[path] = entry_kind(path)
        ext = path.suffix.lower()
        if entry.startswith("."):
            listing.not_scored.append((entry, "hidden folder" if kind == "folder" else "hidden file"))
            continue
        if kind == "folder":
            listing.not_scored.append((entry, "a folder (subfolders are not searched)"))
            continue
        if ext not in rank:
            why = f"unsupported extension {ext!r}" if ext else "no image extension"
            listing.not_scored.append((entry, why if kind == "file" else f"{why}; {kind}"))
            continue
        if kind == "special":  # a fifo, socket or device: never opened (reading a fifo would block)
            listing.not_scored.append((entry, "not a regular file"))
            continue
        # a file, or a broken/looping symlink or unreadable entry: a candidate (reading it reports it as
        # unreadable, by name)
        name = entry if with_ext else entry[: -len(path.suffix)]
        if not (name.startswith(source.prefix) and name.endswith(source.suffix)) or \
                len(name) < len(source.prefix) + len(source.suffix):
            listing.not_scored.append((entry, f"name does not match {source.prefix!r} + stem + {source.suffix!r}"))
            continue
        stem = name[len(source.prefix): len(name) - len(source.suffix)]
        if stem in listing.found:
            keep, drop = sorted([listing.found[stem], path],
                                key=lambda p: (kinds[p] != "file", rank[p.suffix.lower()]))
            listing.found[stem] = keep
            listing.duplicates.append(drop.name)
        else:
            listing.found[stem] = path
    for stem, path in listing.found.items():
        if kinds[path] != "file":
            listing.problems[stem] = kind_problem(path, kinds[path])
    return listing


def kind_problem(path: Path, kind: str) -> str:
    """Why an entry of ``kind`` (:func:`entry_kind`, not ``file``) cannot be read, as :func:`check_file` words it."""
    if kind == "broken symlink":
        try:
            return f"broken symlink (to {os.readlink(path)!r})"
        except OSError:
            return kind
    return kind if kind != "folder" else "a folder, not a file"


def list_stems(source: Source) -> tuple[dict[str, Path], list[str]]:
    """Map each image stem of a folder to its file (:func:`scan_folder` without the not-scored entries).

    Returns:
        ``(stem -> path, duplicates)``: ``duplicates`` lists the names dropped because another file with the
        same stem and a preferred extension exists (``IMAGE_EXTENSIONS`` order).
    """
    listing = scan_folder(source)
    return listing.found, listing.duplicates


def require_file(path: Path) -> None:
    """Raise :class:`ReadError` naming what ``path`` is when it is not a regular file (or a link to one)."""
    kind = entry_kind(path)
    if kind == "broken symlink":
        raise ReadError(f"broken symlink (to {os.readlink(path)!r})")
    if kind != "file":
        raise ReadError(kind if kind != "folder" else "a folder, not a file")
