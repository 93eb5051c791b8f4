"""The ``nobg-metrics`` command: score folders of predictions against gt folders (docs/cli.md).

Modules: ``entry`` (the console script: quiet start-up interruption, then ``main``), ``main`` (arguments, the
run's steps), ``config`` (datasets x methods from flags or config files), ``files`` (reading and matching image
files), ``jobs`` (matching into per-method jobs), ``runner`` (streaming scoring, DDP), ``dist`` (torchrun
helpers), ``launch`` (``--procs`` ranks), ``outputs`` (json/csv/md/tex, atomic writes, the ``--out`` lock),
``signals`` (interruption, no orphans), ``plots`` (curves), ``progress`` (console bars); ``instances_command`` /
``instances`` (``nobg-metrics instances``: COCO / LVIS instance AP of JSON files) with ``coco_files``,
``coco_results`` (their readers) and ``coco_rle``, ``coco_polygons``, ``coco_intervals``, ``coco_masks`` (the mask
codec).
"""

from __future__ import annotations

from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name == "main":  # imported on use: importing the package stays light (see ``entry``)
        from nobg_metrics.cli.main import main

        return main
    raise AttributeError(f"module 'nobg_metrics.cli' has no attribute {name!r}")
