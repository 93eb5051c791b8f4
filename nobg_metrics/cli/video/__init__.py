"""DAVIS 2017 semi-supervised J & F of result folders (``nobg-metrics eval --preset davis``;
docs/boundary_measures.md)."""

__all__ = ["layout", "options", "run", "stats", "tables"]
"""Its modules (imported by path: ``nobg_metrics.cli.video.<module>``)."""
