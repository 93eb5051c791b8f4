"""Reading files as ``cv2.imread(path, cv2.IMREAD_GRAYSCALE)`` + ``cv2.resize(..., INTER_LINEAR)`` do: exactly.

Generated files of every layout the command meets (PNG grey/colour/palette/16-bit/gamma, JPEG, BMP,
TIFF, WebP, EXIF orientation) are read by ``files.read_mask`` / ``read_prediction`` and compared pixel for
pixel with cv2 (a test-only dependency); then one small layout scored by ``nobg-metrics eval`` under the
``pysodmetrics`` protocol is compared with PySODMetrics fed cv2-read, cv2-resized arrays (<= 1e-12).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import py_sod_metrics as psm
import pytest
from PIL import Image, PngImagePlugin

from nobg_metrics.cli.eval.main import main
from nobg_metrics.io.images import read_mask, read_prediction, resize_prediction
from tests.cli.folders import make_maps, read_results

RNG = np.random.default_rng(21)
RGB = RNG.integers(0, 256, (37, 53, 3)).astype(np.uint8)
RGB[:6, :6] = RGB[:6, :6, :1]  # some R = G = B pixels (libpng keeps their level)
SMOOTH = cv2.GaussianBlur(RNG.integers(0, 256, (61, 47, 3)).astype(np.uint8), (0, 0), 2)
ALPHA = RNG.integers(0, 256, RGB.shape[:2]).astype(np.uint8)
U16 = np.arange(65536, dtype=np.uint16).reshape(256, 256)  # every 16-bit level
C16 = np.repeat(U16[:, :, None], 3, axis=2)  # grey colour pixels: every level...
C16[128:] = RNG.integers(0, 65536, (128, 256, 3))  # ...and random colours


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _with_chunk(path: Path, kind: bytes, data: bytes) -> None:
    """Insert an ancillary chunk right after IHDR (8-byte signature + 25-byte IHDR)."""
    raw = path.read_bytes()
    path.write_bytes(raw[:33] + _chunk(kind, data) + raw[33:])


def _low_bit_grey(path: Path, bits: int) -> None:
    """A 2- or 4-bit grey PNG written by hand (PIL writes none)."""
    values = RNG.integers(0, 1 << bits, (7, 16))
    rows = [int("".join(format(int(v), f"0{bits}b") for v in row), 2).to_bytes(2 * bits, "big") for row in values]
    header = struct.pack(">IIBBBBB", 16, 7, bits, 0, 0, 0, 0)
    body = zlib.compress(b"".join(b"\x00" + row for row in rows))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", body) + _chunk(b"IEND", b""))


def _png(array: np.ndarray, mode: str | None = None, **chunks: bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        info = PngImagePlugin.PngInfo()
        for kind, data in chunks.items():
            info.add(kind.encode(), data)
        Image.fromarray(array, mode).save(path, pnginfo=info)
    return write


def _cv2_png(array: np.ndarray, gamma: int | None = None) -> Callable[[Path], None]:
    def write(path: Path) -> None:  # 16-bit colour: cv2 writes BGR(A) as RGB(A)
        cv2.imwrite(str(path), array)
        if gamma is not None:
            _with_chunk(path, b"gAMA", struct.pack(">I", gamma))
    return write


def _pil(array: np.ndarray, mode: str | None = None, convert: str | None = None, exif: int | None = None,
         **options) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        image = Image.fromarray(array, mode)
        image = image.convert(convert) if convert == "CMYK" else image.quantize(64) if convert == "P" else image
        if exif is not None:
            tags = Image.Exif()
            tags[274] = exif
            options["exif"] = tags.tobytes()
        image.save(path, **options)
    return write


GAMMA = struct.pack(">I", 45455)
CASES: dict[str, Callable[[Path], None]] = {
    "grey.png": _png(RGB[..., 0]),
    "one_bit.png": _png(RGB[..., 0] > 128),
    "two_bit.png": lambda p: _low_bit_grey(p, 2),
    "four_bit.png": lambda p: _low_bit_grey(p, 4),
    "rgb.png": _png(RGB),
    "rgba.png": _png(np.dstack([RGB, ALPHA]), "RGBA"),
    "la.png": _png(np.dstack([RGB[..., 0], ALPHA]), "LA"),
    "palette.png": lambda p: Image.fromarray(RGB).quantize(200).save(p),
    "palette_trns.png": lambda p: Image.fromarray(RGB).quantize(200).save(p, transparency=3),
    "palette_4bit.png": lambda p: Image.fromarray(RGB).quantize(16).save(p, bits=4),
    "grey16.png": _png(U16),
    "rgb16.png": _cv2_png(C16),
    "rgba16.png": _cv2_png(np.dstack([C16, U16])),
    # gamma: libpng converts colour in linear light when the gamma (or its reciprocal) is significant
    "rgb_gama.png": _png(RGB, gAMA=GAMMA),
    "rgb_srgb.png": _png(RGB, sRGB=b"\x00"),
    "rgb_gama1_srgb.png": _png(RGB, gAMA=struct.pack(">I", 100000), sRGB=b"\x00"),  # sRGB wins
    "rgb_gama2.png": _png(RGB, gAMA=struct.pack(">I", 200000)),
    "rgb_gama_screen_only.png": _png(RGB, gAMA=struct.pack(">I", 95100)),  # 1/0.951 is significant
    "rgb_gama_insignificant.png": _png(RGB, gAMA=struct.pack(">I", 96000)),  # no tables: truncation
    "palette_gama.png": lambda p: Image.fromarray(RGB).quantize(200).save(p, pnginfo=_info(gAMA=GAMMA)),
    "grey_gama.png": _png(RGB[..., 0], gAMA=GAMMA),
    "rgb16_gama.png": _cv2_png(C16, gamma=45455),
    "rgb16_gama2.png": _cv2_png(C16, gamma=200000),
    "rgb_exif6.png": _pil(RGB, exif=6),
    "colour.jpg": _pil(SMOOTH, quality=75),
    "colour444.jpg": _pil(SMOOTH, quality=95, subsampling=0),
    "colour422.jpg": _pil(RGB, quality=50, subsampling=1),
    "progressive.jpg": _pil(SMOOTH, quality=80, progressive=True),
    "grey.jpg": _pil(SMOOTH[..., 0], quality=90),
    "cv2.jpg": lambda p: cv2.imwrite(str(p), SMOOTH),
    "exif6.jpg": _pil(SMOOTH, quality=90, exif=6),
    "exif3.jpg": _pil(SMOOTH, quality=90, exif=3),
    "exif7.jpg": _pil(SMOOTH, quality=90, exif=7),
    "rgb.bmp": _pil(RGB),
    "rgba.bmp": _pil(np.dstack([RGB, ALPHA]), "RGBA"),
    "palette.bmp": _pil(RGB, convert="P"),
    "grey.tif": _pil(RGB[..., 0]),
    "rgb.tif": _pil(RGB),
    "rgba.tif": _pil(np.dstack([RGB, ALPHA]), "RGBA"),
    "grey16.tif": _pil(U16),
    "rgb.webp": _pil(RGB, lossless=True),
    "lossy.webp": _pil(SMOOTH, quality=80),
    "rgba.webp": _pil(np.dstack([RGB, ALPHA]), "RGBA", lossless=True),
    "exif6.webp": _pil(SMOOTH, quality=80, exif=6),
}
# predictions: the alpha
ALPHA_CUTOUTS = {"rgba.png", "la.png", "palette_trns.png", "rgba16.png", "rgba.tif", "rgba.webp"}


def _info(**chunks: bytes) -> PngImagePlugin.PngInfo:
    info = PngImagePlugin.PngInfo()
    for kind, data in chunks.items():
        info.add(kind.encode(), data)
    return info


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("reading")
    for name, write in CASES.items():
        write(root / name)
    return root


def _imread(path: Path) -> np.ndarray:
    image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
    assert image is not None, path
    return image


@pytest.mark.parametrize("name", list(CASES))
def test_reads_exactly_as_cv2_imread_grayscale(files: Path, name: str) -> None:
    ref = _imread(files / name)
    ours = read_mask(files / name)
    assert ours.shape == ref.shape and ours.dtype == np.uint8
    assert int((ours != ref).sum()) == 0
    if name not in ALPHA_CUTOUTS:
        np.testing.assert_array_equal(read_prediction(files / name), ref)


def test_cutout_predictions_read_their_alpha(files: Path) -> None:
    np.testing.assert_array_equal(read_prediction(files / "rgba.png"), ALPHA)
    np.testing.assert_array_equal(read_prediction(files / "rgba.webp"), ALPHA)
    np.testing.assert_array_equal(read_prediction(files / "rgba16.png"), U16 >> 8)


@pytest.mark.parametrize("name, size", [("grey.png", (80, 19)), ("rgb_srgb.png", (12, 101)), ("colour.jpg", (30, 24)),
                                        ("grey16.png", (128, 128)), ("palette.png", (74, 106)),
                                        ("lossy.webp", (1, 7))])
def test_read_then_resized_equals_cv2(files: Path, name: str, size: tuple[int, int]) -> None:
    ref = cv2.resize(_imread(files / name), size[::-1], interpolation=cv2.INTER_LINEAR)
    np.testing.assert_array_equal(resize_prediction(read_prediction(files / name), *size), ref)


# --- end to end: nobg-metrics eval == PySODMetrics on cv2-read, cv2-resized arrays ------------------
PRED_LAYOUT = [  # (pred file size, how it is stored): most need a resize to the 40 x 56 gt
    ((31, 45), "grey.png"), ((80, 112), "colour.jpg"), ((20, 28), "grey16.png"), ((40, 56), "palette.png"),
    ((57, 61), "rgb_srgb.png"), ((33, 70), "lossy.webp"),
]
SOD = ["mae", "s_measure", "weighted_f_measure", "e_measure_max", "e_measure_mean", "e_measure_adaptive",
       "f_measure_max", "f_measure_mean", "f_measure_adaptive", "iou_metric", "dice", "accuracy", "ber"]


def _store(path: Path, level: np.ndarray, how: str) -> Path:
    noise = RNG.integers(-20, 21, (*level.shape, 3))
    colour = np.clip(level[..., None].astype(int) + noise, 0, 255).astype(np.uint8)
    stem, ext = path.name, how.split(".")[1]
    target = path.with_name(f"{stem}.{ext}")
    if how == "grey.png":
        Image.fromarray(level).save(target)
    elif how == "grey16.png":
        noise = RNG.integers(0, 257, level.shape).astype(np.uint16)
        Image.fromarray(level.astype(np.uint16) * 257 + noise).save(target)
    elif how == "palette.png":
        Image.fromarray(colour).quantize(128).save(target)
    elif how == "rgb_srgb.png":
        Image.fromarray(colour).save(target, pnginfo=_info(sRGB=b"\x00"))
    else:
        Image.fromarray(colour).save(target, quality=80)
    return target


def _reference(pairs: list[tuple[Path, Path]]) -> dict[str, float]:
    handlers = {"iou_metric": psm.IOUHandler, "dice": psm.DICEHandler, "accuracy": psm.OverallAccuracyHandler,
                "ber": psm.BERHandler}
    mae, sm, em, fm, wfm = psm.MAE(), psm.Smeasure(), psm.Emeasure(), psm.Fmeasure(), psm.WeightedFmeasure()
    fmv2 = psm.FmeasureV2({name: cls(False, False, with_binary=True) for name, cls in handlers.items()})
    for gt_path, pred_path in pairs:
        gt, pred = _imread(gt_path), _imread(pred_path)
        if pred.shape != gt.shape:
            pred = cv2.resize(pred, (gt.shape[1], gt.shape[0]), interpolation=cv2.INTER_LINEAR)
        for metric in (mae, sm, em, fm, wfm, fmv2):
            metric.step(pred=pred, gt=gt)
    e, f = em.get_results()["em"], fm.get_results()["fm"]
    out = {"mae": mae.get_results()["mae"], "s_measure": sm.get_results()["sm"],
           "weighted_f_measure": wfm.get_results()["wfm"], "e_measure_max": e["curve"].max(),
           "e_measure_mean": e["curve"].mean(), "e_measure_adaptive": e["adp"], "f_measure_max": f["curve"].max(),
           "f_measure_mean": f["curve"].mean(), "f_measure_adaptive": f["adp"]}
    out.update({name: value["binary"] for name, value in fmv2.get_results().items()})
    return {name: float(value) for name, value in out.items()}


def test_eval_equals_pysodmetrics_on_cv2_read_and_resized_files(tmp_path: Path) -> None:
    (tmp_path / "gt").mkdir()
    (tmp_path / "pred").mkdir()
    pairs = []
    for index, (name, (gt, pred)) in enumerate(make_maps(count=len(PRED_LAYOUT)).items()):
        gt_path = tmp_path / "gt" / f"{name}.png"
        if index % 2:  # a colour gt with a gamma: libpng's linear-light grey, then > 128
            colour = np.clip(gt[..., None].astype(int) + RNG.integers(-60, 61, (*gt.shape, 3)), 0, 255)
            Image.fromarray(colour.astype(np.uint8)).save(gt_path, pnginfo=_info(gAMA=GAMMA))
        else:
            Image.fromarray(gt).save(gt_path)
        size, how = PRED_LAYOUT[index]
        level = cv2.resize(pred, size[::-1], interpolation=cv2.INTER_NEAREST) if size != pred.shape else pred
        pairs.append((gt_path, _store(tmp_path / "pred" / name, level, how)))
    out = tmp_path / "out"
    assert main(["eval", "--gt", str(tmp_path / "gt"), "--pred", str(tmp_path / "pred"), "--out", str(out),
                 "--metrics", *SOD, "--workers", "0", "--quiet", "--no-plots"]) == 0
    document = read_results(out)
    result = document["results"][0]
    assert result["images"] == len(PRED_LAYOUT) and result["resized"] == 5
    reference = _reference(pairs)
    worst = max(abs(result["metrics"][name] - reference[name]) for name in SOD)
    assert worst <= 1e-12, {name: result["metrics"][name] - reference[name] for name in SOD}
