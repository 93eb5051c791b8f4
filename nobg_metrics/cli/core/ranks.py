"""Which process of a run this one is, as far as what it prints goes: under ``torchrun`` every process but rank 0
stays silent, and the ranks that ``--procs`` starts (:mod:`nobg_metrics.cli.core.launch`) leave notes and reports to
their launcher. Read from the environment alone: importable without torch (the argument parser's modules use it).
"""

from __future__ import annotations

import os

LAUNCHED_ENV = "NOBG_METRICS_LAUNCHED"
"""Set in the ranks ``--procs`` starts: the launcher holds the ``--out`` lock and reports interruptions."""


def is_rank_zero() -> bool:
    """Whether this is rank 0 of the run (``RANK``; a process outside ``torchrun`` is rank 0)."""
    return os.environ.get("RANK", "0") == "0"


def prints_notes() -> bool:
    """Whether this process prints the run's notes: rank 0, and not a rank started by ``--procs``."""
    return is_rank_zero() and os.environ.get(LAUNCHED_ENV) != "1"
