"""A results file's detections are decoded a chunk's worth at a time (``nobg_metrics.io.json_stream.array_runs``) and
checked on a fast path (``nobg_metrics.io.coco.results``): the same values as ``json.load`` and as the one-by-one
path, and the same error for a file that is not valid JSON, wherever the chunks and the runs are cut."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from nobg_metrics.io.coco.annotations import load_ground_truth
from nobg_metrics.io.coco.results import _detection, load_results
from nobg_metrics.io.errors import InputError
from nobg_metrics.io.json_stream import array_runs
from tests.io.json_oracle import json_load, streamed

TRAPS = ["}, {", "},{", "}, {\"score\": 1}", "\\\"}, {\\\"", "]}, {[", "\\u007d, {"]
"""Strings holding what a run's cut looks for (an object's end, a comma, an object's start)."""


def _detections(count: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        row: dict = {"image_id": 9, "category_id": 3, "score": round(rng.random(), 3),
                     "segmentation": {"size": [6, 8], "counts": "04L4"}, "bbox": [0.0, 1.5, 2.0, 3.0]}
        if index % 3 == 0:
            row["note"] = TRAPS[index % len(TRAPS)]
        if index % 5 == 0:
            row["extra"] = {"nested": [{"a": TRAPS[(index + 1) % len(TRAPS)]}, {"b": [1e-3, -0.0, 12]}]}
        rows.append(row)
    return rows


def _layouts(rows: list[dict]) -> list[str]:
    return [json.dumps(rows), json.dumps(rows, separators=(",", ":")), json.dumps(rows, indent=1),
            json.dumps(rows, separators=("\r\n ,\t", " :\n"))]


@pytest.mark.parametrize("chunk", [16, 100, 333, 1000, 1 << 20])
def test_runs_give_json_loads_values_and_positions(tmp_path, chunk):
    path = tmp_path / "dt.json"
    rows = _detections(60)
    for text in _layouts(rows):
        path.write_text(text)
        runs = list(array_runs(path, "--dt-json-file", "expected a list", chunk=chunk))
        assert [value for _, values in runs for value in values] == rows
        assert [start for start, _ in runs] == [sum(len(v) for _, v in runs[:i]) for i in range(len(runs))]
        assert all(values for _, values in runs)
        if chunk >= 1000:  # a chunk holds several detections: they come as runs
            assert len(runs) < len(rows)


@pytest.mark.parametrize("chunk", [50, 200, 1 << 20])
def test_every_truncation_gives_json_loads_error(tmp_path, chunk):
    path = tmp_path / "dt.json"
    text = json.dumps(_detections(8))
    for cut in range(0, len(text) - 1, 3):
        path.write_text(text[:cut])
        assert streamed(path, chunk) == json_load(path), cut


@pytest.mark.parametrize("chunk", [64, 500, 1 << 20])
def test_a_mutated_character_gives_json_loads_result(tmp_path, chunk):
    """One character replaced (anywhere, by a JSON-significant one): the error of ``json.load`` at its place, or the
    values it gives when the file stays valid."""
    path = tmp_path / "dt.json"
    text = json.dumps(_detections(12, seed=1))
    rng = random.Random(2)
    for _ in range(250):
        at = rng.randrange(len(text))
        path.write_text(text[:at] + rng.choice('{}[],:"\\ x1e-') + text[at + 1:])
        assert streamed(path, chunk) == json_load(path), at


def _gt(path: Path) -> Path:
    path.write_text(json.dumps({"images": [{"id": 9, "height": 6, "width": 8}, {"id": 10, "height": 6, "width": 8}],
                                "categories": [{"id": 3}], "annotations": []}))
    return path


ENTRIES = [
    {"image_id": 9, "category_id": 3, "score": 0.5, "segmentation": []},
    {"image_id": 10, "category_id": 7, "score": 0.5, "segmentation": [], "bbox": [1.0, 2.0, 3.5, 4.0]},
    {"image_id": 9, "category_id": 3, "score": 1, "segmentation": [], "bbox": [1, 2, 3, 4]},
    {"image_id": 9, "category_id": 3, "score": 0.5, "segmentation": [], "bbox": [1.0, 2.0, 3, 4.0]},
    {"image_id": 9, "category_id": 3, "score": 0.5, "segmentation": [], "bbox": [1e308, 1e308, 2.0, 3.0]},
    {"image_id": 9, "category_id": 3, "score": 0.5, "segmentation": [], "bbox": []},
    {"image_id": 9, "category_id": 3, "score": 0.5, "segmentation": [], "bbox": [1.0, 2.0, 3.0]},
    {"image_id": 9, "category_id": 3, "score": 0.5, "segmentation": [], "bbox": [1.0, 2.0, True, 4.0]},
    {"image_id": 9, "category_id": 3, "score": 0.5, "segmentation": [], "bbox": "box"},
]
"""Detections the fast path keeps and those it leaves to the one-by-one check (int score, int or odd boxes)."""

WRONG = [
    {"image_id": 9, "category_id": 3, "score": float("inf"), "segmentation": []},
    {"image_id": 9, "category_id": 3, "score": float("nan"), "segmentation": []},
    {"image_id": 9, "category_id": 3, "score": True, "segmentation": []},
    {"image_id": 9.0, "category_id": 3, "score": 0.5, "segmentation": []},
    {"image_id": 9, "category_id": False, "score": 0.5, "segmentation": []},
    {"image_id": 11, "category_id": 3, "score": 0.5, "segmentation": []},
    {"category_id": 3, "score": 0.5, "segmentation": []},
    {"image_id": 9, "category_id": 3, "score": 0.5},
    [9, 3, 0.5],
]


def test_the_fast_path_keeps_what_the_check_keeps(tmp_path):
    gt = load_ground_truth(_gt(tmp_path / "gt.json"))
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(ENTRIES))
    results = load_results(path, gt)
    read = [d for image in (9, 10) for d in results.per_image.get(image, [])]
    expected = [_detection(path, position, entry, gt) for position, entry in enumerate(ENTRIES)]
    assert sorted(read, key=lambda d: d.position) == [d for d in expected if d.category_id == 3]
    assert [(d.box, d.box_area) for d in expected[:2]] == [(expected[0].box, None), (14.0, None)]


@pytest.mark.parametrize("entry", WRONG)
def test_a_wrong_detection_among_many_is_named_as_before(tmp_path, entry):
    gt = load_ground_truth(_gt(tmp_path / "gt.json"))
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(ENTRIES[:1] * 50 + [entry] + ENTRIES[:1] * 50))
    with pytest.raises(InputError) as raised:
        _detection(path, 50, entry, gt)
    with pytest.raises(InputError) as read:
        load_results(path, gt)
    assert str(read.value) == str(raised.value) and "detection 50" in str(read.value)
