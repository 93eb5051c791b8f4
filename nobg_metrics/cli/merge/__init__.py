"""``nobg-metrics merge RUN RUN ... --out DIR``: one run's outputs from several runs' records (docs/incremental.md)."""

__all__ = ["command"]
"""Its modules (imported by path: ``nobg_metrics.cli.merge.<module>``)."""
