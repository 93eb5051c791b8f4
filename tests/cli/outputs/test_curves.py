"""Curve data and plots of ``nobg-metrics eval`` and ``nobg-metrics plot``: the saved curves are the metrics' own
(and PySODMetrics'), curves.npz / curves.csv round-trip exactly, ``plot`` redraws without torch, style errors are
named, ``--highlight`` and the zoom reach the matplotlib artists."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import py_sod_metrics as psm
import pytest
import torch
from PIL import Image

from nobg_metrics.cli.entry import main as entry_main
from nobg_metrics.cli.eval import curve_collection
from nobg_metrics.cli.eval.config import ConfigError
from nobg_metrics.cli.eval.main import main
from nobg_metrics.cli.outputs import curve_data
from nobg_metrics.cli.outputs.plot_style import Style, load_style, parse_style
from nobg_metrics.cli.outputs.plots import draw_figure
from nobg_metrics.io.images import read_mask, read_prediction
from nobg_metrics.metrics.sod.curves import FMeasure
from nobg_metrics.metrics.sod.overlap import Dice, IoU
from tests.cli.folders import make_dataset

pytest.importorskip("matplotlib")

METRICS = ["f_measure_max", "iou_max", "dice_mean", "roc_auc", "mae"]
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """One eval of two methods (A: the generated maps, B: the same maps inverted) with every curve kind."""
    root = tmp_path_factory.mktemp("curves")
    maps = make_dataset(root / "data", formats=("u8",))
    (root / "data" / "B").mkdir()
    for name, (_, pred) in maps.items():
        Image.fromarray(255 - pred).save(root / "data" / "B" / f"{name}.png")
    out = root / "out"
    argv = ["eval", "--gt", str(root / "data" / "gt"), "--pred", f"A={root / 'data' / 'u8'}",
            f"B={root / 'data' / 'B'}", "--metrics", *METRICS, "--out", str(out), "--workers", "0", "--quiet",
            "--highlight", "A"]
    assert main(argv) == 0
    return out


def _own_curves(folder: Path, gt_folder: Path) -> dict[str, np.ndarray]:
    """The library's metrics fed the command's decoded maps one image at a time (the protocol's options)."""
    options = {"normalize": True, "empty_gt": "reference"}
    f, iou, dice = FMeasure("max", **options), IoU(mode="max", **options), Dice(mode="mean", **options)
    for gt_path in sorted(gt_folder.glob("*.png")):
        gt = torch.from_numpy(read_mask(gt_path).copy())[None]
        pred = torch.from_numpy(read_prediction(folder / gt_path.name).copy())[None]
        for metric in (f, iou, dice):
            metric.update(pred, gt)
    own = {key: value.numpy() for key, value in f.curves()._asdict().items()}
    own["iou"], own["dice"] = iou.curves()["iou"].numpy(), dice.curves()["dice"].numpy()
    return own


def _reference_curves(folder: Path, gt_folder: Path) -> dict[str, np.ndarray]:
    """PySODMetrics 1.6.2 on cv2-read files (PySODEvalToolkit's loop): mean per-image curves."""
    fm, em = psm.Fmeasure(), psm.Emeasure()
    handlers = {"iou": psm.IOUHandler(True, False), "dice": psm.DICEHandler(True, False),
                "fpr": psm.FPRHandler(True, False), "recall": psm.RecallHandler(True, False)}
    v2 = psm.FmeasureV2(handlers)
    for gt_path in sorted(gt_folder.glob("*.png")):
        gt = cv2.imread(str(gt_path), cv2.IMREAD_GRAYSCALE)
        pred = cv2.imread(str(folder / gt_path.name), cv2.IMREAD_GRAYSCALE)
        for metric in (fm, em, v2):
            metric.step(pred=pred, gt=gt)
    results = fm.get_results()
    out = {"precision": results["pr"]["p"], "recall": results["pr"]["r"], "f_measure": results["fm"]["curve"],
           "e_measure": em.get_results()["em"]["curve"]}
    out.update({name: value["dynamic"] for name, value in v2.get_results().items()})
    return out


def test_curve_data_are_the_metrics_own_curves_and_pysodmetrics(run: Path) -> None:
    entries = curve_data.load_curves(run)
    assert [(e["dataset"], e["method"]) for e in entries] == [("data", "A"), ("data", "B")]
    data = run.parent / "data"
    for entry, folder in zip(entries, (data / "u8", data / "B")):
        values = {k: np.asarray(v) for k, v in entry["values"].items()}
        assert sorted(values) == ["dice", "e_measure", "f_measure", "fpr", "iou", "precision", "recall"]
        assert entry["sources"] == {"precision": "f_measure_max", "recall": "roc_auc", "f_measure": "f_measure_max",
                                    "e_measure": "f_measure_max", "iou": "iou_max", "dice": "dice_mean",
                                    "fpr": "roc_auc"}
        assert np.array_equal(entry["thresholds"], np.arange(255, -1, -1) / 255)
        own = _own_curves(folder, data / "gt")
        for key in ("precision", "recall", "f_measure", "e_measure", "iou", "dice"):
            assert np.array_equal(values[key], own[key]), key  # the very same sums: bit for bit
        reference = _reference_curves(folder, data / "gt")
        for key, expected in reference.items():
            assert np.max(np.abs(values[key] - expected)) <= 1e-12, key


def test_npz_and_csv_round_trip_exactly(run: Path, tmp_path: Path) -> None:
    from_npz = curve_data.read_npz(run / "curves.npz")
    from_csv = curve_data.read_csv(run / "curves.csv")
    assert from_npz == from_csv
    entries = [{"dataset": "D,1", "method": 'M "x"', "thresholds": [1.0, 0.5, 0.0],
                "values": {"precision": [math.nan, 0.1 + 0.2, 1 / 3], "recall": [0.0, 0.5, 1.0]},
                "sources": {"precision": "pr_auc", "recall": "pr_auc"}}]
    curve_data.write_npz(tmp_path / "c.npz", entries)
    curve_data.write_csv(tmp_path / "c.csv", entries)
    for back in (curve_data.read_npz(tmp_path / "c.npz"), curve_data.read_csv(tmp_path / "c.csv")):
        assert json.dumps(back) == json.dumps(entries)  # NaN and every bit kept (json prints NaN as NaN)
    with np.load(tmp_path / "c.npz", allow_pickle=False) as data:  # readable with numpy alone
        assert json.loads(str(data["manifest"]))["entries"][0]["measures"] == ["precision", "recall"]
        assert data["entry0_recall"].tolist() == [0.0, 0.5, 1.0]


def test_curves_by_job_gives_scores_curves_form(run: Path) -> None:
    from nobg_metrics.cli.eval.jobs import Job

    entries = curve_data.load_curves(run)
    jobs = [Job(7, "data", "B"), Job(3, "other", "A")]
    by_job = curve_data.curves_by_job(entries, jobs)
    assert list(by_job) == [7] and set(by_job[7]) == {"thresholds", "values", "sources"}
    assert by_job[7]["values"] == entries[1]["values"]


def test_corrupt_curve_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "curves.csv").write_text("dataset,method\n")
    with pytest.raises(curve_data.CurveDataError, match=r"curves\.csv: the header"):
        curve_data.load_curves(tmp_path)
    (tmp_path / "curves.npz").write_bytes(b"not a zip")
    with pytest.raises(curve_data.CurveDataError, match=r"curves\.npz: unreadable"):
        curve_data.load_curves(tmp_path)
    with pytest.raises(curve_data.CurveDataError, match=r"no curves\.npz or curves\.csv"):
        curve_data.load_curves(tmp_path / "nothing")


def test_plot_redraws_without_scoring_or_torch(run: Path, tmp_path: Path) -> None:
    code = ("import sys\nfrom nobg_metrics.cli.entry import main\nstatus = main(sys.argv[1:])\n"
            "print('loaded:', sorted(m for m in ('torch', 'nobg_metrics.metrics', 'nobg_metrics.cli.eval.runner') "
            "if m in sys.modules))\nsys.exit(status)")
    argv = ["plot", str(run), "--out", str(tmp_path / "redrawn"), "--kinds", "pr", "roc", "--highlight", "B",
            "--pr-xlim", "0.6", "1", "--format", "png"]
    result = subprocess.run([sys.executable, "-c", code, *argv], check=False, capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "loaded: []" in result.stdout
    assert (tmp_path / "redrawn" / "curves.png").stat().st_size > 0
    assert not (tmp_path / "redrawn" / "curves.pdf").exists()


def test_eval_writes_the_figures_and_notes_missing_kinds(run: Path) -> None:
    for name in ("curves.png", "curves.pdf", "curves.npz", "curves.csv"):
        assert (run / name).stat().st_size > 0


def test_plot_errors(run: Path, tmp_path: Path, capsys) -> None:
    assert entry_main(["plot", str(run), "--highlight", "a", "--out", str(tmp_path)]) == 2
    assert "did you mean 'A'?" in capsys.readouterr().err
    assert entry_main(["plot", str(tmp_path / "none")]) == 1
    assert "no curves.npz or curves.csv" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("methods:\n  A: {colour: red}\n")
    with pytest.raises(SystemExit) as stop:
        entry_main(["plot", str(run), "--plot-style", str(bad)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "methods.A: unknown key 'colour'; did you mean 'color'?" in err


@pytest.mark.parametrize(("text", "message"), [
    ("figsize: [4, 3]", "unknown key 'figsize'; did you mean 'figure_size'?"),
    ("zoom: {pr: {xlimit: [0.6, 1]}}", "zoom.pr: unknown key 'xlimit'; did you mean 'xlim'?"),
    ("zoom: {pr: {xlim: [1, 0.6]}}", "zoom.pr.xlim: expected [low, high]"),
    ("zoom: {prc: {xlim: [0.6, 1]}}", "zoom: unknown key 'prc'; did you mean 'pr'?"),
    ("legend: {location: left}", "legend.location: expected 'right' or 'bottom'"),
    ("methods: {A: {color: notacolour}}", "methods.A.color: not a matplotlib colour"),
    ("methods: {A: {linestyle: wavy}}", "methods.A.linestyle: 'wavy' is not one of"),
    ("methods: {A: {marker: 12.5}}", "methods.A.marker: not a matplotlib marker"),
    ("dpi: -3", "dpi: expected a positive integer"),
    ("highlight: A", "highlight: expected a list of method names"),
])
def test_style_file_errors_are_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "style.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as error:
        load_style(path)
    assert message in str(error.value) and str(path) in str(error.value)


def _lines(figure, method: str) -> list:
    return [line for axis in figure.axes for line in axis.lines if line.get_gid() == method]


def test_highlight_zoom_and_one_shared_legend(run: Path) -> None:
    entries = curve_data.load_curves(run)
    style = parse_style({"methods": {"B": {"color": "black", "marker": "o", "markevery": 32, "label": "Theirs"}},
                         "zoom": {"roc": {"xlim": [0, 0.3]}}, "panel_size": [3, 2.5], "dpi": 72})
    figure = draw_figure(entries, None, style, highlight=["A"], pr_xlim=(0.6, 1.0))
    own, other = _lines(figure, "A"), _lines(figure, "B")
    assert len(own) == len(other) == 6  # pr roc f e iou dice
    assert all(line.get_linewidth() == 2.6 and line.get_linestyle() == "-" and line.get_zorder() >= 10 for line in own)
    assert all(line.get_linewidth() == 1.0 and line.get_alpha() == 0.55 and line.get_zorder() == 2 for line in other)
    assert all(line.get_color() == "black" and line.get_marker() == "o" for line in other)
    assert len(figure.legends) == 1 and all(axis.get_legend() is None for axis in figure.axes)
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["A", "Theirs"]
    pr, roc = figure.axes[0], figure.axes[1]
    assert pr.get_xlim() == (0.6, 1.0) and roc.get_xlim() == (0.0, 0.3)
    assert tuple(figure.get_size_inches()) == (18.0, 2.5)
    plain = draw_figure(entries, ["f"], Style())
    assert {line.get_linewidth() for line in plain.axes[0].lines} == {1.6} and len(plain.axes) == 1


def test_a_run_without_curve_metrics_saves_no_curve_files(run: Path, tmp_path: Path, capsys) -> None:
    data = run.parent / "data"
    out = tmp_path / "mae"
    assert main(["eval", "--gt", str(data / "gt"), "--pred", str(data / "u8"), "--metrics", "mae", "--out", str(out),
                 "--workers", "0", "--quiet"]) == 0
    assert "no metric of the run holds a threshold curve" in capsys.readouterr().err
    assert not list(out.glob("curves.*"))


def test_unknown_highlight_and_missing_kinds_are_noted() -> None:
    from argparse import Namespace

    from nobg_metrics.cli.outputs.plots import figure_writers

    entries = [{"dataset": "D", "method": "Ours", "thresholds": [1.0, 0.0], "values": {"precision": [1.0, 0.5],
                "recall": [0.0, 1.0]}, "sources": {"precision": "pr_auc", "recall": "pr_auc"}}]
    notes: list[str] = []
    args = Namespace(highlight=["ours"], curve_kinds=["roc", "pr"], plot_style=None, pr_xlim=None, pr_ylim=None)
    writers = figure_writers(entries, args, ("png",), notes.append)
    assert list(writers) == ["png"]
    assert notes == ["--highlight 'ours': no such method in the curves; did you mean 'Ours'?",
                     "curve kinds not drawn (no metric of the run holds their curves: docs/curves.md): roc"]
    args.curve_kinds = ["iou"]
    assert figure_writers(entries, args, ("png",), notes.append) == {}


def test_collect_curves_reads_each_shared_state_once_and_equals_the_metrics() -> None:
    from nobg_metrics.cli.eval.runner import build_collection
    from nobg_metrics.metrics.boundary.grey_boundary_iou import GreyBoundaryIoU

    names = ["mae", "iou_mean", "f_measure_adaptive", "grey_biou_max", "grey_biou_mean"]
    collection = build_collection(names, "pysodmetrics", torch.device("cpu"))
    rng = np.random.default_rng(3)
    preds = [torch.from_numpy(rng.integers(0, 256, (2, 24, 30), dtype=np.uint8)) for _ in range(2)]
    gts = [torch.from_numpy((rng.random((2, 24, 30)) > 0.6).astype(np.uint8) * 255) for _ in range(2)]
    options = {"normalize": True, "empty_gt": "reference"}
    alone = [FMeasure("adaptive", **options), IoU(mode="mean", **options), GreyBoundaryIoU("max", **options)]
    for pred, gt in zip(preds, gts):
        collection.update(pred, gt)
        for metric in alone:
            metric.update(pred, gt)
    members = dict(collection.items(keep_base=True, copy_state=False))
    collection.compute()
    curves = curve_collection.collect_curves(members)
    assert curves["sources"] == {"e_measure": "f_measure_adaptive", "f_measure": "f_measure_adaptive",
                                 "grey_boundary_iou": "grey_biou_max", "iou": "iou_mean",
                                 "precision": "f_measure_adaptive", "recall": "f_measure_adaptive"}
    expected = {**alone[0].curves()._asdict(), **alone[1].curves(), **alone[2].curves()}
    for measure, values in curves["values"].items():
        assert values == expected[measure].tolist(), measure
    assert curves["thresholds"] == expected["thresholds"].tolist()
    assert curve_collection.collect_curves({"mae": members["mae"]}) is None


def test_curves_of_the_earlier_flat_form_are_still_saved() -> None:
    from types import SimpleNamespace

    from nobg_metrics.cli.eval.jobs import Job

    flat = {"precision": [1.0, 0.5], "recall": [0.0, 1.0], "f_measure": [0.0, 0.6], "thresholds": [1.0, 0.0]}
    scores = SimpleNamespace(curves={0: flat, 1: flat}, images={0: 3, 1: 0})
    (entry,) = curve_data.curve_entries([Job(0, "D", "M"), Job(1, "D", "N")], scores)  # N scored no image
    assert entry["values"] == {k: flat[k] for k in ("precision", "recall", "f_measure")}
    assert entry["thresholds"] == [1.0, 0.0] and entry["method"] == "M"


def test_the_manifest_names_the_metric_each_curve_comes_from(tmp_path: Path) -> None:
    """``--preset sod``: F, P and R come from f_measure_max, E from e_measure_max — the first metric of the run
    (in its order, not the collection's alphabetical one) whose mode reads the curve, else that holds it."""
    make_dataset(tmp_path / "data", count=3, formats=("u8",))
    out = tmp_path / "out"
    assert main(["eval", "--gt", str(tmp_path / "data" / "gt"), "--pred", str(tmp_path / "data" / "u8"), "--preset",
                 "sod", "--out", str(out), "--workers", "0", "--quiet", "--no-plots", "--no-report"]) == 0
    with np.load(out / "curves.npz") as data:
        manifest = json.loads(str(data["manifest"]))
    assert manifest["entries"][0]["sources"] == {"e_measure": "e_measure_max", "f_measure": "f_measure_max",
                                                 "precision": "f_measure_max", "recall": "f_measure_max"}
