"""RGB images end to end: the command reads them (as ``cv2.imread(IMREAD_COLOR)`` + BGR -> RGB) from PySODEvalToolkit's
dataset JSON ``image`` entry, our config's ``image`` key or ``--image DIR``, and passes them to the metrics that take
one (CCm); CCm from files equals PySODMetrics 1.6.2 on the same files; absent images are named like absent
predictions; a run without image metrics never opens the image folder."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from py_sod_metrics import CamouflageContextMeasure as ReferenceCcm
from py_sod_metrics import ContextMeasure as ReferenceCm

from nobg_metrics.cli.eval.config import plan_from_args
from nobg_metrics.cli.eval.jobs import build_jobs
from nobg_metrics.cli.eval.main import EXIT_INPUTS, EXIT_USAGE, main
from nobg_metrics.io.images import read_image
from tests.cli.folders import read_results
from tests.sod.test_ccm import scene

TOLERANCE = 1e-6
"""The Cm part's float32 forward filter in the reference (tests/sod/test_ccm.py)."""

FAST = ["--workers", "0", "--quiet", "--no-plots"]
NAMES = [("blobs", 0, "png"), ("ellipse", 1, "jpg"), ("border", 2, "png")]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """``DS/gt/*.png``, ``DS/pred/*.png``, ``DS/img/*.{png,jpg}`` (camouflage scenes) and the configs."""
    base = tmp_path_factory.mktemp("images")
    for folder in ("gt", "pred", "img"):
        (base / "DS" / folder).mkdir(parents=True)
    for kind, seed, ext in NAMES:
        pred, gt, image = scene(60, 80, kind, seed)
        name = f"{kind}_{seed}"
        Image.fromarray(gt).save(base / "DS" / "gt" / f"{name}.png")
        Image.fromarray(pred).save(base / "DS" / "pred" / f"{name}.png")
        Image.fromarray(image).save(base / "DS" / "img" / f"{name}.{ext}", quality=85)
    datasets = {"DS": {"image": {"path": str(base / "DS" / "img")}, "mask": {"path": str(base / "DS" / "gt")}}}
    (base / "datasets.json").write_text(json.dumps(datasets))
    (base / "methods.json").write_text(json.dumps({"M": {"DS": {"path": str(base / "DS" / "pred")}}}))
    return base


def _reference(root: Path) -> dict[str, float]:
    """PySODMetrics on the files as its users read them: cv2 grey maps, cv2 colour images turned RGB."""
    ccm, cm = ReferenceCcm(), ReferenceCm()
    for kind, seed, ext in NAMES:
        name = f"{kind}_{seed}"
        gt = cv2.imread(str(root / "DS" / "gt" / f"{name}.png"), cv2.IMREAD_GRAYSCALE)
        pred = cv2.imread(str(root / "DS" / "pred" / f"{name}.png"), cv2.IMREAD_GRAYSCALE)
        image = cv2.cvtColor(cv2.imread(str(root / "DS" / "img" / f"{name}.{ext}"), cv2.IMREAD_COLOR),
                             cv2.COLOR_BGR2RGB)
        ccm.step(pred, gt, img=image)
        cm.step(pred, gt)
    return {"camouflage_context_measure": ccm.get_results()["ccm"], "context_measure": cm.get_results()["cm"]}


def _values(out: Path) -> dict[str, float]:
    (result,) = read_results(out)["results"]
    return result["metrics"], result["images"]


def _toolkit(root: Path, out: Path, *extra: str) -> int:
    return main(["eval", "--dataset-json", str(root / "datasets.json"), "--method-json", str(root / "methods.json"),
                 "--out", str(out), *FAST, *extra])


def test_ccm_from_the_toolkit_dataset_json_equals_the_reference(root, tmp_path):
    assert _toolkit(root, tmp_path / "out", "--metrics", "camouflage_context_measure", "context_measure", "mae") == 0
    values, images = _values(tmp_path / "out")
    assert images == len(NAMES)
    for name, expected in _reference(root).items():
        assert abs(values[name] - expected) <= TOLERANCE, name
    # batched (--no-per-image) gives the same dataset values
    assert _toolkit(root, tmp_path / "batched", "--metrics", "camouflage_context_measure", "--no-per-image") == 0
    batched, _ = _values(tmp_path / "batched")
    # Cm's float32 filters move by float32 rounding with the batch layout (docs/context_measure.md): 1e-8
    assert batched["camouflage_context_measure"] == pytest.approx(values["camouflage_context_measure"], abs=1e-8)


def test_our_config_image_key(root, tmp_path):
    config = {"datasets": {"DS": {"gt": str(root / "DS" / "gt"), "image": {"path": str(root / "DS" / "img")}}},
              "methods": {"M": {"DS": str(root / "DS" / "pred")}}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert main(["eval", "--config", str(tmp_path / "config.json"), "--out", str(tmp_path / "out"), *FAST,
                 "--metrics", "camouflage_context_measure"]) == 0
    values, _ = _values(tmp_path / "out")
    assert abs(values["camouflage_context_measure"] - _reference(root)["camouflage_context_measure"]) <= TOLERANCE


def test_items_carry_their_image_path_and_absent_ones_are_named(root, tmp_path):
    plan = plan_from_args(str(root / "DS" / "gt"), [str(root / "DS" / "pred")], None, image=str(root / "DS" / "img"))
    (job,) = build_jobs(plan)
    assert [item.image.name for item in job.items] == ["blobs_0.png", "border_2.png", "ellipse_1.jpg"]
    assert job.has_image and job.missing_images == [] and job.image_problem is None
    partial = tmp_path / "img"
    partial.mkdir()
    (partial / "blobs_0.png").write_bytes((root / "DS" / "img" / "blobs_0.png").read_bytes())
    (job,) = build_jobs(plan_from_args(str(root / "DS" / "gt"), [str(root / "DS" / "pred")], None, image=str(partial)))
    assert job.missing_images == ["image/border_2.*", "image/ellipse_1.*"]
    assert [item.image for item in job.items][1:] == [None, None] and not job.missing  # needed only by some metrics


def test_absent_images_fail_the_run_unless_allow_missing(root, tmp_path, capsys):
    images = tmp_path / "img"
    images.mkdir()
    (images / "blobs_0.png").write_bytes((root / "DS" / "img" / "blobs_0.png").read_bytes())
    datasets = {"DS": {"image": {"path": str(images)}, "mask": {"path": str(root / "DS" / "gt")}}}
    (tmp_path / "datasets.json").write_text(json.dumps(datasets))
    arguments = ["eval", "--dataset-json", str(tmp_path / "datasets.json"), "--method-json",
                 str(root / "methods.json"), *FAST, "--metrics", "camouflage_context_measure", "mae"]
    assert main([*arguments, "--out", str(tmp_path / "fails")]) == EXIT_INPUTS
    error = capsys.readouterr().err
    assert "missing image/border_2.*" in error and "missing image/ellipse_1.*" in error and "--allow-missing" in error
    assert main([*arguments, "--out", str(tmp_path / "out"), "--allow-missing"]) == 0
    results = read_results(tmp_path / "out")
    assert results["results"][0]["images"] == 1
    # without the image metric the same plan scores every pair (the images are never read)
    assert main([*arguments[:-2], "mae", "--out", str(tmp_path / "mae")]) == 0
    assert read_results(tmp_path / "mae")["results"][0]["images"] == len(NAMES)


def test_an_image_metric_without_an_image_folder_is_a_usage_error(root, tmp_path, capsys):
    assert main(["eval", "--gt", str(root / "DS" / "gt"), "--pred", str(root / "DS" / "pred"), "--out",
                 str(tmp_path / "out"), *FAST, "--metrics", "camouflage_context_measure"]) == EXIT_USAGE
    assert "camouflage_context_measure reads the RGB images" in capsys.readouterr().err


def test_an_image_of_another_size_is_recorded_by_name(root, tmp_path, capsys):
    images = tmp_path / "img"
    images.mkdir()
    for path in (root / "DS" / "img").iterdir():
        (images / path.name).write_bytes(path.read_bytes())
    Image.fromarray(np.zeros((20, 20, 3), np.uint8)).save(images / "border_2.png")
    datasets = {"DS": {"image": {"path": str(images)}, "mask": {"path": str(root / "DS" / "gt")}}}
    (tmp_path / "datasets.json").write_text(json.dumps(datasets))
    arguments = ["eval", "--dataset-json", str(tmp_path / "datasets.json"), "--method-json",
                 str(root / "methods.json"), *FAST, "--metrics", "camouflage_context_measure"]
    assert main([*arguments, "--out", str(tmp_path / "out")]) == EXIT_INPUTS
    assert "image/border_2.png" in capsys.readouterr().err


def test_the_image_flag(root, tmp_path):
    assert main(["eval", "--gt", str(root / "DS" / "gt"), "--pred", str(root / "DS" / "pred"), "--image",
                 str(root / "DS" / "img"), "--out", str(tmp_path / "out"), *FAST,
                 "--metrics", "camouflage_context_measure"]) == 0
    values, _ = _values(tmp_path / "out")
    assert abs(values["camouflage_context_measure"] - _reference(root)["camouflage_context_measure"]) <= TOLERANCE


def test_read_image_equals_opencv(tmp_path):
    """``cv2.cvtColor(cv2.imread(path, IMREAD_COLOR), COLOR_BGR2RGB)`` pixel for pixel: PNG RGB, RGBA (alpha
    dropped), grey, 16-bit grey and colour, palette; JPEG 4:2:0 and 4:4:4; BMP; TIFF; lossless WebP with alpha;
    an EXIF-rotated JPEG."""
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (23, 31, 3), dtype=np.uint8)
    rgba = np.dstack([rgb, rng.integers(0, 256, (23, 31), dtype=np.uint8)])
    Image.fromarray(rgb).save(tmp_path / "rgb.png")
    Image.fromarray(rgba).save(tmp_path / "rgba.png")
    Image.fromarray(rgb[..., 0]).save(tmp_path / "grey.png")
    Image.fromarray(rgb[..., 0].astype(np.uint16) * 257 + 7).save(tmp_path / "grey16.png")
    cv2.imwrite(str(tmp_path / "colour16.png"), rng.integers(0, 65536, (23, 31, 3)).astype(np.uint16))
    Image.fromarray(rgb).convert("P").save(tmp_path / "palette.png")
    Image.fromarray(rgb).save(tmp_path / "q80.jpg", quality=80)
    Image.fromarray(rgb).save(tmp_path / "q90.jpg", quality=90, subsampling=0)
    Image.fromarray(rgb).save(tmp_path / "rgb.bmp")
    Image.fromarray(rgb).save(tmp_path / "rgb.tif")
    Image.fromarray(rgba).save(tmp_path / "rgba.webp", lossless=True)
    exif = Image.Exif()
    exif[274] = 6  # rotate 90 degrees clockwise on display
    Image.fromarray(rgb).save(tmp_path / "rotated.jpg", quality=90, exif=exif.tobytes())
    for path in sorted(tmp_path.iterdir()):
        expected = cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        ours = read_image(path)
        assert ours.dtype == np.uint8 and ours.shape == expected.shape, path.name
        assert np.array_equal(ours, expected), path.name
