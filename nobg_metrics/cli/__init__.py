"""The ``nobg-metrics`` command: score folders of predictions against gt folders (docs/cli.md).

Modules: ``main`` (arguments, the run's steps), ``config`` (datasets x methods from flags or config
files), ``files`` (reading and matching image files), ``jobs`` (matching into per-method jobs),
``runner`` (streaming scoring, DDP), ``dist`` (torchrun helpers), ``launch`` (``--procs`` ranks),
``outputs`` (json/csv/md/tex, atomic writes, the ``--out`` lock), ``signals`` (interruption, no
orphans), ``plots`` (curves), ``progress`` (console bars).
"""

from __future__ import annotations

from nobg_metrics.cli.main import main

__all__ = ["main"]
