"""``nobg-metrics eval --protocol birefnet --task ...`` on generated BiRefNet-style layouts (``DIS-VD/gt``,
predictions by name, some at other sizes): the table equals BiRefNet's evaluation run over the same files —
cv2-read, cv2-resized, tests/reference/birefnet_port.py for MAE, MSE, mBA, S and the BIoU curves, PySODMetrics
for E, F and wF (BiRefNet's code for them is PySODMetrics') — column for column, digit for digit, in
``task_to_field_names`` order; HCE only on ``DIS-`` datasets."""

from __future__ import annotations

import csv
from pathlib import Path

import cv2
import numpy as np
import py_sod_metrics as psm
import pytest
import torch
from PIL import Image

from nobg_metrics.cli.eval.main import main
from tests.cli.folders import make_dataset, read_results
from tests.reference import birefnet_port

FAST = ["--workers", "0", "--quiet", "--no-plots"]
FIELDS = {  # BiRefNet eval_existingOnes.py task_to_field_names, without "Dataset", "Method"
    "DIS5K": "maxFm wFmeasure MAE Smeasure meanEm HCE maxEm meanFm adpEm adpFm mBA maxBIoU meanBIoU",
    "COD": "Smeasure wFmeasure meanFm meanEm maxEm MAE maxFm adpEm adpFm HCE mBA maxBIoU meanBIoU",
    "HRSOD": "Smeasure maxFm meanEm MAE maxEm meanFm wFmeasure adpEm adpFm HCE mBA maxBIoU meanBIoU",
    "Matting": "Smeasure maxFm meanEm MSE maxEm meanFm wFmeasure adpEm adpFm HCE mBA maxBIoU meanBIoU",
}


def _hce_class():
    try:
        from nobg_metrics.metrics.sod.hce import HCE
    except ImportError:
        return None
    return HCE


def birefnet_table(gt_dir: Path, pred_dir: Path, task: str, with_hce: bool) -> dict[str, str]:
    """BiRefNet's printed row for one method: its reading (cv2.imread grey, cv2.resize to the gt), the ports'
    dataset values, ``sort_and_round_scores`` and its cell formatting."""
    gts, preds = [], []
    for gt_path in sorted(gt_dir.glob("*.png")):
        gt = cv2.imread(str(gt_path), cv2.IMREAD_GRAYSCALE)
        pred = cv2.imread(str(pred_dir / gt_path.name), cv2.IMREAD_GRAYSCALE)
        gts.append(gt)
        preds.append(cv2.resize(pred, (gt.shape[1], gt.shape[0])))
    port = birefnet_port.evaluate(preds, gts)
    em, fm, wfm = psm.Emeasure(), psm.Fmeasure(), psm.WeightedFmeasure()
    for pred, gt in zip(preds, gts):
        for measure in (em, fm, wfm):
            measure.step(pred=pred, gt=gt)
    e, f = em.get_results()["em"], fm.get_results()["fm"]
    values = {"maxFm": f["curve"].max(), "meanFm": f["curve"].mean(), "adpFm": f["adp"], "maxEm": e["curve"].max(),
              "meanEm": e["curve"].mean(), "adpEm": e["adp"], "wFmeasure": wfm.get_results()["wfm"],
              "Smeasure": port["S"], "MAE": port["MAE"], "MSE": port["MSE"], "mBA": port["mBA"],
              "maxBIoU": port["maxBIoU"], "meanBIoU": port["meanBIoU"]}
    if with_hce:  # the DIS rule (pred_u8 > 128) of our HCE class, fed the arrays BiRefNet's HCEMeasure sees
        metric = _hce_class()(protocol="dis")
        for pred, gt in zip(preds, gts):
            metric.update(torch.from_numpy(pred), torch.from_numpy(gt))
        values["HCE"] = float(metric.compute())
    cells = {}
    for field in FIELDS[task].split():
        if field not in values:
            continue
        value = np.float64(values[field])
        score = int(value.round()) if field == "HCE" else value.round(5 if field == "MSE" else 3)
        cells[field] = "." + format(score, ".3f").split(".")[-1] if score <= 1 else format(score, "<4").strip()
    return cells


def _table(out: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    lines = [line for line in (out / "table.md").read_text().splitlines() if line.startswith("|")]
    header = [cell.strip().split(" ")[0] for cell in lines[0].strip("|").split("|")]
    rows = {}
    for line in lines[2:]:
        cells = [cell.strip().replace("**", "") for cell in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header, cells))
    return header[2:], rows


def _write_resized(source: Path, target: Path, size: tuple[int, int]) -> None:
    """The same predictions saved at another size (the command must bring them back with cv2's INTER_LINEAR)."""
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.glob("*.png")):
        pred = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        Image.fromarray(cv2.resize(pred, size, interpolation=cv2.INTER_AREA)).save(target / path.name)


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("birefnet")
    for dataset, seed in (("DIS-VD", 0), ("HRSOD-TE", 3)):
        make_dataset(root / dataset, count=5, shape=(40, 56), seed=seed, formats=("u8",))
        _write_resized(root / dataset / "u8", root / dataset / "small", (50, 37))
        _write_resized(root / dataset / "u8", root / dataset / "large", (77, 61))
    return root


def _run(layout: Path, out: Path, dataset: str, task: str | None) -> int:
    root = layout / dataset
    preds = [f"{name}={root / name}" for name in ("u8", "small", "large")]
    task_flags = [] if task is None else ["--task", task]
    return main(["eval", "--protocol", "birefnet", *task_flags, "--gt", str(root / "gt"), "--pred", *preds,
                 "--out", str(out), *FAST])


@pytest.mark.parametrize("dataset, task", [("DIS-VD", None), ("DIS-VD", "Matting"), ("HRSOD-TE", "HRSOD"),
                                           ("HRSOD-TE", "COD")])
def test_table_equals_birefnet_column_for_column_digit_for_digit(layout, tmp_path, dataset, task):
    out = tmp_path / "out"
    assert _run(layout, out, dataset, task) == 0
    task = task or "DIS5K"  # BiRefNet's default task
    hce = _hce_class() is not None
    expected_fields = [f for f in FIELDS[task].split() if hce or f != "HCE"]
    header, rows = _table(out)
    assert header == expected_fields
    document = read_results(out)
    assert document["protocol"] == "birefnet" and document["task"] == task
    assert [r["resized"] for r in document["results"]] == [0, 5, 5]
    for method in ("u8", "small", "large"):
        expected = birefnet_table(layout / dataset / "gt", layout / dataset / method, task, hce and "DIS-" in dataset)
        for field in expected_fields:
            if field == "HCE" and "DIS-" not in dataset:
                assert rows[method][field] == "-"  # HCE is scored on DIS- datasets only
                continue
            assert rows[method][field] == expected[field], (method, field)


def test_raw_values_and_per_image_records(layout, tmp_path):
    out = tmp_path / "out"
    assert _run(layout, out, "DIS-VD", "Matting") == 0
    gts = [cv2.imread(str(p), cv2.IMREAD_GRAYSCALE) for p in sorted((layout / "DIS-VD" / "gt").glob("*.png"))]
    preds = [cv2.resize(cv2.imread(str(layout / "DIS-VD" / "small" / p.name), cv2.IMREAD_GRAYSCALE), g.shape[::-1])
             for p, g in zip(sorted((layout / "DIS-VD" / "gt").glob("*.png")), gts)]
    port = birefnet_port.evaluate(preds, gts)
    result = next(r for r in read_results(out)["results"] if r["method"] == "small")
    for name, key in (("birefnet_mse", "MSE"), ("s_measure", "S"), ("grey_biou_max", "maxBIoU"),
                      ("grey_biou_mean", "meanBIoU")):
        assert abs(result["metrics"][name] - port[key]) <= 1e-12, name
    assert result["metrics"]["birefnet_mba"] is None and np.isnan(port["mBA"])  # an empty gt: NaN, as BiRefNet
    with (out / "per_image.csv").open() as handle:
        rows = [r for r in csv.DictReader(handle) if r["method"] == "small"]
    for row, pred, gt in zip(rows, preds, gts):
        assert abs(float(row["birefnet_mse"]) - birefnet_port.mse(pred, gt)) <= 1e-12
        ba = birefnet_port.ba(pred, gt)
        assert (row["birefnet_mba"] == "") if np.isnan(ba) else abs(float(row["birefnet_mba"]) - ba) <= 1e-12
    assert (out / "worst.md").exists()


def test_birefnet_columns_need_the_birefnet_protocol(layout, tmp_path, capsys):
    root = layout / "DIS-VD"
    assert main(["eval", "--gt", str(root / "gt"), "--pred", str(root / "u8"), "--metrics", "birefnet_mse",
                 "--out", str(tmp_path / "out"), *FAST]) == 2
    assert "--protocol birefnet" in capsys.readouterr().err
    assert main(["eval", "--protocol", "birefnet", "--task", "COD", "--metrics", "mae", "birefnet_mse",
                 "--gt", str(root / "gt"), "--pred", str(root / "u8"), "--out", str(tmp_path / "out2"), *FAST]) == 2
    assert "birefnet_mse" in capsys.readouterr().err  # COD has no MSE column
