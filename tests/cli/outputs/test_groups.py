"""``--categories``: AIM-500's SAD by type and category (any ``{stem: {grouping: group}}`` file), from the per-image
records, with the images the file does not name counted, and bad files named."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from nobg_metrics.cli.eval.main import EXIT_USAGE, main
from tests.cli.folders import make_matting_dataset, read_results

FAST = ["--workers", "0", "--quiet", "--no-plots"]


@pytest.fixture(scope="module")
def aim(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("aim") / "AIM-500"
    mattes = make_matting_dataset(root, ("A",), count=5, alpha_dir="mask", trimap_dir="trimap")
    stems = sorted(mattes["A"])
    categories = {stems[0]: {"type": "SO", "category": "animal"}, stems[1]: {"type": "SO", "category": "toy"},
                  stems[2]: {"type": "STM", "category": "animal"}, stems[3]: {"type": "NS", "category": "plant"}}
    (root.parent / "aim_category_type.json").write_text(json.dumps(categories))
    return root


def _run(aim: Path, out: Path, *extra: str) -> int:
    return main(["eval", "--task", "matting", "--protocol", "p3m", "--gt", str(aim / "mask"), "--trimap",
                 str(aim / "trimap"), "--pred", str(aim / "A"), "--out", str(out), *FAST, *extra])


def test_the_groups_are_the_means_of_the_per_image_values(aim, tmp_path):
    out = tmp_path / "out"
    assert _run(aim, out, "--categories", str(aim.parent / "aim_category_type.json")) == 0
    document = read_results(out)
    with (out / "per_image.csv").open() as handle:
        rows = {row["image"]: row for row in csv.DictReader(handle)}
    categories = json.loads((aim.parent / "aim_category_type.json").read_text())
    grouped = {(g["grouping"], g["group"]): g for g in document["groups"]}
    for grouping in ("type", "category"):
        for group in {entry[grouping] for entry in categories.values()}:
            members = [stem for stem, entry in categories.items() if entry[grouping] == group]
            expected = sum(float(rows[stem]["p3m_sad"]) for stem in members) / len(members)
            found = grouped[grouping, group]
            assert found["images"] == len(members)
            assert abs(found["values"]["p3m_sad"] - expected) <= 1e-12 * max(1.0, abs(expected))
    assert grouped[None, None]["images"] == 1  # the fifth image is not in the file: counted, not dropped
    text = (out / "groups.md").read_text()
    assert "| type | SO | 2 |" in text and "(not in the file)" in text and "SAD (÷1000)" in text


@pytest.mark.parametrize("content, words", [("[1, 2]", "expected an object"), ("{", "cannot read it as JSON"),
                                            ('{"a": {"type": 3}}', "entry 'a'")])
def test_a_bad_categories_file_is_a_usage_error_naming_it(aim, tmp_path, capsys, content, words):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert _run(aim, tmp_path / "out", "--categories", str(bad)) == EXIT_USAGE
    err = capsys.readouterr().err
    assert str(bad) in err and words in err
    assert not (tmp_path / "out").exists()


def test_categories_need_the_per_image_records(aim, tmp_path, capsys):
    assert _run(aim, tmp_path / "out", "--categories", str(aim.parent / "aim_category_type.json"),
                "--no-per-image") == EXIT_USAGE
    assert "--no-per-image" in capsys.readouterr().err
