"""What every subcommand of the command shares: errors and exit statuses, the guard, signals, start-up, atomic
writing and the --out lock, ranks and processes, progress bars, OS names (standard library where the parser needs
it)."""

__all__ = [
    "arguments", "dist", "errors", "guard", "json_yaml", "launch", "names", "os_names", "progress", "ranks", "signals",
    "startup", "statuses", "threads", "writing",
]
"""Its modules (imported by path: ``nobg_metrics.cli.core.<module>``)."""
