"""The command's names that the argument parser needs, importable without torch (``nobg-metrics --help`` is instant).

Tasks and protocols (:mod:`nobg_metrics.cli.protocols` holds what each one means), the tier names (the keys of
:data:`nobg_metrics.collection.TIERS`, checked equal by a test) and BiRefNet's own columns.
"""

from __future__ import annotations

SOD_PROTOCOLS = ("pysodmetrics", "raw")
MATTING_PROTOCOLS = ("dim", "p3m")
BIREFNET_TASKS = ("DIS5K", "COD", "HRSOD", "General", "General-2K", "Matting")
TASKS = ("sod", "matting") + BIREFNET_TASKS
PROTOCOLS = SOD_PROTOCOLS + MATTING_PROTOCOLS + ("birefnet",)

TIER_NAMES = ("cheap", "medium", "expensive")
"""The cost tiers of ``make_collection`` (cumulative)."""

PROTOCOL_ONLY_METRICS = ("birefnet_mse", "birefnet_mba", "birefnet_hce")
"""BiRefNet's own columns (not collection names): only with --protocol birefnet."""
