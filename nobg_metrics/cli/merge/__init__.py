"""``nobg-metrics merge RUN RUN ... --out DIR``: one run's outputs from several runs' records (docs/incremental.md)."""
