"""The images of a shared ``instances`` run, taken from the front by the scoring process and from the back by its
helper (:mod:`~nobg_metrics.cli.instances.shared_scoring`): two integers in memory both processes share, behind a
lock. Importable without torch."""

from __future__ import annotations

import multiprocessing
from multiprocessing.sharedctypes import RawArray


class Claims:
    """Images ``0 .. n - 1`` taken one at a time from the front (the scoring process) and from the back (the
    helper) until none is left; shared by the two processes (made before the fork; ``n`` set by the helper once it
    has read the files).

    Examples:
        >>> claims = Claims(); claims.set_count(3)
        >>> claims.front(), claims.back(), claims.front(), claims.back()
        (0, 2, 1, None)
    """

    def __init__(self) -> None:
        self._lock = multiprocessing.get_context("fork").Lock()
        self._ends = RawArray("q", [0, 0])  # the next image from the front, one past the next from the back

    def set_count(self, count: int) -> None:
        """``count`` images to share (before either side takes one)."""
        self._ends[1] = count

    def front(self) -> int | None:
        """The next image from the front, or ``None`` if none is left."""
        with self._lock:
            if self._ends[0] >= self._ends[1]:
                return None
            self._ends[0] += 1
            return self._ends[0] - 1

    def back(self) -> int | None:
        """The next image from the back, or ``None`` if none is left."""
        with self._lock:
            if self._ends[0] >= self._ends[1]:
                return None
            self._ends[1] -= 1
            return self._ends[1]

    def back_count(self, count: int) -> int:
        """How many of the ``count`` images the back has taken (once none is left, the last ``back_count`` are the
        helper's)."""
        return count - int(self._ends[1])

    def front_count(self) -> int:
        """How many images the front has taken (the first ``front_count()`` are the scoring process's)."""
        return int(self._ends[0])

    def taken_from_back(self, index: int) -> bool:
        """Whether image ``index`` is the helper's (taken from the back, or about to be: the front will not reach
        it)."""
        return index >= self._ends[1]
