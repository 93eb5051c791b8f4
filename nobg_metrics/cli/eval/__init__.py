"""``nobg-metrics eval``: folders of predicted maps against gt folders, the way benchmark tables are made
(docs/cli.md)."""

__all__ = [
    "batching", "cache", "config", "config_options", "curve_collection", "file_digests", "jobs", "loading", "main",
    "metric_sets", "presets", "protocols", "runner", "toolkit",
]
"""Its modules (imported by path: ``nobg_metrics.cli.eval.<module>``)."""
