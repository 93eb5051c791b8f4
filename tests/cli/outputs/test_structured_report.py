"""report.html of ``nobg-metrics instances`` and ``nobg-metrics panoptic``: one self-contained file with every
section (per-category table, PR curves per IoU type, area breakdown, TIDE bars from errors.json, intervals from
stats.json, worst images with drawn boundaries), ``--no-report``, the thumbnails' drawing, and the page rendered and
sorted by a real headless Chromium (skipped without one)."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nobg_metrics.cli.entry import main
from nobg_metrics.cli.outputs.structured_report_images import (
    GT_COLOUR,
    PRED_COLOUR,
    boundary_thumbnail,
    label_edges,
    mask_edges,
)
from nobg_metrics.cli.outputs.structured_report_page import write_instances_report

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
INSTANCE_SIZES = ((45, 60), (37, 53), (105, 140), (64, 48), (30, 31), (200, 330))
pytestmark = [pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")]  # pycocotools
ERRORS = {"segm": {"main": {"Cls": 1.25, "Loc": 6.5, "Both": 0.5, "Dupe": 0.25, "Bkg": 3.0, "Miss": 2.0},
                   "special": {"FalsePos": 8.0, "FalseNeg": 5.5}, "ap": 17.5}}


@pytest.fixture(scope="module")
def instances_run(tmp_path_factory) -> Path:
    """An instances run (COCO, segm) with an image folder: report.html written by the command."""
    pytest.importorskip("pycocotools")
    from tests.cli.instances.instances_data import make_dataset, write_dataset

    root = tmp_path_factory.mktemp("instances")
    gt, results = make_dataset(3, sizes=INSTANCE_SIZES)
    gt_path, dt_path = write_dataset(root / "data", gt, results)
    (root / "images").mkdir()
    for image in gt["images"]:
        Image.new("RGB", (image["width"], image["height"]), (30, 60, 200)).save(root / "images" / image["file_name"])
    out = root / "out"
    argv = ["instances", "--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--out", str(out),
            "--quiet", "--image-folder", str(root / "images")]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def panoptic_run(tmp_path_factory) -> Path:
    """A panoptic run with --bootstrap: report.html with intervals."""
    from benchmarks.panoptic_scenes import categories, make_scene, write_dataset

    root = tmp_path_factory.mktemp("panoptic")
    scenes = [make_scene(h, w, [11, i], things=6) for i, (h, w) in enumerate(((40, 52), (33, 47), (60, 80)))]
    paths = write_dataset(scenes, root / "data", categories())
    out = root / "out"
    argv = ["panoptic", "--gt-json-file", paths["gt_json"], "--pred-json-file", paths["pred_json"], "--quiet",
            "--out", str(out), "--bootstrap", "40", "--procs", "1"]
    assert main(argv) == 0
    return out


def _self_contained(page: str) -> None:
    assert "http:" not in page and "https:" not in page and "<link" not in page and "url(" not in page
    sources = re.findall(r'\b(?:src|href)="([^"]*)"', page)
    assert all(s.startswith(("data:", "#")) for s in sources), sources


def _stats_document() -> dict:
    from nobg_metrics.cli.outputs.summary_stats import family_statistics

    rng = np.random.default_rng(0)
    table = rng.uniform(0, 1, (12, 2))
    return family_statistics({"a.json": table, "b.json": table * 0.5},
                             lambda sums: {"map": sums[:, 0] / (sums[:, 0] + sums[:, 1]),
                                           "per_class/1/map": sums[:, 0] / (sums[:, 0] + 2 * sums[:, 1])},
                             {"a.json": {"map": 0.5, "per_class/1/map": 0.3},
                              "b.json": {"map": 0.5, "per_class/1/map": 0.3}},
                             unit="image", resamples=50, seed=1, alpha=0.05, permutations=100, family="instances")


def test_the_instances_page_has_every_section_and_is_self_contained(instances_run: Path):
    page = (instances_run / "report.html").read_text(encoding="utf-8")
    assert sorted(p.name for p in instances_run.iterdir()) == ["report.html", "results.json"]
    _self_contained(page)
    for anchor in ("summary", "areas", "categories", "curves", "worst"):
        assert f'id="{anchor}"' in page, anchor
    assert 'id="errors"' not in page and 'id="intervals"' not in page  # the run asked for neither
    assert page.count("<svg") == 1 and "IoU 0.50" in page and "IoU 0.75" in page and "mean IoU 0.50:0.95" in page
    assert re.search(r'<table class="sortable categories">.*?</table>', page, re.S).group(0).count("<tr>") == 4
    results = json.loads((instances_run / "results.json").read_text())
    assert f"{results['results']['map_small']:.3f}" in page  # the area breakdown
    assert page.count('src="data:image/png;base64,') == 6  # the worst images, drawn on the RGB images


def test_a_stale_errors_file_is_not_shown_and_the_files_are_read_when_present(instances_run: Path, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(instances_run, out)
    (out / "errors.json").write_text(json.dumps(ERRORS))
    (out / "stats.json").write_text(json.dumps(_stats_document()))
    write_instances_report(out)  # the files only: TIDE bars and intervals, no curves nor worst images
    page = (out / "report.html").read_text(encoding="utf-8")
    _self_contained(page)
    assert 'id="errors"' in page and 'id="intervals"' in page and "Paired tests" in page
    assert page.count("<svg") == 2 and ">Loc<" in page and ">FalseNeg<" in page and "AP 17.50" in page
    assert page.count("Not available") == 2
    assert '<span class="ci">' in page  # the per-category interval under its value
    gt = json.loads((instances_run / "results.json").read_text())
    argv = ["instances", "--gt-json-file", gt["gt_json_file"], "--dt-json-file", gt["dt_json_file"], "--out",
            str(out), "--quiet"]
    assert main(argv) == 0  # this run asked for no --errors, no --bootstrap: the old files are not its own
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="errors"' not in page and 'id="intervals"' not in page


def test_no_report_writes_the_other_files_only(instances_run: Path, tmp_path):
    gt = json.loads((instances_run / "results.json").read_text())
    argv = ["instances", "--gt-json-file", gt["gt_json_file"], "--dt-json-file", gt["dt_json_file"], "--out",
            str(tmp_path / "o"), "--quiet", "--no-report"]
    assert main(argv) == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["results.json"]
    assert (tmp_path / "o" / "results.json").read_bytes() == (instances_run / "results.json").read_bytes()


def test_the_panoptic_page_has_every_section(panoptic_run: Path):
    page = (panoptic_run / "report.html").read_text(encoding="utf-8")
    _self_contained(page)
    for anchor in ("summary", "categories", "intervals", "worst"):
        assert f'id="{anchor}"' in page, anchor
    results, stats = (json.loads((panoptic_run / name).read_text()) for name in ("results.json", "stats.json"))
    assert f"{100 * results['All']['pq']:.1f}" in page and ">thing1<" in page and ">stuff<" in page
    low = next(iter(stats["results"].values()))["All/pq"]["low"]
    assert f"[{100 * low:.1f}, " in page
    assert page.count('src="data:image/png;base64,') == 3  # every image among the worst (3 images)


def test_boundaries_are_drawn_in_their_colours_and_survive_shrinking():
    gt = np.zeros((1, 400, 600), bool)
    gt[0, 100:300, 100:500] = True
    edges = mask_edges(gt, 400, 600)
    assert edges.sum() == 2 * 200 + 2 * 398
    pred_ids = np.zeros((400, 600), np.int64)
    pred_ids[50:350, 300:600] = 7
    picture = Image.open(io.BytesIO(base64.b64decode(boundary_thumbnail(edges, label_edges(pred_ids)))))
    assert max(picture.size) == 160
    colours = {tuple(c) for c in np.asarray(picture.convert("RGB")).reshape(-1, 3).tolist()}
    assert GT_COLOUR in colours and PRED_COLOUR in colours


def _chromium() -> str | None:
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


_ERRORS = """<script>window.seenErrors = [];
window.addEventListener("error", e => window.seenErrors.push(String(e.message)));
const originalError = console.error;
console.error = (...args) => { window.seenErrors.push(args.join(" ")); originalError(...args); };</script>"""
_PROBE = """<script>window.addEventListener("load", () => {
  const table = document.querySelector("table.sortable"), header = table.tHead.rows[0].cells;
  const column = Array.from(header).findIndex(th => th.textContent.trim() === "%s");
  const read = i => Array.from(table.tBodies[0].rows).map(r => r.cells[i].dataset.value).join(",");
  const loaded = read(0);
  header[column].click(); const up = read(column);
  header[column].click(); const down = read(column);
  const images = Array.from(document.images), ok = images.filter(i => i.complete && i.naturalWidth > 0).length;
  const probe = document.createElement("div");
  probe.id = "probe";
  probe.textContent = `loaded=${loaded};up=${up};down=${down};images=${ok}/${images.length};` +
    `svg=${document.querySelectorAll("svg").length};errors=${window.seenErrors.length}`;
  document.body.appendChild(probe);
});</script>"""


def _render(page_path: Path, column: str, tmp_path: Path, name: str) -> dict[str, str]:
    browser = _chromium()
    if browser is None:
        pytest.skip(f"no Chromium binary on PATH ({', '.join(CHROMIUM_NAMES)}); apt-get install chromium")
    page = tmp_path / f"{name}.html"  # a copy with an error catcher and a probe that sorts the table twice
    text = page_path.read_text(encoding="utf-8")
    page.write_text(text.replace("<style>", _ERRORS + "<style>", 1).replace("</body>", _PROBE % column + "</body>"),
                    encoding="utf-8")
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
              f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--window-size=1200,2400"]
    env = dict(os.environ, HOME=str(tmp_path))
    result = subprocess.run([*common, "--dump-dom", page.as_uri() + "#sort=0-d"], check=False, capture_output=True,
                            text=True, timeout=120, env=env)
    probe = re.search(r'<div id="probe">([^<]*)</div>', result.stdout)
    assert probe, f"no probe in the DOM (status {result.returncode}): {result.stderr[-2000:]}"
    shot = tmp_path / f"{name}.png"
    subprocess.run([*common, f"--screenshot={shot}", page_path.as_uri()], check=False, capture_output=True,
                   timeout=120, env=env)
    assert shot.is_file() and Image.open(shot).size == (1200, 2400)
    return dict(part.split("=", 1) for part in probe.group(1).split(";"))


def _numbers(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v]


def _check_sorting(probe: dict[str, str]) -> None:
    ids = _numbers(probe["loaded"])
    assert ids == sorted(ids, reverse=True) and len(ids) > 1  # #sort=0-d: ids descending on load
    up, down = probe["up"].split(","), probe["down"].split(",")
    present = [float(v) for v in up if v]
    assert present == sorted(present) and up[len(present):] == [""] * (len(up) - len(present))  # missing last
    assert _numbers(probe["down"]) == sorted(present, reverse=True) and down[len(present):] == up[len(present):]


@pytest.mark.slow
def test_the_instances_page_renders_and_sorts_in_headless_chromium(instances_run: Path, tmp_path):
    probe = _render(instances_run / "report.html", "AP", tmp_path, "instances")
    _check_sorting(probe)
    loaded, images = map(int, probe["images"].split("/"))
    assert loaded == images == 6 and probe["svg"] == "1" and probe["errors"] == "0"


@pytest.mark.slow
def test_the_panoptic_page_renders_and_sorts_in_headless_chromium(panoptic_run: Path, tmp_path):
    probe = _render(panoptic_run / "report.html", "PQ", tmp_path, "panoptic")
    _check_sorting(probe)
    loaded, images = map(int, probe["images"].split("/"))
    assert loaded == images == 3 and probe["errors"] == "0"
