"""``nobg-metrics plot RUN_DIR``: a run's curves redrawn from its saved curve data, without rescoring."""
