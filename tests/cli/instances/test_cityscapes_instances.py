"""``nobg-metrics instances --cityscapes``: folders in the Cityscapes layout scored as the port of the reference
scores the same images (bit for bit), the reference's table, results.json, how the files are read (16-bit gts,
masks of other classes not opened, a mask listed twice), clear errors naming the file and line, usage errors, notes."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from nobg_metrics.cli.entry import main
from nobg_metrics.cli.instances.cityscapes_command import table_lines
from nobg_metrics.io.cityscapes import read_gt
from tests.helpers.cityscapes_data import cityscapes_dataset, write_cityscapes_folders
from tests.reference import cityscapes_instances_port as port


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["instances", *argv])
    return status, out.getvalue(), err.getvalue()


def _folders(tmp_path, seed=0, sizes=((48, 80), (50, 50), (48, 80))):
    data = cityscapes_dataset(seed, list(sizes))
    gt_dir, result_dir = write_cityscapes_folders(tmp_path, data)
    return data, gt_dir, result_dir


def _none_to_nan(values):
    return [math.nan if v is None else v for v in values]


@pytest.mark.parametrize("iou_type, ratio", [("segm", None), ("boundary", "0.03")])
def test_scores_equal_the_port_and_the_table_is_the_references(tmp_path, iou_type, ratio):
    data, gt_dir, result_dir = _folders(tmp_path)
    flags = ["--dilation-ratio", ratio] if ratio else []
    status, out, err = _run("--cityscapes", "--gt-dir", str(gt_dir), "--result-dir", str(result_dir),
                            "--iou-type", iou_type, *flags, "--out", str(tmp_path / "out"))
    assert status == 0, err
    expected = port.evaluate(data, iou_type, float(ratio or 0.005), no_entries="zero")
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["dilation_ratio"] == float(ratio or 0.005) and document["images"] == 3
    per_class = [row["ap"] for row in document["per_class"]]
    np.testing.assert_array_equal(_none_to_nan(per_class), expected["ap_per_class"])
    matrix = [_none_to_nan(row) for row in document["reference"]["resultApMatrix"][0]]
    np.testing.assert_array_equal(matrix, expected["ap_matrix"])
    averages = document["reference"]["averages"]
    assert averages["allAp"] == expected["ap"] and averages["allAp50%"] == expected["ap_50"]
    assert averages["classes"]["car"]["ap50%"] == _none_to_nan([expected["ap_50_per_class"][2]])[0] or \
        math.isnan(expected["ap_50_per_class"][2])
    lines = table_lines(list(expected["ap_per_class"]), list(expected["ap_50_per_class"]), expected["ap"],
                        expected["ap_50"])
    assert out.splitlines() == lines and document["table"] == lines
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["results.json"]
    assert "instances cityscapes" in err  # progress on stderr


def test_gt_maps_are_read_as_pillow_gives_them(tmp_path):
    values = np.array([[7, 26000, 33999], [24, 0, 1000]], np.uint16)
    Image.fromarray(values).save(tmp_path / "a.png")
    assert Image.open(tmp_path / "a.png").mode == "I;16"
    assert read_gt(tmp_path / "a.png").tolist() == values.tolist()
    Image.fromarray(np.array([[7, 26]], np.uint8)).save(tmp_path / "b.png")
    assert read_gt(tmp_path / "b.png").tolist() == [[7, 26]]


def test_other_classes_are_not_opened_and_a_repeated_mask_takes_its_last_line(tmp_path):
    data, gt_dir, result_dir = _folders(tmp_path, seed=2, sizes=((40, 60),))
    text = result_dir / "testcity_000000_000000_pred.txt"
    lines = text.read_text().splitlines()
    first = lines[0].split()
    lines += ["masks/never_written.png 7 0.9", "", f"{first[0]} 26 0.123"]  # road: never read; blank; a repeat
    text.write_text("\n".join(lines) + "\n")
    masks = [mask for mask, _, _ in data[0][1]]
    expected_preds = [(masks[0], 26, 0.123), *list(data[0][1][1:])]
    expected = port.evaluate([(data[0][0], expected_preds)], "segm", no_entries="zero")
    status, _, err = _run("--cityscapes", "--gt-dir", str(gt_dir), "--result-dir", str(result_dir),
                          "--out", str(tmp_path / "out"), "--quiet")
    assert status == 0, err
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    np.testing.assert_array_equal(_none_to_nan(row["ap"] for row in document["per_class"]), expected["ap_per_class"])
    assert document["predictions"]["listed"] == len(data[0][1]) + 1


@pytest.mark.parametrize("edit, message", [
    (lambda r: (r / "testcity_000000_000000_pred.txt").unlink(), "no prediction for .*testcity_000000_000000"),
    (lambda r: (r / "sub").mkdir() or (r / "sub" / "testcity_000000_000000_b.txt").write_text(""),
     "several predictions"),
    (lambda r: _line(r, "masks/x.png 26"), r"_pred.txt:1: expected 'relative/mask.png LABEL_ID SCORE'"),
    (lambda r: _line(r, "/abs/x.png 26 0.5"), r"_pred.txt:1: the mask path must be relative"),
    (lambda r: _line(r, "masks/x.png 50 0.5"), r"_pred.txt:1: 50 is not a Cityscapes label id"),
    (lambda r: _line(r, "masks/x.png 26.5 0.5"), r"_pred.txt:1: 26.5 is not a Cityscapes label id"),
    (lambda r: _line(r, "masks/x.png 26 nan"), r"_pred.txt:1: the score is NaN"),
    (lambda r: _line(r, "masks/x.png 26 0.5"), r"_pred.txt:1: the mask .*x.png does not exist"),
    (lambda r: _mask(r, (10, 12)) or _line(r, "masks/small.png 26 0.5"),
     r"_pred.txt:1: the mask .* is 12x10, its gt 80x48"),
])
def test_input_errors_name_the_file_and_line(tmp_path, edit, message):
    _, gt_dir, result_dir = _folders(tmp_path)
    edit(result_dir)
    status, out, err = _run("--cityscapes", "--gt-dir", str(gt_dir), "--result-dir", str(result_dir), "--quiet",
                            "--out", str(tmp_path / "out"))
    assert status == 1 and out == "", err
    assert re.search(message, err), err
    assert not (tmp_path / "out" / "results.json").exists()


def _line(result_dir, line):
    path = result_dir / "testcity_000000_000000_pred.txt"
    path.write_text(line + "\n" + path.read_text())


def _mask(result_dir, size):
    Image.fromarray(np.zeros(size, np.uint8)).save(result_dir / "masks" / "small.png")


def test_gt_errors(tmp_path):
    _, gt_dir, result_dir = _folders(tmp_path, sizes=((20, 30),))
    gt = gt_dir / "testcity" / "testcity_000000_000000_gtFine_instanceIds.png"
    Image.fromarray(np.full((20, 30), 500, np.uint16)).save(gt)
    status, _, err = _run("--cityscapes", "--gt-dir", str(gt_dir), "--result-dir", str(result_dir), "--quiet")
    assert status == 1 and "holds 500" in err and gt.name in err
    Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(gt)
    status, _, err = _run("--cityscapes", "--gt-dir", str(gt_dir), "--result-dir", str(result_dir), "--quiet")
    assert status == 1 and "mode RGB" in err
    status, _, err = _run("--cityscapes", "--gt-dir", str(tmp_path / "results"), "--result-dir", str(result_dir))
    assert status == 1 and "no ground truth" in err


@pytest.mark.parametrize("argv, message", [
    (["--cityscapes", "--gt-dir", "g"], "needs --gt-dir and --result-dir"),
    (["--gt-dir", "g", "--result-dir", "r"], "need --cityscapes"),
    (["--cityscapes", "--gt-dir", "g", "--result-dir", "r", "--gt-json-file", "a.json"], "--gt-json-file is a COCO"),
    (["--cityscapes", "--gt-dir", "g", "--result-dir", "r", "--lvis"], "--lvis is a COCO"),
    ([], "required: --gt-json-file, --dt-json-file"),
])
def test_usage_errors(argv, message):
    status, _, err = _run(*argv)
    assert status == 2 and message in err, err


def test_notes_on_the_references_environment_variables_and_cache(tmp_path, monkeypatch):
    _, gt_dir, result_dir = _folders(tmp_path, sizes=((20, 30),))
    (result_dir / "gtInstances.json").write_text("{}")
    monkeypatch.setenv("DILATION_RATIO", "0.01")
    status, _, err = _run("--cityscapes", "--gt-dir", str(gt_dir), "--result-dir", str(result_dir))
    assert status == 0
    assert "DILATION_RATIO='0.01' is set: ignored" in err and "gtInstances.json exists" in err


def test_help_does_not_load_torch():
    code = ("import sys\nfrom nobg_metrics.cli.entry import main\ntry:\n    main(['instances', '--help'])\n"
            "except SystemExit:\n    pass\nprint('torch' in sys.modules, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "--cityscapes" in result.stdout and result.stderr.strip().endswith("False")
