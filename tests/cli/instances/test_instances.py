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
from nobg_metrics.cli.instances.summary import coco_lines, lvis_lines
from tests.cli.instances.instances_data import make_dataset, write_dataset

pytest.importorskip("pycocotools")
pytestmark = [pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning"),  # pycocotools, numpy 2
              pytest.mark.filterwarnings("ignore:The .warn. method is deprecated:DeprecationWarning")]  # lvis 0.5.3


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


def test_an_empty_results_file_scores_zero_where_there_are_ground_truths(tmp_path):
    gt, _ = make_dataset(6)
    gt_path, dt_path = write_dataset(tmp_path, gt, [])  # pycocotools' loadRes fails on it (anns[0])
    status, out, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--quiet", "--out",
                            str(tmp_path / "out"), "--device", "cpu")
    assert status == 0 and err == "", err
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["results"]["map"] == 0.0 and document["detections"] == {"in_file": 0, "evaluated": 0}
    assert len(out.splitlines()) == 12


def _check_against_pycocotools(tmp_path, seed: int, with_bbox: bool, sizes=None) -> None:
    dataset = make_dataset(seed, with_bbox=with_bbox, **({"sizes": sizes} if sizes else {}))
    gt_path, dt_path = write_dataset(tmp_path, *dataset)
    lines, stats, evaluation = _coco_reference(gt_path, dt_path)
    status, out, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--iou-type", "segm",
                            "--out", str(tmp_path / "out"), "--device", "cpu")
    assert status == 0, err
    assert out.splitlines() == lines
    assert "instances segm  [" in err and "wrote results.json" in err  # the progress bar, on stderr
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


@pytest.mark.parametrize("with_bbox", [True, False])
def test_segm_values_equal_pycocotools_on_the_same_files(tmp_path, with_bbox):
    _check_against_pycocotools(tmp_path, 3, with_bbox)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [10, 11, 12, 13])
def test_segm_values_equal_pycocotools_on_larger_files(tmp_path, seed):
    _check_against_pycocotools(tmp_path, seed, with_bbox=seed % 2 == 0, sizes=BIG_SIZES)


def _check_boundary_against_the_port(tmp_path, seed: int, sizes=None, ratio: float = 0.02, iou_type="boundary",
                                     ignore: bool = False) -> None:
    from tests.reference.coco_boundary_ap import run_coco

    gt, results = make_dataset(seed, ignore=ignore, **({"sizes": sizes} if sizes else {}))
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    evaluation = run_coco(gt, results, iou_type, dilation_ratio=ratio)
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        evaluation.summarize()
    status, out, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--iou-type", iou_type,
                            "--dilation-ratio", str(ratio), "--out", str(tmp_path / "out"), "--device", "cpu")
    assert status == 0, err
    assert out.splitlines() == [line for line in printed.getvalue().splitlines() if line.startswith(" Average")]
    values = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    for key, value in zip(COCO_KEYS, evaluation.stats.tolist()):
        assert abs(values[key] - value) <= 1e-12, key


def test_boundary_values_equal_boundary_iou_api_on_the_same_files(tmp_path):
    _check_boundary_against_the_port(tmp_path, 4)


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_gt_ignore_flags_are_or_ed_with_iscrowd_as_boundary_iou_api_does(tmp_path, iou_type):
    _check_boundary_against_the_port(tmp_path, 8, iou_type=iou_type, ignore=True)


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "ratio"), [(10, 0.02), (11, 0.02), (12, 0.005)])
def test_boundary_values_equal_boundary_iou_api_on_larger_files(tmp_path, seed, ratio):
    _check_boundary_against_the_port(tmp_path, seed, BIG_SIZES, ratio)


LVIS_NAMES = {"AP": "map", "AP50": "map_50", "AP75": "map_75", "APs": "map_small", "APm": "map_medium",
              "APl": "map_large", "APr": "map_rare", "APc": "map_common", "APf": "map_frequent"}


def _check_lvis_against_the_port(tmp_path, seed: int, iou_type: str, sizes=None, max_dets: int = 300,
                                 federated: bool = True, with_bbox: bool = True) -> None:
    from tests.reference.lvis_boundary_ap import run_lvis

    gt, results = make_dataset(seed, lvis=federated, with_bbox=with_bbox, **({"sizes": sizes} if sizes else {}))
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    evaluation = run_lvis(gt, results, iou_type, max_dets=max_dets)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        evaluation.print_results()
    status, out, err = _run("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--iou-type", iou_type,
                            "--lvis", "--max-dets", str(max_dets), "--out", str(tmp_path / "out"), "--device", "cpu")
    assert status == 0, err
    assert out.splitlines() == printed.getvalue().splitlines()
    values = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    for key, value in evaluation.results.items():
        sizes_of = {"s": "small", "m": "medium", "l": "large"}
        ours = LVIS_NAMES.get(key) or (f"mar_{max_dets}" if key.startswith("AR@") else f"mar_{sizes_of[key[2]]}")
        assert abs(values[ours] - float(value)) <= 1e-12, key


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_lvis_values_equal_boundary_iou_api_on_the_same_files(tmp_path, iou_type):
    _check_lvis_against_the_port(tmp_path, 5, iou_type, max_dets=4)  # a cap that bites


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "iou_type", "max_dets", "federated", "with_bbox"), [
    (20, "segm", 300, True, True), (21, "boundary", 300, True, False), (22, "boundary", 3, True, True),
    (23, "segm", 100, False, True),  # lvis_instance_evaluation.py --max-dets 100 on a COCO file
])
def test_lvis_values_equal_boundary_iou_api_on_larger_files(tmp_path, seed, iou_type, max_dets, federated,
                                                               with_bbox):
    _check_lvis_against_the_port(tmp_path, seed, iou_type, BIG_SIZES, max_dets, federated, with_bbox)


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_transposed_masks_give_the_same_values_bit_for_bit(tmp_path, iou_type):
    """The command hands the metric each image transposed (no copy); every value must be the same."""
    import torch

    from nobg_metrics import MeanAveragePrecision
    from nobg_metrics.cli.instances.run import image_inputs
    from nobg_metrics.io.coco.annotations import load_ground_truth
    from nobg_metrics.io.coco.results import load_results

    gt_path, dt_path = write_dataset(tmp_path, *make_dataset(7, sizes=((45, 60), (37, 53), (105, 140), (19, 64))))
    gt = load_ground_truth(gt_path)
    results = load_results(dt_path, gt)
    values = []
    for transposed in (False, True):
        metric = MeanAveragePrecision(iou_type=iou_type, class_metrics=True)
        for image in gt.images:
            pred, target = image_inputs(gt, image, results.per_image.get(image.id, []), results,
                                        torch.device("cpu"), transposed=transposed)
            if transposed:
                assert pred["masks"].shape[1:] == (image.width, image.height)
            metric.update([pred], [target])
        values.append(metric.compute())
    assert values[0].keys() == values[1].keys()
    assert all(torch.equal(values[0][key], values[1][key]) for key in values[0])


def test_the_command_module_main_dispatches_to_instances(capsys):
    from nobg_metrics.cli.eval.main import main as command_main

    assert command_main(["instances", "--gt-json-file", "a", "--dt-json-file", "b", "--max-dets", "5"]) == 2
    assert "--max-dets applies to --lvis" in capsys.readouterr().err


def test_preset_lvis_is_the_lvis_flag(tmp_path):
    """``--preset lvis`` is ``--lvis`` (a benchmark's layout is a preset of the subcommand that scores its input)."""
    gt, results = make_dataset(5, lvis=True)
    gt_path, dt_path = write_dataset(tmp_path, gt, results)
    common = ("--gt-json-file", str(gt_path), "--dt-json-file", str(dt_path), "--device", "cpu")
    flag, preset = _run(*common, "--lvis"), _run(*common, "--preset", "lvis")
    assert flag[0] == preset[0] == 0 and flag[1] == preset[1]


def test_a_preset_that_contradicts_a_flag_exits_2(capsys):
    assert main(["instances", "--preset", "coco", "--lvis", "--gt-json-file", "a", "--dt-json-file", "b"]) == 2
    assert "--preset coco contradicts --lvis" in capsys.readouterr().err
    assert main(["instances", "--preset", "lvis", "--cityscapes"]) == 2
    assert "--preset lvis contradicts --cityscapes" in capsys.readouterr().err
