"""A plain-text progress bar per dataset x method (tqdm when installed and writing to a terminal)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from nobg_metrics.cli.core.os_names import readable


class Progress:
    """``DATASET / METHOD  [#####.....]  50/100  12.3 img/s`` on stderr; silent when ``enabled`` is False.

    On a terminal the line is redrawn in place; otherwise it is printed at 0, 25, 50, 75 and 100 %.
    """

    def __init__(self, label: str, total: int, *, enabled: bool = True, stream: TextIO | None = None,
                 start: float | None = None) -> None:
        self.label, self.total, self.enabled = readable(label), max(total, 0), enabled  # OS names: \xNN
        self.stream = stream or sys.stderr
        self.done, self._quarter = 0, -1
        self.start = time.perf_counter() if start is None else start  # ``time.perf_counter()`` the work began
        self.tty = self.stream.isatty()
        self._tqdm = None
        if enabled and self.tty:
            try:
                from tqdm import tqdm  # optional (not a dependency): used on a terminal when installed
                self._tqdm = tqdm(total=self.total, desc=self.label, unit="img", file=self.stream, leave=True)
            except ImportError:
                pass
        self._draw()

    def update(self, count: int = 1) -> None:
        """Count ``count`` more scored images."""
        self.done += count
        if self._tqdm is not None:
            self._tqdm.update(count)
        else:
            self._draw()

    def close(self) -> None:
        """Finish the line."""
        if not self.enabled:
            return
        if self._tqdm is not None:
            self._tqdm.close()
        elif self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self) -> None:
        if not self.enabled or self._tqdm is not None:
            return
        fraction = self.done / self.total if self.total else 1.0
        quarter = int(fraction * 4)
        if not self.tty and quarter == self._quarter:
            return
        self._quarter = quarter
        rate = self.done / max(time.perf_counter() - self.start, 1e-9)
        bar = "#" * int(fraction * 30) + "." * (30 - int(fraction * 30))
        line = f"{self.label}  [{bar}]  {self.done}/{self.total}  {rate:.1f} img/s"
        self.stream.write(("\r" + line) if self.tty else (line + "\n"))
        self.stream.flush()
