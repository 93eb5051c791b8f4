"""File and folder names that are not valid UTF-8 (a latin-1 ``été.png``) go through every output of the command
as the OS gives them (``nobg_metrics.cli.core.os_names``): bytes in the CSVs, ``\\udcNN`` escapes in JSON, ``\\xNN`` in
the documents people read, the same key in the cache, and back through ``merge``."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nobg_metrics.cli.core.os_names import open_csv
from nobg_metrics.cli.entry import main

IMAGE = os.fsdecode(b"\xe9t\xe9")  # "\udce9t\udce9": what os.listdir gives for the latin-1 bytes
METHOD = os.fsdecode(b"m\xe9thode")
FAST = ["--workers", "0", "--procs", "1", "--no-plots", "--bootstrap", "20", "--permutations", "20"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("names")
    try:
        (root / "gt").mkdir()
        (root / METHOD).mkdir()
        (root / "gt" / f"{IMAGE}.png").touch()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system does not hold names that are not UTF-8")
    rng = np.random.default_rng(0)
    for name in (IMAGE, "plain"):
        Image.fromarray(((rng.random((12, 17)) > 0.5) * 255).astype(np.uint8)).save(root / "gt" / f"{name}.png")
        Image.fromarray(rng.integers(0, 256, (12, 17), dtype=np.uint8)).save(root / METHOD / f"{name}.png")
    return root


def test_every_output_keeps_the_names(folders: Path, tmp_path: Path, capsys) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["eval", "--gt", str(folders / "gt"), "--pred", str(folders / METHOD), "--out", str(out), "--metrics",
            "mae", "f_measure_max", "--combined", "--cache", str(cache), *FAST]
    assert main(argv) == 0
    console = capsys.readouterr().out
    assert "| m\\xe9thode | 2 |" in console  # stdout never fails on the name
    raw = (out / "per_image.csv").read_bytes()
    assert b"m\xe9thode," in raw and b",\xe9t\xe9," in raw  # the OS's bytes
    with open_csv(out / "per_image.csv") as handle:
        assert {row["image"] for row in csv.DictReader(handle)} == {IMAGE, "plain"}
    document = json.loads((out / "results.json").read_text(encoding="ascii"))  # ASCII JSON, \udcNN escapes
    assert document["results"][0]["method"] == METHOD
    for name in ("table.md", "table.tex", "combined.md", "combined.tex", "stats.md", "report.html"):
        text = (out / name).read_bytes().decode("utf-8")  # valid UTF-8 documents
        assert ("m\\textbackslash{}xe9thode" if name.endswith(".tex") else "m\\xe9thode") in text, name
    assert "\\xe9t\\xe9" in (out / "report.html").read_text(encoding="utf-8")  # the worst images by name
    openpyxl = pytest.importorskip("openpyxl")
    sheet = openpyxl.load_workbook(out / "combined.xlsx").active
    assert "m\\xe9thode" in [cell.value for cell in sheet["A"]]
    assert b"m\xe9thode" in (out / "combined.csv").read_bytes() and b"m\xe9thode" in (out / "curves.csv").read_bytes()

    again = tmp_path / "again"  # the same files: the cache key is found again
    assert main([*argv[:6], str(again), *argv[7:]]) == 0
    assert "1 of 1 jobs unchanged" in capsys.readouterr().err
    assert (again / "per_image.csv").read_bytes() == raw

    merged = tmp_path / "merged"  # merge reads the bytes back into the same names
    assert main(["merge", str(out), "--out", str(merged), "--no-plots", "--quiet", "--bootstrap", "20"]) == 0
    assert (merged / "per_image.csv").read_bytes() == raw
