"""The vendored torchmetrics tests are its files at the recorded tag with only the imports swapped, and the COCO data
are the recorded files: undoing the swap recorded in ``vendored.json`` must give back each original's sha256.

Runs offline in the fast tier; ``python tools/peer_tests.py write`` rewrites the files and ``vendored.json``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

PEER = Path(__file__).resolve().parent
MANIFEST = json.loads((PEER / "vendored.json").read_text())


def _unswap(text: str) -> str:
    """``text`` with each of our import lines put back to torchmetrics' (whole lines only)."""
    back = {ours: theirs for theirs, ours in MANIFEST["swaps"]}
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        lines.append(back.get(body, body) + line[len(body) :])
    return "".join(lines)


@pytest.mark.parametrize("dest", sorted(MANIFEST["files"]))
def test_vendored_file_is_the_original_with_imports_swapped(dest: str) -> None:
    text = (PEER / dest).read_text()
    assert "torchmetrics.detection" not in text, "a metric import was left on torchmetrics"
    original = _unswap(text).encode()
    assert hashlib.sha256(original).hexdigest() == MANIFEST["files"][dest]["sha256_original"]


@pytest.mark.parametrize("dest", sorted(MANIFEST["data"]))
def test_data_file_is_the_recorded_one(dest: str) -> None:
    assert hashlib.sha256((PEER / dest).read_bytes()).hexdigest() == MANIFEST["data"][dest]["sha256"]


def test_every_swap_is_used() -> None:
    texts = "".join((PEER / dest).read_text() for dest in MANIFEST["files"])
    assert all(ours in texts for _, ours in MANIFEST["swaps"])
