"""The ``nobg-metrics instances`` command: its summary printed as pycocotools / lvis print theirs, its exit statuses
and messages, and (with ``nobg_metrics.MeanAveragePrecision``) every value against pycocotools' COCOeval run on the
same JSON files."""

from __future__ import annotations

import contextlib
import io
import json
from collections import OrderedDict
from types import SimpleNamespace

import numpy as np
import pytest

from nobg_metrics.cli.entry import main
from nobg_metrics.cli.instances_summary import coco_lines, lvis_lines
from tests.cli.instances_data import make_dataset, write_dataset

pytest.importorskip("pycocotools")
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # pycocotools, numpy 2

try:
    from nobg_metrics import MeanAveragePrecision  # noqa: F401
    HAVE_METRIC = True
except ImportError:
    HAVE_METRIC = False
needs_metric = pytest.mark.skipif(not HAVE_METRIC, reason="nobg_metrics.MeanAveragePrecision is not in this build")

COCO_KEYS = ("map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100",
             "mar_small", "mar_medium", "mar_large")
"""The metric's names of pycocotools' ``stats[0..11]``."""


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["instances", *argv])
    return status, out.getvalue(), err.getvalue()


def _coco_reference(gt_path, dt_path, iou_type: str = "segm") -> tuple[list[str], np.ndarray, object]:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        gt = COCO(str(gt_path))
        evaluation = COCOeval(gt, gt.loadRes(str(dt_path)), iou_type)
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    lines = [line for line in printed.getvalue().splitlines() if line.startswith(" Average")]
    return lines, evaluation.stats, evaluation


def test_the_coco_summary_is_printed_as_pycocotools_prints_it(tmp_path):
    gt_path, dt_path = write_dataset(tmp_path, *make_dataset(1))
    lines, stats, _ = _coco_reference(gt_path, dt_path)
    assert coco_lines(dict(zip(COCO_KEYS, stats.tolist()))) == lines
    assert coco_lines(dict(zip(COCO_KEYS, [-1.0] * 12)))[0].endswith("= -1.000")


def test_the_lvis_summary_is_printed_as_lvis_prints_it():
    lvis_eval = pytest.importorskip("lvis.eval")
    values = dict(zip(["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "map_rare", "map_common",
                       "map_frequent", "mar_300", "mar_small", "mar_medium", "mar_large"],
                      [0.1234, 0.5, 0.25, -1.0, 0.0, 1.0, 0.3335, 0.9996, 0.5, 0.7, -1, 0.2, 0.0005]))
    results = OrderedDict(zip(["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf", "AR@300", "ARs@300",
                               "ARm@300", "ARl@300"], values.values()))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        lvis_eval.LVISEval.print_results(SimpleNamespace(
            results=results, params=SimpleNamespace(max_dets=300, iou_thrs=np.linspace(0.5, 0.95, 10))))
    assert lvis_lines(values) == printed.getvalue().splitlines()


def test_usage_errors_exit_2(capsys):
    assert main(["instances", "--gt-json-file", "a", "--dt-json-file", "b", "--max-dets", "50"]) == 2
    assert "--max-dets applies to --lvis" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        main(["instances", "--gt-json-file", "a", "--dt-json-file", "b", "--dilation-ratio", "0"])
    assert caught.value.code == 2 and "expected a finite number > 0" in capsys.readouterr().err


def test_an_unusable_input_exits_1_naming_it(tmp_path):
    gt, results = make_dataset(2)
    results[3]["image_id"] = 999
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    status, out, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--out",
                            str(tmp_path / "out"))
    assert status == 1 and out == ""
    assert f"{dt_path}: detection 3 (image 999): image_id 999 is not an image of {gt_path}" in err
    assert "nothing was written" in err and not (tmp_path / "out").exists()
    status, _, err = _run("--gt-json-file", str(tmp_path / "missing.json"), "--dt-json-file", str(dt_path))
    assert status == 1 and "--gt-json-file" in err and "no such file" in err


BIG_SIZES = ((480, 640), (105, 140), (465, 620), (45, 60), (333, 517), (1, 40))
"""The slow runs' images: COCO-like sizes, the .5-rounding sizes of 0.02 * diagonal, a 1-pixel-high strip."""


def _check_against_pycocotools(tmp_path, seed: int, with_bbox: bool, sizes=None) -> None:
    dataset = make_dataset(seed, with_bbox=with_bbox, **({"sizes": sizes} if sizes else {}))
    gt_path, dt_path = write_dataset(tmp_path, *dataset)
    lines, stats, evaluation = _coco_reference(gt_path, dt_path)
    status, out, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--iou-type", "segm",
                            "--out", str(tmp_path / "out"), "--device", "cpu")
    assert status == 0, err
    assert out.splitlines() == lines
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["detection_area"] == ("bbox w*h" if with_bbox else "mask pixels")
    for key, value in zip(COCO_KEYS, stats.tolist()):
        assert abs(document["results"][key] - value) <= 1e-12, key
    precision = evaluation.eval["precision"][:, :, :, 0, -1]  # area all, maxDets 100
    for row in document["per_class"]:
        k = evaluation.params.catIds.index(row["category_id"])
        cells = precision[:, :, k]
        expected = float(np.mean(cells[cells > -1])) if (cells > -1).any() else -1.0
        assert abs(row["map"] - expected) <= 1e-12, row
        assert row["name"] == f"class{row['category_id']}"


@needs_metric
@pytest.mark.parametrize("with_bbox", [True, False])
def test_segm_values_equal_pycocotools_on_the_same_files(tmp_path, with_bbox):
    _check_against_pycocotools(tmp_path, 3, with_bbox)


@needs_metric
@pytest.mark.slow
@pytest.mark.parametrize("seed", [10, 11, 12, 13])
def test_segm_values_equal_pycocotools_on_larger_files(tmp_path, seed):
    _check_against_pycocotools(tmp_path, seed, with_bbox=seed % 2 == 0, sizes=BIG_SIZES)


def _check_boundary_against_the_port(tmp_path, seed: int, sizes=None, ratio: float = 0.02) -> None:
    from tests.reference.coco_boundary_ap import run_coco

    gt, results = make_dataset(seed, **({"sizes": sizes} if sizes else {}))
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    evaluation = run_coco(gt, results, "boundary", dilation_ratio=ratio)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        evaluation.summarize()
    status, out, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--iou-type", "boundary",
                            "--dilation-ratio", str(ratio), "--out", str(tmp_path / "out"), "--device", "cpu")
    assert status == 0, err
    assert out.splitlines() == [line for line in printed.getvalue().splitlines() if line.startswith(" Average")]
    values = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    for key, value in zip(COCO_KEYS, evaluation.stats.tolist()):
        assert abs(values[key] - value) <= 1e-12, key


@needs_metric
def test_boundary_values_equal_boundary_iou_api_on_the_same_files(tmp_path):
    _check_boundary_against_the_port(tmp_path, 4)


@needs_metric
@pytest.mark.slow
@pytest.mark.parametrize(("seed", "ratio"), [(10, 0.02), (11, 0.02), (12, 0.005)])
def test_boundary_values_equal_boundary_iou_api_on_larger_files(tmp_path, seed, ratio):
    _check_boundary_against_the_port(tmp_path, seed, BIG_SIZES, ratio)
