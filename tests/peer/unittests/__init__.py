"""The names torchmetrics' ``tests/unittests/__init__.py`` gives the vendored detection tests, without what they do not
need here: its reference cache (``cachier``: references are recomputed each run) and its process pool set-up.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from torch import Tensor

# tests/peer: torchmetrics' tests read their data from <tests>/_data
_PATH_ALL_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the number of processes of torchmetrics' DDP tests (those are skipped here: see tests/peer/conftest.py)
NUM_PROCESSES = 2


def _reference_cachier(function):
    """No cache: the reference is computed on each call."""
    return function


class _Input(NamedTuple):
    preds: Tensor
    target: Tensor


__all__ = ["NUM_PROCESSES", "_PATH_ALL_TESTS", "_Input", "_reference_cachier"]
