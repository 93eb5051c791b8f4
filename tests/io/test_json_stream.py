"""A results file is decoded one detection at a time (``nobg_metrics.io.json_stream``): the same values as
``json.load``, and the same error (message, line, column, character) for a file that is not valid JSON, wherever
the reads cut it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nobg_metrics.io.coco.annotations import load_ground_truth
from nobg_metrics.io.coco.results import load_results
from nobg_metrics.io.errors import InputError
from nobg_metrics.io.json_stream import array_items
from tests.io.json_oracle import json_load, streamed

ODD = ('\n \t[\r\n {"image_id" :\n9 ,"category_id":3,"score" : 1e-1,"segmentation":{"size":[6 , 8],"counts":'
       '"a\\u00e9\\"b\\\\c"} , "bbox" : [ 0 , 0.0 , -0 , 12345678901234567890 ] }  ,\n\n"\\ud83d\\ude00 x",  -12.5e-3 ,'
       ' [[[[{"deep": [{"er": {}}, [], "", 0]}]]]], true, null, {} ]\n\n ')
"""Whitespace of every kind between every token, nesting, escapes, numbers of every form."""

CHUNKS = (1, 2, 3, 7, 64, 1 << 20)
"""Read sizes: one character at a time (every cut) up to the whole file at once."""


def _ours(path: Path, text: str, chunk: int) -> tuple[str, object]:
    path.write_text(text, encoding="utf-8")
    return streamed(path, chunk)


@pytest.mark.parametrize("chunk", CHUNKS)
def test_odd_whitespace_and_nesting_give_json_loads_values(tmp_path, chunk):
    path = tmp_path / "dt.json"
    kind, values = _ours(path, ODD, chunk)
    assert (kind, values) == json_load(path)
    assert isinstance(values, list) and len(values) == 7 and values[0]["bbox"][3] == 12345678901234567890
    positions = [position for position, _ in array_items(path, "--dt-json-file", "expected a list", chunk=chunk)]
    assert positions == list(range(7))


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_a_truncated_file_is_refused_with_json_loads_message_and_position(tmp_path, chunk):
    path = tmp_path / "dt.json"
    for cut in range(len(ODD.rstrip())):  # every prefix of the file
        kind, message = _ours(path, ODD[:cut], chunk)
        assert kind == "error" and (kind, message) == json_load(path), repr(ODD[:cut])
        assert str(path) in str(message) and "(char " in str(message)


@pytest.mark.parametrize(("text", "message"), [
    ('[1, 2,]', "Expecting value: line 1 column 7 (char 6)"),
    ('[1 2]', "Expecting ',' delimiter: line 1 column 4 (char 3)"),
    ('[1]\n]', "Extra data: line 2 column 1 (char 4)"),
    ('\ufeff[]', "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"),
    ('', "Expecting value: line 1 column 1 (char 0)"),
    ('[{"a": 1.5e}]', "Expecting ',' delimiter: line 1 column 11 (char 10)"),
])
def test_malformed_files_are_refused_as_json_load_refuses_them(tmp_path, text, message):
    path = tmp_path / "dt.json"
    for chunk in CHUNKS:
        assert _ours(path, text, chunk) == ("error", f"--dt-json-file {path}: not valid JSON ({message})")
        assert json_load(path) == _ours(path, text, chunk)


def test_a_document_other_than_an_array_is_named(tmp_path):
    path = tmp_path / "dt.json"
    assert _ours(path, ' {"annotations": [1, 2]} ', 2) == ("error", f"{path}: expected a list, got a JSON dict")
    assert _ours(path, ' {"annotations": [1, 2]} x', 2)[1].endswith("not valid JSON (Extra data: line 1 column 26 "
                                                                     "(char 25))")
    with pytest.raises(InputError, match="no such file"):
        list(array_items(tmp_path / "missing.json", "--dt-json-file", "expected a list"))


def _gt(path: Path) -> Path:
    path.write_text(json.dumps({"images": [{"id": 9, "height": 6, "width": 8}], "categories": [{"id": 3}],
                                "annotations": []}))
    return path


def test_a_results_file_read_in_pieces_gives_the_same_detections(tmp_path, monkeypatch):
    """``load_results`` on a results file with odd whitespace, read one character at a time: the detections of the
    same file written compactly."""
    from nobg_metrics.io import json_stream

    gt = load_ground_truth(_gt(tmp_path / "gt.json"))
    dets = [{"image_id": 9, "category_id": 3, "score": score, "segmentation": {"size": [6, 8], "counts": "04L4"},
             "bbox": [0, 0, 2, 3]} for score in (0.5, 0.25, 0.75)]
    (tmp_path / "compact.json").write_text(json.dumps(dets, separators=(",", ":")))
    (tmp_path / "odd.json").write_text(json.dumps(dets, indent="\t").replace(":", " :\r\n "))
    compact = load_results(tmp_path / "compact.json", gt)
    monkeypatch.setattr(json_stream, "CHUNK", 1)
    odd = load_results(tmp_path / "odd.json", gt)
    assert odd.per_image == compact.per_image and odd.area_from_box and odd.count == 3
    assert [d.box_area for d in odd.per_image[9]] == [6, 6, 6]


def test_invalid_json_is_reported_before_a_wrong_detection(tmp_path):
    """The whole file is decoded before a detection's error is raised: a file that is not valid JSON is named as
    such, as when the file was decoded at once."""
    gt = load_ground_truth(_gt(tmp_path / "gt.json"))
    path = tmp_path / "dt.json"
    path.write_text('[{"image_id": 9, "category_id": 3, "score": "high", "segmentation": []}, {"image_id": 9')
    with pytest.raises(InputError, match=r"dt\.json: not valid JSON \(Expecting ',' delimiter: line 1 column 88 "):
        load_results(path, gt)
    path.write_text('[{"image_id": 9, "category_id": 3, "score": "high", "segmentation": []}, 1]')
    with pytest.raises(InputError, match=r"dt\.json: detection 0 \(image 9\): 'score' must be a finite number"):
        load_results(path, gt)
