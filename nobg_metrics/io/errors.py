"""The errors of the file-format layer: inputs that are missing or cannot be read.

Standard library only: every reader of :mod:`nobg_metrics.io` raises these, and the command prints them without a
traceback (exit status 1; ``nobg_metrics.cli.core.errors`` re-exports :class:`InputError` for its own modules).
"""

from __future__ import annotations

__all__ = ["BadPolygon", "EntryError", "InputError", "InvalidMap", "MalformedRle", "ReadError", "SegmentationError"]


class InputError(Exception):
    """Inputs that are missing or cannot be read (the command's exit status 1, shown without a traceback)."""


class ReadError(Exception):
    """A file that exists but cannot be decoded into a map (or a folder that cannot be listed)."""


class InvalidMap(ReadError):
    """A file that decodes, but into values its role forbids (a trimap level other than 0, 128, 255)."""


class EntryError(ValueError):
    """One entry of a batch of encoded masks that cannot be decoded: ``index`` is its position in the call,
    ``reason`` what is wrong (the reader turns it into an :class:`InputError` naming the file and the entry)."""

    kind = "entry"

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"{self.kind} {index}: {reason}")
        self.index, self.reason = index, reason


class MalformedRle(EntryError):
    """An RLE that cannot be decoded."""

    kind = "RLE"


class BadPolygon(EntryError):
    """A polygon that cannot be drawn."""

    kind = "polygon"


class SegmentationError(EntryError):
    """A COCO ``segmentation`` (of any form) that cannot be read."""

    kind = "segmentation"
