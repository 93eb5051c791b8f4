"""The ``nobg-metrics`` command (docs/cli.md): one folder per subcommand, what they share below them.

- ``entry`` (the console script: quiet start-up interruption, then the subcommand) and ``parser`` (every flag,
  importable without torch);
- ``eval/`` — folders of maps (SOD, DIS, COD, matting, BiRefNet's and DAVIS' layouts as ``--preset``s): ``main``
  (the run's steps), ``config`` / ``jobs`` (datasets x methods), ``loading`` / ``batching`` / ``runner`` (streaming
  scoring, DDP), ``cache``, ``metric_sets`` / ``presets`` / ``protocols`` / ``toolkit`` (which metrics, which
  columns);
- ``instances/`` — COCO / LVIS / Cityscapes instance AP and Boundary AP of results files; ``panoptic/`` — PQ and
  Boundary PQ of PNG + JSON folders; ``video/`` — DAVIS J & F (``eval --preset davis``);
- ``plot/`` and ``merge/`` — redraw a run's curves, one run from several;
- ``outputs/`` — what a run writes: results.json and the tables, curves, statistics, the report page;
- ``core/`` — what every subcommand shares: errors, exit statuses, the guard, signals, start-up, atomic writing,
  ranks and processes, progress bars, OS names.

The files themselves are read by the library's format layer, :mod:`nobg_metrics.io`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":  # imported on use: importing the package stays light (see ``entry``)
        from nobg_metrics.cli.eval.main import main

        return main
    raise AttributeError(f"module 'nobg_metrics.cli' has no attribute {name!r}")
