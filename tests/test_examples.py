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


@pytest.mark.slow
def test_instance_lightning_prints_box_mask_and_boundary_ap_with_per_class_values(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "instance_lightning.py"), "--logdir",
                             str(tmp_path / "logs")], check=True, capture_output=True, text=True, cwd=tmp_path)
    values = dict(line.split() for line in result.stdout.splitlines() if line.startswith("val/"))
    for iou_type in ("bbox", "segm", "boundary"):
        assert 0 < float(values[f"val/{iou_type}_map"]) < 1
        assert {f"val/{iou_type}_map_per_class/{c}" for c in (1, 2, 5)} <= set(values)
    assert list((tmp_path / "logs" / "instances").glob("version_0/events.out.tfevents.*"))
