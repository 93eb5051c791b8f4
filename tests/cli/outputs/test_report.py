"""stats.json, stats.md and report.html written by ``nobg-metrics eval``: consistent with per_image.csv and
results.json, flags, thumbnails, and the page rendered by a real headless Chromium (skipped without one)."""

from __future__ import annotations

import argparse
import base64
import csv
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

from nobg_metrics.cli.eval.jobs import Item, Job
from nobg_metrics.cli.eval.main import EXIT_USAGE, main
from nobg_metrics.cli.outputs.report import report_page, report_writers, stats_markdown
from nobg_metrics.cli.outputs.stats import bootstrap_interval, generator, run_statistics
from tests.cli.folders import make_dataset, read_results

METRICS = ["mae", "s_measure", "iou_metric", "f_measure_max"]
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """Three methods on one dataset with RGB images: ``same`` and ``cutout`` hold identical maps (8-bit
    grey, RGBA alpha), ``other`` another seed's predictions; curves drawn (f_measure_max): the page embeds them."""
    root = tmp_path_factory.mktemp("report")
    maps = make_dataset(root / "d", formats=("u8", "rgba"))
    make_dataset(root / "e", seed=3, formats=("u8",))
    (root / "d" / "image").mkdir()
    for name, (gt, _) in maps.items():
        Image.fromarray(np.dstack([gt, 255 - gt, gt // 2])).save(root / "d" / "image" / f"{name}.jpg")
    out, config = root / "out", root / "run.json"  # a config: it names the image folder of the dataset
    config.write_text(json.dumps({"datasets": {"d": {"gt": "d/gt", "image": "d/image"}},
                                  "methods": {"same": {"d": "d/u8"}, "cutout": {"d": "d/rgba"},
                                              "other": {"d": "e/u8"}}}))
    argv = ["eval", "--config", str(config), "--out", str(out), "--workers", "0", "--quiet", "--metrics", *METRICS,
            "--bootstrap", "300", "--seed", "5", "--worst-k", "2"]
    assert main(argv) == 0
    return out


def _per_image(out: Path) -> list[dict]:
    with (out / "per_image.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_the_files_and_the_resampled_metrics(run: Path):
    stats = json.loads((run / "stats.json").read_text())
    assert {"stats.json", "stats.md", "report.html"} <= {p.name for p in run.iterdir()}
    assert stats["resampled_metrics"] == ["mae", "s_measure", "iou_metric"]
    assert "not the per-image mean" in stats["not_resampled"]["f_measure_max"]
    assert stats["seed"] == 5 and stats["bootstrap"]["resamples"] == 300 and stats["worst_k"] == 2


def test_intervals_are_recomputed_from_per_image_csv(run: Path):
    """results.json's value is the column mean, and stats.json's interval is the bootstrap of that column."""
    stats, document, rows = json.loads((run / "stats.json").read_text()), read_results(run), _per_image(run)
    entry = stats["datasets"][0]
    dataset = entry["dataset"]
    for result in document["results"]:
        for metric in stats["resampled_metrics"]:
            own = sorted((r["image"], float(r[metric])) for r in rows if r["method"] == result["method"] and r[metric])
            values = np.array([v for _, v in own])
            assert abs(result["metrics"][metric] - values.mean()) <= 1e-12
            expected = bootstrap_interval(values, generator(5, dataset, result["method"]), 300, 0.05)
            assert tuple(entry["metrics"][metric]["methods"][result["method"]]["ci"]) == expected


def test_identical_methods_tie(run: Path):
    stats = json.loads((run / "stats.json").read_text())
    for metric, entry in stats["datasets"][0]["metrics"].items():
        pair = next(p for p in entry["pairs"] if {p["a"], p["b"]} == {"same", "cutout"})
        assert pair["mean_difference"] == 0 and pair["p_value"] == 1.0 and not pair["significant"], metric
        ranks = {r["method"]: r["rank"] for r in entry["ranking"]}
        assert ranks["same"] == ranks["cutout"]


def test_stats_markdown_and_worst(run: Path):
    text = (run / "stats.md").read_text()
    assert "## " in text and "tie (not significant)" in text and "`f_measure_max` not resampled" in text
    stats = json.loads((run / "stats.json").read_text())
    assert all(len(w["images"]) == 2 for w in stats["worst"])
    assert len(stats["worst"]) == 3 * len(METRICS)


def test_the_page_holds_tables_curves_statistics_and_thumbnails(run: Path):
    page = (run / "report.html").read_text()
    assert page.count('<table class="results">') == 1 and page.count('<table class="pairs">') == 3
    assert '<h2 id="curves">' in page and 'alt="curves"' in page  # curves.png written before the page
    assert 'alt="gt"' in page and 'alt="prediction"' in page and 'alt="image"' in page
    external = re.findall(r'(?:src|href)="(?!data:|#)[^"]*"|<link|<script|url\(', page)
    assert external == []  # self-contained: every picture a data: URI, links only within the page


def test_no_report_keeps_the_statistics():
    document = {"metrics": ["mae"], "higher_is_better": {"mae": False},
                "results": [{"dataset": "D", "method": "M", "images": 2, "metrics": {"mae": 0.2}}]}
    rows = [{"dataset": "D", "method": "M", "image": f"i{v}", "mae": v / 10} for v in (1, 3)]
    args = argparse.Namespace(bootstrap=50, seed=0, alpha=0.05, permutations=100, worst_k=1, no_report=True)
    assert sorted(report_writers(document, rows, [], args)) == ["stats.json", "stats.md"]
    args.no_report = False
    assert sorted(report_writers(document, rows, [], args)) == ["report.html", "stats.json", "stats.md"]


@pytest.mark.parametrize("flag, value", [("--bootstrap", "-1"), ("--permutations", "0"), ("--alpha", "1.5"),
                                         ("--worst-k", "x")])
def test_bad_values_are_usage_errors(flag, value, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:  # argparse: before any scoring, nothing written
        main(["eval", flag, value, "--out", str(tmp_path / "out")])
    assert stopped.value.code == EXIT_USAGE and f"argument {flag}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_gallery_shows_an_rgb_image_when_items_have_one(tmp_path):
    """The item's RGB ``image`` is shown beside the gt and the prediction; an unreadable file is named."""
    rgb = np.random.default_rng(0).integers(0, 256, (300, 200, 3), dtype=np.uint8)
    mask = (np.arange(300 * 200).reshape(300, 200) % 255).astype(np.uint8)
    Image.fromarray(rgb).save(tmp_path / "a.jpg")
    Image.fromarray(mask).save(tmp_path / "a.png")

    job = Job(0, "D", "M", items=[Item(0, "a", tmp_path / "a.png", tmp_path / "a.png", image=tmp_path / "a.jpg"),
                                  Item(0, "b", tmp_path / "missing.png", tmp_path / "a.png")])
    document = {"metrics": ["mae"], "higher_is_better": {"mae": False}, "version": "x", "protocol": "p",
                "task": "sod", "tier": "custom",
                "results": [{"dataset": "D", "method": "M", "images": 2, "metrics": {"mae": 0.3}}]}
    rows = [{"dataset": "D", "method": "M", "image": name, "mae": v} for name, v in (("a", 0.2), ("b", 0.4))]
    page = report_page(document, run_statistics(document, rows, resamples=10, worst_k=2), [job])
    thumbs = re.findall(r'alt="(\w+)" src="data:image/png;base64,', page)
    assert thumbs == ["prediction", "image", "gt", "prediction"]  # b (worst) first; its gt is unreadable: named
    assert "no gt" in page and '<h2 id="curves">' not in page


def _chromium() -> str | None:
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


_PROBE = """<script>window.addEventListener("load", () => {
  const images = Array.from(document.images);
  const loaded = images.filter(i => i.complete && i.naturalWidth > 0).length;
  const probe = document.createElement("div");
  probe.id = "probe";
  probe.textContent = `loaded=${loaded} images=${images.length} tables=${document.querySelectorAll("table").length}`;
  document.body.appendChild(probe);
});</script>"""


@pytest.mark.slow
def test_the_page_renders_in_headless_chromium(run: Path, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip(f"no Chromium binary on PATH ({', '.join(CHROMIUM_NAMES)}); apt-get install chromium")
    page = tmp_path / "report.html"  # a copy with a probe that counts the decoded images into the DOM
    page.write_text((run / "report.html").read_text().replace("</body>", _PROBE + "</body>"))
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000", "--dump-dom",
               page.as_uri()]
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, HOME=str(tmp_path)))
    probe = re.search(r'<div id="probe">loaded=(\d+) images=(\d+) tables=(\d+)</div>', result.stdout)
    assert probe, f"no probe in the DOM (status {result.returncode}): {result.stderr[-2000:]}"
    loaded, images, tables = map(int, probe.groups())
    expected = (run / "report.html").read_text()
    assert images == expected.count("<img ") and images > 1
    assert loaded == images  # every base64 thumbnail and the curves decoded
    assert tables == expected.count("<table")
    assert "<h3>d — mae ↓</h3>" in result.stdout and ">tie (not significant)<" in result.stdout


def test_matting_metrics_print_in_their_benchmark_units():
    """``--protocol dim``: SAD prints as the tables print it (÷1000, 2 decimals), intervals and differences too."""
    document = {"protocol": "dim", "metrics": ["sad"], "higher_is_better": {"sad": False},
                "results": [{"dataset": "D", "method": m, "images": 4, "metrics": {"sad": 1000.0 * (2.5 + k)}}
                            for k, m in enumerate("AB")]}
    rows = [{"dataset": "D", "method": m, "image": f"i{i}", "sad": 1000.0 * (1 + i + k)}
            for k, m in enumerate("AB") for i in range(4)]
    stats = run_statistics(document, rows, resamples=20, worst_k=1)
    text = stats_markdown(document, stats)
    assert "## D — SAD (÷1000) ↓" in text and "| 1 | A | 2.50 | 4 | [" in text and "| -1.00 |" in text
    assert "i3 (4.00)" in text  # A's worst image
    page = report_page(document, stats, [])
    assert "<th>SAD (÷1000) ↓</th>" in page and '<td class="first">2.50<span class="ci">[' in page


def _wide_document(preset: str | None = None) -> tuple[dict, list[dict]]:
    """The default tier's 22 columns (SOD and matting measures) for 3 methods, one scored on a subset."""
    from nobg_metrics.collection import TIERS

    names = list(TIERS["expensive"])
    higher = {n: n not in ("mae", "sad", "mse_metric", "gradient_error", "connectivity_error", "ber", "hce")
              for n in names}
    results = [{"dataset": "DUTS-TE", "method": m, "images": 4 - (m == "C"), "resized": 0,
                "metrics": {n: (1000.0 if n in ("sad", "gradient_error", "connectivity_error") else 0.5) + k / 10
                            for n in names}} for k, m in enumerate("ABC")]
    document = {"version": "x", "protocol": "pysodmetrics", "task": "sod", "tier": "expensive", "metrics": names,
                "higher_is_better": higher, "results": results,
                "missing": [{"dataset": "DUTS-TE", "method": "C", "file": "i3.*", "reason": "missing"}],
                "unreadable": [], "extra": [], "not_scored": [], **({"preset": preset} if preset else {})}
    rows = [{"dataset": "DUTS-TE", "method": r["method"], "image": f"i{i}", "resized": False,
             **{n: v + i / 100 for n, v in r["metrics"].items()}} for r in results for i in range(r["images"])]
    return document, rows


def test_the_results_tables_follow_table_md():
    """report.html lays its results out as table.md: the matting measures in a table of their
    own, each table in a box that scrolls sideways, the top three marked, † for the row scored on a subset, and
    the paper names under a preset."""
    document, rows = _wide_document()
    page = report_page(document, run_statistics(document, rows, resamples=10, worst_k=1), [])
    assert page.count('<div class="scroll"><table class="results">') == 2
    sod, matting = page.split("<h3>DUTS-TE (matting measures)</h3>")
    assert "<th>SAD (÷1000) ↓</th>" in matting and "SAD" not in sod.split('id="results"')[1]
    assert '<td class="first">0.700' in sod and '<td class="third">0.500' in sod and "0.700†" in sod
    assert "† C: scored on 3 of 4 images" in page and ".scroll{max-width:100%;overflow-x:auto" in page
    document, rows = _wide_document(preset="sod")
    page = report_page(document, run_statistics(document, rows, resamples=10, worst_k=1), [])
    assert "<th>S_α ↑</th>" in page and "<th>s_measure ↑</th>" not in page


def test_the_gallery_enlarges_tiny_images_with_nearest_neighbour(tmp_path):
    from nobg_metrics.cli.outputs.report_gallery import THUMBNAIL, _thumbnail

    tiny = np.array([[0, 255, 0, 255, 0], [255, 0, 255, 0, 255], [0, 0, 0, 0, 0]], dtype=np.uint8)
    Image.fromarray(tiny).save(tmp_path / "p.png")
    Image.fromarray(np.full((3, 5), 255, np.uint8)).save(tmp_path / "white.png")
    shown = Image.open(io.BytesIO(base64.b64decode(_thumbnail(tmp_path / "p.png", "prediction"))))
    assert shown.size == (125, 75) and max(shown.size) <= THUMBNAIL  # 25x, every pixel a square of its value
    assert np.array_equal(np.asarray(shown)[::25, ::25], tiny)
    assert _thumbnail(tmp_path / "white.png", "gt") is not None
    css = report_page({"metrics": [], "higher_is_better": {}, "results": []}, {
        "bootstrap": {"confidence": 0.95, "resamples": 0}, "alpha": 0.05, "seed": 0, "not_resampled": {},
        "datasets": [], "worst_k": 0, "worst": []}, [])
    assert "border:1px solid #888" in css  # an all-white gt keeps its outline on the white page


_LAYOUT_PROBE = """<script>window.addEventListener("load", () => {
  const boxes = Array.from(document.querySelectorAll("div.scroll"));
  const scrolling = boxes.filter(b => b.scrollWidth > b.clientWidth + 1).length;
  const overflow = boxes.filter(b => b.getBoundingClientRect().right > window.innerWidth).length;
  const font = Math.min(...Array.from(document.querySelectorAll("td")).map(
      td => parseFloat(getComputedStyle(td).fontSize)));
  const probe = document.createElement("div");
  probe.id = "probe";
  probe.textContent = `width=${window.innerWidth} page=${document.documentElement.scrollWidth} ` +
      `boxes=${boxes.length} scrolling=${scrolling} overflow=${overflow} font=${font}`;
  document.body.appendChild(probe);
});</script>"""


@pytest.mark.slow
def test_the_page_is_readable_at_1400_px_in_headless_chromium(tmp_path):
    """The default tier's wide table at a 1400 px window: the page itself never scrolls sideways, the results table
    scrolls inside its box, no box sticks out of the window, cells print at >= 12 px."""
    browser = _chromium()
    if browser is None:
        pytest.skip(f"no Chromium binary on PATH ({', '.join(CHROMIUM_NAMES)}); apt-get install chromium")
    document, rows = _wide_document()
    page = tmp_path / "report.html"
    html = report_page(document, run_statistics(document, rows, resamples=10, worst_k=1), [])
    page.write_text(html.replace("</body>", _LAYOUT_PROBE + "</body>"), encoding="utf-8")
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--window-size=1400,1000", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}",
               "--virtual-time-budget=5000", "--dump-dom", page.as_uri()]
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, HOME=str(tmp_path)))
    probe = re.search(r'<div id="probe">width=(\d+) page=(\d+) boxes=(\d+) scrolling=(\d+) overflow=(\d+) '
                      r'font=([\d.]+)</div>', result.stdout)
    assert probe, f"no probe in the DOM (status {result.returncode}): {result.stderr[-2000:]}"
    width, page_width, boxes, scrolling, overflow = map(int, probe.groups()[:5])
    assert width == 1400 and page_width <= width, probe.group(0)
    assert boxes >= 3 and scrolling >= 1 and overflow == 0, probe.group(0)  # the SOD table scrolls in its box
    assert float(probe.group(6)) >= 12, probe.group(0)
