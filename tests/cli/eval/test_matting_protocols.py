"""``nobg-metrics eval --task matting --protocol dim|p3m`` on generated Composition-1k-like / P3M-like layouts: the
tables print the ports' dataset values digit for digit in each benchmark's units (unit in the header),
results.json and per_image.csv hold the raw values (<= 1e-12 relative), worst.md orders the images, and
task/protocol combinations that do not go together are usage errors (exit 2)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from nobg_metrics.cli.eval.main import main
from nobg_metrics.cli.eval.protocols import PRINTED
from tests.cli.folders import make_matting_dataset, read_results
from tests.reference import dim_matting as dim
from tests.reference import p3m_port as p3m

FAST = ["--workers", "0", "--quiet", "--no-plots"]
METHODS = ("A", "B")
DIM_PORT = {"sad": dim.sad, "mse_metric": dim.mse, "gradient_error": dim.gradient,
            "connectivity_error": dim.connectivity}
P3M_PORT = {"sad": "p3m_sad", "mse": "p3m_mse", "mad": "p3m_mad", "grad": "p3m_gradient", "conn": "p3m_connectivity",
            "sad_trimap": "p3m_sad_trimap", "mse_trimap": "p3m_mse_trimap", "mad_trimap": "p3m_mad_trimap",
            "sad_fg": "p3m_sad_fg", "sad_bg": "p3m_sad_bg"}


def _read(path: Path) -> np.ndarray:
    return cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)


def _files(root: Path, method: str, with_trimap: bool):
    for alpha_path in sorted((root / "alpha").glob("*.png")):
        trimap = _read(root / "trimaps" / alpha_path.name) if with_trimap else None
        yield alpha_path.stem, _read(root / method / alpha_path.name), _read(alpha_path), trimap


def dim_reference(root: Path, method: str, with_trimap: bool) -> dict[str, list[float]]:
    """The DIM port per image over the files (cv2-read, as the command reads them)."""
    values: dict[str, list[float]] = {name: [] for name in DIM_PORT}
    for _, pred, gt, trimap in _files(root, method, with_trimap):
        for name, function in DIM_PORT.items():
            values[name].append(function(pred, gt, trimap))
    return values


def p3m_reference(root: Path, method: str, with_trimap: bool) -> dict[str, list[float]]:
    """The P3M port per image (``png / 255.``); a trimap without unknown pixels scores MSE-T = MAD-T = 0 (our
    named policy; the reference divides by zero there)."""
    values: dict[str, list[float]] = {}
    for _, pred, gt, trimap in _files(root, method, with_trimap):
        image = p3m.all_metrics(p3m.read_alpha(pred), p3m.read_alpha(gt), trimap)
        if trimap is not None and not (trimap == 128).any():
            image["mse_trimap"] = image["mad_trimap"] = 0.0
        for port_name, value in image.items():
            values.setdefault(P3M_PORT[port_name], []).append(value)
    return values


def _table(out: Path) -> dict[str, dict[str, str]]:
    """``method -> {header: cell}`` of table.md (the top-3 and subset marks removed)."""
    lines = [line for line in (out / "table.md").read_text().splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [re.sub(r"\*\*|</?ins>|\*|†", "", cell.strip()) for cell in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header, cells))
    return rows


def _close(value: float, expected: float, what: str) -> None:
    assert abs(value - expected) <= 1e-12 * max(abs(expected), 1.0), f"{what}: {value!r} != {expected!r}"


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("composition")
    make_matting_dataset(root, METHODS)
    return root


def _run(layout: Path, out: Path, protocol: str, with_trimap: bool, *extra: str) -> int:
    args = ["eval", "--task", "matting", "--protocol", protocol, "--gt", str(layout / "alpha"),
            "--pred", *(str(layout / m) for m in METHODS), "--out", str(out), *FAST, *extra]
    if with_trimap:
        args += ["--trimap", str(layout / "trimaps")]
    return main(args)


@pytest.fixture(scope="module")
def runs(layout: Path, tmp_path_factory) -> dict[tuple[str, bool], Path]:
    outs = {}
    for protocol in ("dim", "p3m"):
        for with_trimap in (True, False):
            out = tmp_path_factory.mktemp("out") / f"{protocol}_{with_trimap}"
            assert _run(layout, out, protocol, with_trimap) == 0
            outs[protocol, with_trimap] = out
    return outs


@pytest.mark.parametrize("with_trimap", [pytest.param(True, marks=pytest.mark.slow), False], ids=["trimap", "whole"])
@pytest.mark.parametrize("protocol", ["dim", "p3m"])
def test_table_equals_the_port_digit_for_digit(layout, runs, protocol, with_trimap):
    out = runs[protocol, with_trimap]
    document = read_results(out)
    table = _table(out)
    expected_names = {"dim": list(DIM_PORT), "p3m": list(P3M_PORT.values())}[protocol]
    if protocol == "p3m" and not with_trimap:
        expected_names = expected_names[:5]  # the trimap columns are left out without a trimap
    assert document["protocol"] == protocol and document["task"] == "matting"
    assert sorted(document["metrics"]) == sorted(expected_names)
    for result in document["results"]:
        reference = (dim_reference if protocol == "dim" else p3m_reference)(layout, result["method"], with_trimap)
        assert result["images"] == 5
        row = table[result["method"]]
        for name in document["metrics"]:
            mean = float(np.mean(np.array(reference[name], np.float64)))
            _close(result["metrics"][name], mean, name)
            printed = PRINTED[name]
            assert row[f"{printed.header()} ↓"] == printed.format(mean), name


def test_units_are_in_the_headers(runs):
    dim_header = (runs["dim", True] / "table.md").read_text()
    assert "SAD (÷1000) ↓" in dim_header and "MSE (×1000) ↓" in dim_header and "Grad (÷1000) ↓" in dim_header
    assert "Conn (÷1000) ↓" in dim_header
    p3m_header = (runs["p3m", True] / "table.md").read_text()
    for label in ("SAD (÷1000)", "MSE ↓", "MAD ↓", "Grad (÷10)", "Conn (÷1000)", "SAD-T (÷1000)", "MSE-T ↓",
                  "MAD-T ↓", "SAD-FG (÷1000)", "SAD-BG (÷1000)"):
        assert label in p3m_header, label
    assert "SAD-T" not in (runs["p3m", False] / "table.md").read_text()
    tex = (runs["p3m", True] / "table.tex").read_text()
    assert r"SAD-T (÷1000) $\downarrow$" in tex
    assert read_results(runs["dim", True])["printed"]["sad"] == {"label": "SAD", "scale": 1e-3}


def test_per_image_records_and_worst_list(layout, runs):
    out = runs["p3m", True]
    with (out / "per_image.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["method"] == "A"]
    reference = p3m_reference(layout, "A", True)
    for index, row in enumerate(rows):
        for name, values in reference.items():
            _close(float(row[name]), values[index], f"{row['image']} {name}")
    worst = (out / "worst.md").read_text()
    dataset = read_results(out)["results"][0]["dataset"]
    assert dataset == layout.name  # "alpha" is a generic gt folder name: the dataset is named by its parent
    section = worst.split(f"## {dataset} / A")[1].split("##")[0]
    sad_line = next(line for line in section.splitlines() if line.startswith("| SAD (÷1000)"))
    order = [rows[i]["image"] for i in np.argsort(-np.array(reference["p3m_sad"]), kind="stable")]
    assert [item.split(" (")[0] for item in sad_line.split("|")[2].strip().split(", ")] == order


def test_composition1k_and_p3m_layout_names(tmp_path):
    """``alpha_copy/`` names its dataset by the parent folder (Composition-1k), ``P3M-500-P/mask`` by ``P3M-500-P``."""
    make_matting_dataset(tmp_path / "Composition-1k-testset", ("A",), count=2, alpha_dir="alpha_copy")
    make_matting_dataset(tmp_path / "P3M-500-P", ("A",), count=2, alpha_dir="mask", trimap_dir="trimap")
    for root, gt, trimap in (("Composition-1k-testset", "alpha_copy", "trimaps"), ("P3M-500-P", "mask", "trimap")):
        out = tmp_path / f"out-{root}"
        assert main(["eval", "--task", "matting", "--protocol", "p3m", "--gt", str(tmp_path / root / gt),
                     "--trimap", str(tmp_path / root / trimap), "--pred", str(tmp_path / root / "A"),
                     "--out", str(out), *FAST]) == 0
        assert read_results(out)["results"][0]["dataset"] == root


@pytest.mark.parametrize("flags, words", [
    (["--task", "matting", "--protocol", "raw"], ["--protocol raw", "--task matting"]),
    (["--task", "sod", "--protocol", "p3m"], ["--protocol p3m", "--task sod"]),
    (["--task", "matting", "--protocol", "birefnet"], ["--protocol birefnet", "--task matting"]),
    (["--task", "DIS5K", "--protocol", "dim"], ["--protocol dim", "--task DIS5K"]),
    (["--task", "matting", "--tier", "cheap"], ["--tier", "dim"]),
    (["--task", "matting", "--metrics", "mae"], ["mae", "--protocol dim"]),
])
def test_combinations_that_do_not_go_together_are_usage_errors(layout, tmp_path, capsys, flags, words):
    out = tmp_path / "out"
    args = ["eval", "--gt", str(layout / "alpha"), "--pred", str(layout / "A"), "--out", str(out), *FAST, *flags]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert all(word in err for word in words), err
    assert "Traceback" not in err and not out.exists()


def test_trimap_metrics_alone_without_a_trimap_are_a_usage_error(layout, tmp_path, capsys):
    assert _run(layout, tmp_path / "out", "p3m", False, "--metrics", "p3m_sad_trimap") == 2
    assert "need a trimap" in capsys.readouterr().err


def test_task_matting_defaults_to_dim_and_metrics_pick_a_subset(layout, tmp_path):
    out = tmp_path / "out"
    assert main(["eval", "--task", "matting", "--gt", str(layout / "alpha"), "--pred", str(layout / "A"),
                 "--trimap", str(layout / "trimaps"), "--metrics", "mse_metric", "sad", "--out", str(out), *FAST]) == 0
    document = read_results(out)
    assert document["protocol"] == "dim" and document["metrics"] == ["sad", "mse_metric"]
    assert document["tier"] == "custom"


def test_a_p3m_layout_gives_the_ports_table_digit_for_digit(tmp_path):
    """P3M-10k's ``P3M-500-P/{mask, trimap}`` with predictions by name: the table is the port's, the dataset is named
    by the parent folder."""
    root = tmp_path / "P3M-500-P"
    make_matting_dataset(root, ("A",), count=4, alpha_dir="mask", trimap_dir="trimap", seed=5)
    out = tmp_path / "out"
    assert main(["eval", "--task", "matting", "--protocol", "p3m", "--gt", str(root / "mask"), "--trimap",
                 str(root / "trimap"), "--pred", str(root / "A"), "--out", str(out), *FAST]) == 0
    values: dict[str, list[float]] = {}
    for alpha_path in sorted((root / "mask").glob("*.png")):
        trimap = _read(root / "trimap" / alpha_path.name)
        image = p3m.all_metrics(p3m.read_alpha(_read(root / "A" / alpha_path.name)), p3m.read_alpha(_read(alpha_path)),
                                trimap)
        if not (trimap == 128).any():
            image["mse_trimap"] = image["mad_trimap"] = 0.0
        for port_name, value in image.items():
            values.setdefault(P3M_PORT[port_name], []).append(value)
    document, row = read_results(out), _table(out)["A"]
    assert document["results"][0]["dataset"] == "P3M-500-P"
    for name in document["metrics"]:
        mean = float(np.mean(np.array(values[name], np.float64)))
        _close(document["results"][0]["metrics"][name], mean, name)
        assert row[f"{PRINTED[name].header()} ↓"] == PRINTED[name].format(mean), name
