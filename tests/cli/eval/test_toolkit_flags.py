"""PySODEvalToolkit's command line (``eval.py``) on ``nobg-metrics eval`` (issue 35 item 10): its metric names with its
meaning (checked against PySODMetrics, which the toolkit calls), its flags accepted or refused with what to use
instead, and near-miss names answered with the closest ones."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import py_sod_metrics
import pytest
from PIL import Image

from nobg_metrics.cli.eval.main import EXIT_USAGE, main
from nobg_metrics.cli.eval.toolkit import (
    REFUSED,
    toolkit_entries,
    toolkit_metrics,
    toolkit_names,
)
from nobg_metrics.cli.parser import build_parser
from nobg_metrics.collection import METRIC_NAMES
from tests.cli.folders import make_dataset, read_results

FAST = ["--workers", "0", "--quiet", "--no-plots", "--no-report", "--procs", "1"]
SUPPORTED = ["mae", "em", "sm", "wfm", "msiou", "bif1", "biiou", "bikappa", "bioa", "biprecision", "birecall", "dice",
             "f1", "fmeasure", "iou", "precision", "recall", "specificity"]
"""PySODEvalToolkit utils/recorders/metric_recorder.py SUPPORTED_METRICS (its --metric-names choices)."""


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toolkit_flags")
    make_dataset(root, count=4, formats=("u8",))
    return root


def test_every_toolkit_name_stands_for_registered_entries():
    assert set(SUPPORTED) <= set(toolkit_metrics())
    for name in toolkit_names():
        assert set(toolkit_entries(name)) <= set(METRIC_NAMES), name
    assert toolkit_entries("em") == ("e_measure_max", "e_measure_mean", "e_measure_adaptive")  # maxem avgem adpem
    assert toolkit_entries("adpfmeasure") == ("f_measure_adaptive",)
    assert toolkit_entries("wFm") == ("weighted_f_measure",)
    assert toolkit_entries("MaxF") == toolkit_entries("maxf") == ("f_measure_max",)  # the converter's, any case


@pytest.mark.parametrize("flag", sorted(REFUSED))
def test_output_file_flags_say_what_to_use_instead(flag, capsys):
    with pytest.raises(SystemExit) as stopped:  # the parser: before torch, nothing scored
        build_parser().parse_args(["eval", flag, "x"])
    err = capsys.readouterr().err
    assert stopped.value.code == EXIT_USAGE and f"{flag} (PySODEvalToolkit's flag) has no use here" in err
    assert "--out" in err or "--combined" in err


def test_a_video_data_type_is_refused_with_the_reason(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "--data-type", "video"])
    assert "score the frames as images" in capsys.readouterr().err


def test_the_toolkit_command_line_runs_with_its_meaning(folders, tmp_path, capsys):
    """``--metric-names sm mae fmeasure bif1 bioa --num-bits 4 --num-workers 0 --to-overwrite``: the entries the
    toolkit reports, in its order, at 4 decimals; the binary measures pooled over the dataset, equal to PySODMetrics'
    ``FmeasureV2`` with ``with_binary=True, sample_based=False`` (what its recorder builds)."""
    out = tmp_path / "out"
    assert main(["eval", "--gt", str(folders / "gt"), "--pred", str(folders / "u8"), "--out", str(out),
                 "--metric-names", "sm", "mae", "fmeasure", "bif1", "bioa", "--num-bits", "4", "--num-workers", "0",
                 "--to-overwrite", *FAST[2:]]) == 0
    assert "sm = s_measure" in capsys.readouterr().err
    document = read_results(out)
    assert document["metrics"] == ["s_measure", "mae", "f_measure_max", "f_measure_mean", "f_measure_adaptive",
                                   "f1_pooled", "accuracy_pooled"]
    assert re.search(r"\| u8 \| 4 \| \d\.\d{4} \| \d\.\d{4} \|", (out / "table.md").read_text())  # --num-bits 4
    kwargs = {"with_dynamic": False, "with_adaptive": False, "with_binary": True, "sample_based": False}
    reference = py_sod_metrics.FmeasureV2(metric_handlers={"bif1": py_sod_metrics.FmeasureHandler(**kwargs, beta=1),
                                                           "bioa": py_sod_metrics.OverallAccuracyHandler(**kwargs)})
    for path in sorted((folders / "gt").glob("*.png")):
        pred = np.asarray(Image.open(folders / "u8" / path.name))
        reference.step(pred=pred, gt=np.asarray(Image.open(path)), normalize=True)
    results = reference.get_results()
    values = document["results"][0]["metrics"]
    assert abs(values["f1_pooled"] - float(results["bif1"]["binary"])) <= 1e-12
    assert abs(values["accuracy_pooled"] - float(results["bioa"]["binary"])) <= 1e-12


@pytest.mark.parametrize("given, words", [("fmesure", ["'fmesure'", "did you mean fmeasure"]),
                                          ("Weighted_F_Measure", ["did you mean weighted_f_measure"]),
                                          ("s_mesure", ["did you mean s_measure"])])
def test_near_misses_are_answered_with_the_closest_names(folders, tmp_path, capsys, given, words):
    status = main(["eval", "--gt", str(folders / "gt"), "--pred", str(folders / "u8"), "--out", str(tmp_path / "o"),
                   "--metrics", given, *FAST])
    err = capsys.readouterr().err
    assert status == EXIT_USAGE and all(word in err for word in words), err
    assert "docs/metric_names.md" in err and not (tmp_path / "o").exists()


def test_toolkit_names_in_metrics_and_a_collection_name_wins_there(folders, tmp_path):
    out = tmp_path / "out"
    assert main(["eval", "--gt", str(folders / "gt"), "--pred", str(folders / "u8"), "--out", str(out),
                 "--metrics", "SM", "dice", "maxem", *FAST]) == 0
    assert read_results(out)["metrics"] == ["s_measure", "dice", "e_measure_max"]
