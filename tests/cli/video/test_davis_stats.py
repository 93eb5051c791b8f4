"""``eval --preset davis`` statistics: sequences as the bootstrap unit (each resample's global numbers equal the
means over the drawn sequences' objects), intervals holding the estimates, seeded draws, the paired test of two
methods, ``--bootstrap 0`` writing none, and the sums-to-values step equal to ``global_row``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nobg_metrics.cli.eval.main import main
from nobg_metrics.cli.outputs.stats import generator, resample_indices
from nobg_metrics.cli.video.stats import davis_values, sequence_table
from nobg_metrics.cli.video.tables import GLOBAL_COLUMNS, global_row
from tests.helpers.davis_data import write_davis

SEQUENCES = {"bike-packing": (5, 21, 34, 2), "blackswan": (4, 17, 13, 1), "tiny": (3, 5, 7, 1),
             "two_parts": (4, 9, 11, 2)}
ROWS = ("J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay")


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    return write_davis(tmp_path_factory.mktemp("davis"), SEQUENCES, seed=7, methods=("shifted", "missing"))


def _run(layout, out, *extra: str) -> int:
    return main(["eval", "--preset", "davis", "--gt", str(layout["davis"]), "--pred", str(layout["shifted"]),
                 f"M2={layout['missing']}", "--out", str(out), "--device", "cpu", "--quiet", *extra])


def test_sequence_intervals_and_the_paired_test(layout, tmp_path):
    assert _run(layout, tmp_path / "o", "--bootstrap", "50", "--seed", "2") == 0
    document = json.loads((tmp_path / "o" / "results.json").read_text())
    stats = json.loads((tmp_path / "o" / "stats.json").read_text())
    sequences = sorted(SEQUENCES)
    assert (stats["unit"], stats["units"], stats["sequences"]) == ("sequence", 4, sequences)
    index = np.concatenate(list(resample_indices(generator(2, "davis val", "bootstrap"), 4, 50)))
    for result in document["results"]:
        values = stats["results"][result["method"]]
        assert list(values) == list(GLOBAL_COLUMNS)
        objects = {name: [row[key] for key in ROWS] for name, row in result["per_object"].items()}
        for name in GLOBAL_COLUMNS:
            entry = values[name]
            assert entry["estimate"] == result["metrics"][name]
            assert entry["low"] <= entry["estimate"] <= entry["high"]
        # a resample: the objects of its drawn sequences (a sequence drawn twice counts its objects twice)
        resampled = []
        for row in index:
            rows = [objects[key] for s in row for key in objects if key.rsplit("_", 1)[0] == sequences[s]]
            resampled.append(global_row(dict(enumerate(rows)))["J&F-Mean"])
        expected = np.quantile(resampled, [0.025, 0.975])
        assert abs(values["J&F-Mean"]["low"] - expected[0]) <= 1e-12
        assert abs(values["J&F-Mean"]["high"] - expected[1]) <= 1e-12
    (pair,) = stats["comparisons"]
    assert (pair["a"], pair["b"]) == ("shifted", "M2")
    entry = pair["values"]["J&F-Mean"]
    assert entry["exact"] and entry["p_value"] is not None and 1 / 16 <= entry["p_value"] <= 1
    assert "## shifted − M2" in (tmp_path / "o" / "stats.md").read_text()


def test_seeded_and_switched_off(layout, tmp_path):
    for name, seed in (("a", "4"), ("b", "4"), ("c", "5")):
        assert _run(layout, tmp_path / name, "--bootstrap", "30", "--seed", seed) == 0
    text = {name: (tmp_path / name / "stats.json").read_text() for name in "abc"}
    assert text["a"] == text["b"] and text["a"] != text["c"]
    assert _run(layout, tmp_path / "off", "--bootstrap", "0") == 0
    assert not (tmp_path / "off" / "stats.json").exists() and not (tmp_path / "off" / "stats.md").exists()
    for name in ("results.json", "table.md", "per_frame.csv"):
        assert (tmp_path / "off" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()


def test_the_values_of_sums_are_the_global_row():
    rng = np.random.default_rng(0)
    per_object = {f"s{k // 3}_x_{k % 3 + 1}": tuple(rng.uniform(-0.2, 1.0, 6)) for k in range(12)}
    sums = sequence_table(per_object, [f"s{k}_x" for k in range(4)]).sum(axis=0)[None]
    values, expected = davis_values(sums), global_row(per_object)
    for name in GLOBAL_COLUMNS:
        assert abs(values[name][0] - expected[name]) <= 1e-14
