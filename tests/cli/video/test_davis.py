"""``nobg-metrics eval --preset davis``: a DAVIS layout scored as davis2017-evaluation's semi-supervised protocol —
its two CSVs byte for byte and its console tables as pandas prints them (golden strings made with pandas 3.1.1),
the numbers against the port (tests/reference/davis_port.py), and the refusals (missing frames, an object id
above the gt's count, a sequence too short, flags it does not take)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from nobg_metrics.cli.eval.main import main
from nobg_metrics.cli.video.tables import (
    GLOBAL_COLUMNS,
    SEQUENCE_COLUMNS,
    db_statistics,
    to_string,
    write_csv,
)
from tests.helpers.davis_data import save_ids, write_davis
from tests.reference import davis_port as port

SEQUENCES = {"bike-packing": (5, 21, 34, 2), "blackswan": (4, 17, 13, 1), "tiny": (3, 5, 7, 1)}
ROWS = ("J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay")


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    return write_davis(tmp_path_factory.mktemp("davis"), SEQUENCES, seed=7, methods=("shifted", "missing"))


def _run(*argv: str) -> int:
    return main(["eval", "--preset", "davis", *argv])


def test_outputs_equal_the_reference_protocol(layout, tmp_path, capsys):
    out = tmp_path / "out"
    status = _run("--gt", str(layout["davis"]), "--pred", str(layout["shifted"]), f"M2={layout['missing']}",
                  "--out", str(out), "--device", "cpu")
    assert status == 0
    printed = capsys.readouterr().out
    document = json.loads((out / "results.json").read_text())
    assert [r["method"] for r in document["results"]] == ["shifted", "M2"]
    for method, folder in (("shifted", layout["shifted"]), ("M2", layout["missing"])):
        expected = port.evaluate_semisupervised(str(layout["davis"] / "Annotations" / "480p"), str(folder),
                                                list(SEQUENCES))
        result = next(r for r in document["results"] if r["method"] == method)
        for name, row in expected["per_object"].items():
            ours = [result["per_object"][name][key] for key in ROWS]
            assert np.abs(np.array(ours) - row).max() <= 1e-12, name
        for key, value in expected["global"].items():
            assert abs(result["metrics"][key] - value) <= 1e-12, key
        # the reference's CSVs: pandas to_csv(index=False, float_format="%.3f") of the same numbers
        glob = (out / method / "global_results-val.csv").read_text()
        assert glob == ",".join(GLOBAL_COLUMNS) + "\n" + ",".join(f"{expected['global'][k]:.3f}"
                                                                   for k in GLOBAL_COLUMNS) + "\n"
        seq = (out / method / "per-sequence_results-val.csv").read_text().splitlines()
        assert seq[0] == ",".join(SEQUENCE_COLUMNS)
        assert seq[1:] == [f"{name},{row[0]:.3f},{row[3]:.3f}" for name, row in expected["per_object"].items()]
        table = to_string(GLOBAL_COLUMNS, [[expected["global"][k] for k in GLOBAL_COLUMNS]])
        assert f"{method}:\n--------------------------- Global results for val -------" in printed
        assert table in printed
    frames = (out / "per_frame.csv").read_text().splitlines()
    assert frames[0] == "method,sequence,object,frame,J,F"
    assert len(frames) == 1 + 2 * (3 * 2 + 2 * 1 + 1 * 1)  # methods x scored frames x objects
    assert (out / "table.md").read_text().startswith("| method | J&F-Mean |")


def test_pandas_formatting_of_the_tables():
    assert to_string(GLOBAL_COLUMNS, [[0.8023456789, 0.76, 0.87654321, -0.0123, 1.0, 0.5, 0.25]]) == (
        " J&F-Mean  J-Mean  J-Recall  J-Decay  F-Mean  F-Recall  F-Decay\n"
        " 0.802346    0.76  0.876543  -0.0123     1.0       0.5     0.25")
    assert to_string(GLOBAL_COLUMNS, [[1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0]]) == (
        " J&F-Mean  J-Mean  J-Recall  J-Decay  F-Mean  F-Recall  F-Decay\n"
        "      1.0     1.0       1.0      0.0     1.0       1.0      0.0")
    assert to_string(GLOBAL_COLUMNS, [[0.5, 0.4, 0.3, math.nan, 0.6, 0.7, 5.55e-17]]) == (
        " J&F-Mean  J-Mean  J-Recall  J-Decay  F-Mean  F-Recall      F-Decay\n"
        "      0.5     0.4       0.3      NaN     0.6       0.7 5.550000e-17")
    rows = [["bike-packing_1", 0.5, 0.25], ["blackswan_1", 0.123456789, math.nan], ["a_2", 1.0, 1e-7]]
    assert to_string(SEQUENCE_COLUMNS, rows) == (
        "      Sequence   J-Mean       F-Mean\nbike-packing_1 0.500000 2.500000e-01\n"
        "   blackswan_1 0.123457          NaN\n           a_2 1.000000 1.000000e-07")


def test_csv_writing(tmp_path):
    rows = [["bike-packing_1", 0.5, 0.25], ["blackswan_1", 0.123456789, math.nan], ["a_2", 1.0, 1e-7]]
    write_csv(tmp_path / "s.csv", SEQUENCE_COLUMNS, rows)
    assert (tmp_path / "s.csv").read_text() == \
        "Sequence,J-Mean,F-Mean\nbike-packing_1,0.500,0.250\nblackswan_1,0.123,\na_2,1.000,0.000\n"


def test_statistics_follow_db_statistics():
    rng = np.random.default_rng(0)
    for length in (1, 2, 5, 100, 255, 256, 300):
        values = rng.random(length)
        ours, expected = np.array(db_statistics(values)), np.array(port.sequence_statistics(values))
        assert ((ours == expected) | (np.isnan(ours) & np.isnan(expected))).all()  # numpy's own sums: bit for bit
    assert not math.isnan(db_statistics(rng.random(300), "exact")[2])


def test_refusals(layout, tmp_path, capsys):
    gt = str(layout["davis"])
    broken = tmp_path / "broken"
    shutil.copytree(layout["shifted"], broken)
    (broken / "blackswan" / "00001.png").unlink()
    assert _run("--gt", gt, "--pred", str(broken), "--out", str(tmp_path / "o1")) == 1
    assert "00001.png is missing" in capsys.readouterr().err
    assert not (tmp_path / "o1").exists()  # nothing written, the folder it made removed
    extra = tmp_path / "extra"
    shutil.copytree(layout["shifted"], extra)
    ids = port.read_labels(str(extra / "tiny" / "00001.png"))
    ids[0, 0] = 9
    save_ids(ids.astype(np.uint8), extra / "tiny" / "00001.png")
    assert _run("--gt", gt, "--pred", str(extra), "--out", str(tmp_path / "o2")) == 1
    assert "object id 9" in capsys.readouterr().err
    short = tmp_path / "short"
    shutil.copytree(layout["davis"], short)
    for name in ("00001.png", "00002.png"):
        (short / "Annotations" / "480p" / "tiny" / name).unlink()
    assert _run("--gt", str(short), "--pred", str(layout["shifted"]), "--out", str(tmp_path / "o3")) == 1
    assert "at least 3" in capsys.readouterr().err
    assert _run("--gt", gt, "--pred", str(layout["shifted"]), "--metrics", "mae", "--out", str(tmp_path / "o4")) == 2
    assert "does not take --metrics" in capsys.readouterr().err
    assert _run("--gt", gt, "--out", str(tmp_path / "o5")) == 2
    assert _run("--gt", gt, "--pred", str(layout["shifted"]), "--out", str(layout["shifted"] / "o")) == 2


@pytest.mark.slow
def test_davis_sizes_and_a_long_sequence(tmp_path, capsys):
    folders = write_davis(tmp_path, seed=8, methods=("shifted",))
    out = tmp_path / "out"
    assert _run("--gt", str(folders["davis"]), "--pred", str(folders["shifted"]), "--out", str(out), "--quiet") == 0
    assert "their decay is NaN" in capsys.readouterr().err
    sequences = (folders["davis"] / "ImageSets" / "2017" / "val.txt").read_text().split()
    expected = port.evaluate_semisupervised(str(folders["davis"] / "Annotations" / "480p"), str(folders["shifted"]),
                                            sequences)
    result = json.loads((out / "results.json").read_text())["results"][0]
    for name, row in expected["per_object"].items():
        ours = np.array([np.nan if result["per_object"][name][k] is None else result["per_object"][name][k]
                         for k in ROWS])
        assert ((np.abs(ours - row) <= 1e-12) | (np.isnan(ours) & np.isnan(row))).all(), name
    exact = tmp_path / "exact"
    assert _run("--gt", str(folders["davis"]), "--pred", str(folders["shifted"]), "--out", str(exact), "--quiet",
                "--davis-decay", "exact") == 0
    assert json.loads((exact / "results.json").read_text())["results"][0]["metrics"]["J-Decay"] is not None
