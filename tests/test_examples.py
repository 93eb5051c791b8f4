"""The examples run and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_confusion_table_prints_both_methods_and_draws_the_curves(tmp_path):
    out = tmp_path / "curves.png"
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "confusion_table.py"), "--plot", str(out)],
                            check=True, capture_output=True, text=True, cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| method | f_measure_max") and "roc_auc" in lines[0]
    rows = [line for line in lines if line.startswith(("| methodA", "| methodB"))]
    assert len(rows) == 2 and all(len(row.split("|")) == len(lines[0].split("|")) for row in rows)
    assert out.stat().st_size > 10_000
