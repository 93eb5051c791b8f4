"""``nobg-metrics plot RUN_DIR``: a run's curves redrawn from its saved curve data, without rescoring."""

__all__ = ["command"]
"""Its modules (imported by path: ``nobg_metrics.cli.plot.<module>``)."""
