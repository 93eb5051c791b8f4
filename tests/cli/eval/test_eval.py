"""``nobg-metrics eval`` end to end on generated folders: parity with PySODMetrics on the same files,
file formats, problems (missing, corrupt, extra), outputs, the bundled sample."""

from __future__ import annotations

import csv
import json
import os
import stat
from pathlib import Path

import cv2
import numpy as np
import py_sod_metrics as psm
import pytest
from PIL import Image

from nobg_metrics.cli.eval.main import main
from tests.cli.folders import FORMATS, make_dataset, read_results

HANDLERS = {"iou_metric": psm.IOUHandler, "dice": psm.DICEHandler, "accuracy": psm.OverallAccuracyHandler,
            "ber": psm.BERHandler}
FAST = ["--workers", "0", "--quiet", "--no-plots"]


def pysodmetrics_reference(gt_dir: Path, pred_dir: Path) -> dict[str, float]:
    """PySODEvalToolkit's loop: cv2 IMREAD_GRAYSCALE files into PySODMetrics 1.6.2 (its defaults)."""
    mae, sm, em, fm, wfm = psm.MAE(), psm.Smeasure(), psm.Emeasure(), psm.Fmeasure(), psm.WeightedFmeasure()
    fmv2 = psm.FmeasureV2({name: cls(False, False, with_binary=True) for name, cls in HANDLERS.items()})
    for gt_path in sorted(gt_dir.glob("*.png")):
        gt = cv2.imread(str(gt_path), cv2.IMREAD_GRAYSCALE)
        pred = cv2.imread(str(pred_dir / gt_path.name), cv2.IMREAD_GRAYSCALE)
        for metric in (mae, sm, em, fm, wfm, fmv2):
            metric.step(pred=pred, gt=gt)
    e, f = em.get_results()["em"], fm.get_results()["fm"]
    out = {"mae": mae.get_results()["mae"], "s_measure": sm.get_results()["sm"],
           "weighted_f_measure": wfm.get_results()["wfm"],
           "e_measure_max": e["curve"].max(), "e_measure_mean": e["curve"].mean(), "e_measure_adaptive": e["adp"],
           "f_measure_max": f["curve"].max(), "f_measure_mean": f["curve"].mean(), "f_measure_adaptive": f["adp"]}
    out.update({name: value["binary"] for name, value in fmv2.get_results().items()})
    return {name: float(value) for name, value in out.items()}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("data")
    make_dataset(root)
    return root


@pytest.fixture(scope="module")
def all_formats(dataset: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("out") / "all"
    preds = [arg for fmt in FORMATS for arg in ("--pred", str(dataset / fmt))]
    assert main(["eval", "--gt", str(dataset / "gt"), *preds, "--out", str(out), *FAST[:3]]) == 0
    return out


def test_formats_agree_and_equal_pysodmetrics(dataset: Path, all_formats: Path) -> None:
    document = read_results(all_formats)
    assert [r["method"] for r in document["results"]] == list(FORMATS)
    reference = pysodmetrics_reference(dataset / "gt", dataset / "u8")
    names = document["metrics"]
    compared = [n for n in names if n in reference]
    assert "mae" in compared and "iou_metric" in compared
    worst = 0.0
    for result in document["results"]:
        assert result["images"] == 6 and result["resized"] == 0
        assert result["metrics"] == document["results"][0]["metrics"]  # bit-identical across formats
        for name in compared:
            worst = max(worst, abs(result["metrics"][name] - reference[name]))
    assert worst <= 1e-6, worst


def test_outputs_parse(all_formats: Path) -> None:
    document = read_results(all_formats)
    assert set(document) >= {"version", "protocol", "results", "missing", "resized", "unreadable", "extra"}
    assert document["protocol"] == "pysodmetrics" and document["missing"] == [] and document["resized"] == 0
    with (all_formats / "per_image.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 * len(FORMATS)
    first = [r for r in rows if r["method"] == "u8"]
    # a per-image metric's dataset value is the mean of its per-image column
    assert np.mean([float(r["mae"]) for r in first]) == pytest.approx(document["results"][0]["metrics"]["mae"],
                                                                      abs=1e-12)
    table = (all_formats / "table.md").read_text()
    assert "mae ↓" in table and "| u8 | 6 |" in table and "**" in table
    tex = (all_formats / "table.tex").read_text()
    assert r"\begin{tabular}" in tex and r"mae $\downarrow$" in tex and r"\first{" in tex
    if "f_measure_max" in document["metrics"]:
        assert (all_formats / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (all_formats / "curves.pdf").read_bytes()[:4] == b"%PDF"


def test_per_image_mode_equals_batched_mode(dataset: Path, all_formats: Path, tmp_path: Path) -> None:
    out = tmp_path / "batched"
    args = ["eval", "--gt", str(dataset / "gt"), "--pred", str(dataset / "u8"), "--out", str(out),
            "--no-per-image", "--batch-size", "4", *FAST]
    assert main(args) == 0
    batched = read_results(out)["results"][0]["metrics"]
    for name, value in read_results(all_formats)["results"][0]["metrics"].items():
        assert batched[name] == pytest.approx(value, abs=1e-9), name
    assert not (out / "per_image.csv").exists()


def test_missing_file_fails_without_writing(dataset: Path, tmp_path: Path, capsys) -> None:
    preds = tmp_path / "partial"
    preds.mkdir()
    for path in sorted((dataset / "u8").glob("*.png"))[1:]:
        (preds / path.name).write_bytes(path.read_bytes())
    (preds / "stray.png").write_bytes((dataset / "u8" / "img_01.png").read_bytes())
    out = tmp_path / "out"
    assert main(["eval", "--gt", str(dataset / "gt"), "--pred", str(preds), "--out", str(out), *FAST]) == 1
    err = capsys.readouterr().err
    assert "img_00" in err and "missing" in err and "Traceback" not in err
    assert not out.exists() and not list(tmp_path.glob(".out.tmp-*"))
    assert main(["eval", "--gt", str(dataset / "gt"), "--pred", str(preds), "--out", str(out), "--allow-missing",
                 *FAST]) == 0
    document = read_results(out)
    assert document["results"][0]["images"] == 5
    assert [m["file"] for m in document["missing"]] == ["img_00.*"]
    assert [e["file"] for e in document["extra"]] == ["stray.png"]


@pytest.mark.slow
def test_corrupt_file_fails_then_is_recorded(dataset: Path, tmp_path: Path, capsys) -> None:
    preds = tmp_path / "corrupt"
    preds.mkdir()
    for path in (dataset / "u8").glob("*.png"):
        (preds / path.name).write_bytes(path.read_bytes())
    (preds / "img_02.png").write_bytes(b"\x89PNG\r\n\x1a\ntruncated")
    out = tmp_path / "out"
    args = ["eval", "--gt", str(dataset / "gt"), "--pred", str(preds), "--out", str(out), *FAST]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "img_02.png" in err and "unreadable" in err and "Traceback" not in err and not out.exists()
    for explicit in ("--allow-missing", "--skip-unreadable"):
        assert main([*args, explicit]) == 0
        document = read_results(out)
        assert document["results"][0]["images"] == 5 and document["unreadable"][0]["file"] == "img_02.png"


def test_skip_unreadable_still_fails_on_a_missing_file(dataset: Path, tmp_path: Path, capsys) -> None:
    preds = tmp_path / "partial"
    preds.mkdir()
    for path in sorted((dataset / "u8").glob("*.png"))[1:]:
        (preds / path.name).write_bytes(path.read_bytes())
    out = tmp_path / "out"
    assert main(["eval", "--gt", str(dataset / "gt"), "--pred", str(preds), "--out", str(out), "--skip-unreadable",
                 *FAST]) == 1
    assert "img_00" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_outputs_follow_the_umask(dataset: Path, tmp_path: Path, umask: int) -> None:
    out = tmp_path / "new" / "out"
    previous = os.umask(umask)
    try:
        assert main(["eval", "--gt", str(dataset / "gt"), "--pred", str(dataset / "u8"), "--out", str(out),
                     "--metrics", "mae", *FAST]) == 0
    finally:
        os.umask(previous)
    for path in (out.parent, out):
        assert stat.S_IMODE(path.stat().st_mode) == 0o777 & ~umask, path
    for path in out.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask, path


def test_resized_predictions_are_counted(dataset: Path, tmp_path: Path) -> None:
    preds = tmp_path / "small"
    preds.mkdir()
    for path in (dataset / "u8").glob("*.png"):
        Image.open(path).resize((28, 20), Image.BILINEAR).save(preds / path.name)
    out = tmp_path / "out"
    assert main(["eval", "--gt", str(dataset / "gt"), "--pred", str(preds), "--out", str(out),
                 "--metrics", "mae", *FAST]) == 0
    document = read_results(out)
    assert document["resized"] == 6 and document["results"][0]["resized"] == 6


def test_raw_protocol_differs_from_pysodmetrics_protocol(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "raw"
    assert main(["eval", "--gt", str(dataset / "gt"), "--pred", str(dataset / "u8"), "--out", str(out),
                 "--protocol", "raw", "--metrics", "mae", "iou_metric", *FAST]) == 0
    document = read_results(out)
    maps = {p.stem: (cv2.imread(str(p), 0), cv2.imread(str(dataset / "u8" / p.name), 0))
            for p in sorted((dataset / "gt").glob("*.png"))}
    mae = np.mean([np.abs(pred / 255 - (gt > 128)).mean() for gt, pred in maps.values()])  # no min-max stretch
    assert document["protocol"] == "raw"
    assert document["results"][0]["metrics"]["mae"] == pytest.approx(mae, abs=1e-12)


def test_out_inside_an_input_folder_is_refused(dataset: Path, capsys) -> None:
    args = ["eval", "--gt", str(dataset / "gt"), "--pred", str(dataset / "u8"), "--out", str(dataset / "u8" / "o")]
    assert main([*args, *FAST]) == 2
    assert "inside the input folder" in capsys.readouterr().err


@pytest.mark.slow
def test_bundled_sample_with_no_arguments(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["eval"]) == 0  # exactly what the README's quick start runs: the expensive tier, 2 workers
    document = json.loads((tmp_path / "nobg-metrics-out" / "results.json").read_text())
    assert [(r["dataset"], r["method"], r["images"]) for r in document["results"]] == \
        [("sample", "methodA", 24), ("sample", "methodB", 24)]
    a, b = (r["metrics"] for r in document["results"])
    assert a["mae"] < b["mae"] and a["iou_metric"] > b["iou_metric"]
    assert all(value is not None for value in a.values())
    if "f_measure_max" in a:
        assert (tmp_path / "nobg-metrics-out" / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_every_dataset_progress_bar_reaches_its_total(dataset: Path, tmp_path: Path, capsys) -> None:
    """Three methods of 6 images in batches of 4 gts: one bar for the dataset, ending at 18/18 (non-tty lines)."""
    preds = [arg for fmt in FORMATS[:3] for arg in ("--pred", str(dataset / fmt))]
    assert main(["eval", "--gt", str(dataset / "gt"), *preds, "--out", str(tmp_path / "out"), "--workers", "0",
                 "--no-plots", "--batch-size", "4", "--metrics", "mae"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "(3 methods)  [" in line]
    assert lines and " 18/18 " in lines[-1], lines


@pytest.mark.slow
def test_methods_scored_together_equal_each_scored_alone(dataset: Path, all_formats: Path, tmp_path: Path) -> None:
    """Methods side by side share the gt-only work (ops.gt_reuse); every value equals the method's own run."""
    together = read_results(all_formats)
    for fmt in FORMATS[:3]:
        out = tmp_path / fmt
        assert main(["eval", "--gt", str(dataset / "gt"), "--pred", str(dataset / fmt), "--out", str(out),
                     *FAST[:3]]) == 0
        alone = read_results(out)["results"][0]
        shared = next(r for r in together["results"] if r["method"] == fmt)
        assert alone["metrics"] == shared["metrics"], fmt
