"""The command's exit statuses, for every subcommand (importable without torch). docs/cli.md "Exit status"."""

from __future__ import annotations

EXIT_OK = 0
"""Scored and written."""
EXIT_INPUTS = 1
"""Missing or unreadable inputs, a gt folder without images, nothing scored, outputs not writable."""
EXIT_USAGE = 2
"""A bad command line or config, or an --out that cannot be used (checked before scoring)."""
EXIT_INTERNAL = 3
"""An internal error (printed with its traceback), or a process of the run that died unexpectedly."""
EXIT_BUSY = 4
"""--out is in use by another run (its lock is held)."""
