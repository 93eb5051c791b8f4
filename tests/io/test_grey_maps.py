"""File reading and matching: OpenCV-exact grayscale, alpha cutouts, 16-bit, palettes, resizing, stems."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from nobg_metrics.io.errors import InvalidMap, ReadError
from nobg_metrics.io.folders import Source, list_stems, scan_folder
from nobg_metrics.io.images import read_mask, read_prediction, read_trimap, resize_prediction
from tests.cli.folders import FORMATS, save_prediction


@pytest.mark.parametrize("fmt", FORMATS)
def test_prediction_formats_decode_to_the_same_levels(tmp_path: Path, fmt: str) -> None:
    rng = np.random.default_rng(1)
    pred = rng.integers(0, 256, (23, 41)).astype(np.uint8)
    save_prediction(tmp_path / "p.png", pred, fmt, rng)
    np.testing.assert_array_equal(read_prediction(tmp_path / "p.png"), pred)


def test_sixteen_bit_shifts_or_rounds_by_protocol(tmp_path: Path) -> None:
    values = np.array([[0, 128, 129, 385, 386, 65535, 65407, 65406, 511, 512]], np.uint16)
    Image.fromarray(values).save(tmp_path / "p.png")
    # raw: round(v / 257): 128/257 = 0.498 -> 0, 129/257 = 0.502 -> 1, 385/257 = 1.498 -> 1, 386 -> 2
    assert read_prediction(tmp_path / "p.png", protocol="raw").tolist() == [[0, 0, 1, 1, 2, 255, 255, 254, 2, 2]]
    # pysodmetrics: v >> 8, as cv2.imread(IMREAD_GRAYSCALE)
    shifted = [[0, 0, 0, 1, 1, 255, 255, 255, 1, 2]]
    assert read_prediction(tmp_path / "p.png").tolist() == shifted
    assert cv2.imread(str(tmp_path / "p.png"), cv2.IMREAD_GRAYSCALE).tolist() == shifted


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "P", "I;16", "L"])
def test_gt_reads_like_cv2_imread_grayscale(tmp_path: Path, mode: str) -> None:
    rng = np.random.default_rng(2)
    rgb = rng.integers(0, 256, (31, 45, 3)).astype(np.uint8)
    if mode == "RGBA":
        image = Image.fromarray(np.dstack([rgb, rng.integers(0, 256, (31, 45)).astype(np.uint8)]), mode="RGBA")
    elif mode == "P":
        image = Image.fromarray(rgb).quantize(64)
    elif mode == "I;16":
        image = Image.fromarray(rng.integers(0, 65536, (31, 45)).astype(np.uint16))
    else:
        image = Image.fromarray(rgb).convert(mode)
    image.save(tmp_path / "g.png")
    np.testing.assert_array_equal(read_mask(tmp_path / "g.png"), cv2.imread(str(tmp_path / "g.png"),
                                                                             cv2.IMREAD_GRAYSCALE))


def test_opaque_rgba_prediction_reads_its_colours(tmp_path: Path) -> None:
    grey = np.random.default_rng(3).integers(0, 256, (9, 14)).astype(np.uint8)
    rgba = np.dstack([grey, grey, grey, np.full_like(grey, 255)])
    Image.fromarray(rgba, mode="RGBA").save(tmp_path / "p.png")
    np.testing.assert_array_equal(read_prediction(tmp_path / "p.png"), grey)


def test_unreadable_file_raises_read_error(tmp_path: Path) -> None:
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    with pytest.raises(ReadError):
        read_prediction(tmp_path / "bad.png")


@pytest.mark.parametrize("shape, target", [((40, 56), (67, 31)), ((17, 9), (8, 30)), ((1, 12), (5, 7))])
def test_resize_is_cv2_inter_linear_exactly_or_within_one_level_raw(shape, target) -> None:
    pred = np.random.default_rng(4).integers(0, 256, shape).astype(np.uint8)
    ref = cv2.resize(pred, (target[1], target[0]), interpolation=cv2.INTER_LINEAR).astype(int)
    np.testing.assert_array_equal(resize_prediction(pred, *target), ref)  # pysodmetrics: bit for bit
    raw = resize_prediction(pred, *target, protocol="raw").astype(int)  # float32 bilinear, rounded
    assert raw.shape == target and np.abs(raw - ref).max() <= 1


def test_list_stems_prefix_suffix_and_duplicates(tmp_path: Path) -> None:
    for name in ["a.png", "a.jpg", "b.jpg", "pre_c_sal.png", "notes.txt", ".hidden.png"]:
        (tmp_path / name).write_bytes(b"")
    found, duplicates = list_stems(Source(tmp_path))
    assert sorted(found) == ["a", "b", "pre_c_sal"] and found["a"].name == "a.png" and duplicates == ["a.jpg"]
    found, _ = list_stems(Source(tmp_path, prefix="pre_", suffix="_sal.png"))
    assert list(found) == ["c"]
    found, _ = list_stems(Source(tmp_path, prefix="pre_", suffix="_sal"))  # no extension: any image type
    assert list(found) == ["c"]


def test_scan_folder_gives_every_entry_a_place(tmp_path: Path) -> None:
    Image.fromarray(np.zeros((4, 5), np.uint8)).save(tmp_path / "a.png")
    (tmp_path / "a.jpg").symlink_to(tmp_path / "gone.jpg")  # a broken duplicate: the readable file wins
    (tmp_path / "b.png").symlink_to(tmp_path / "b.png")  # a loop: still a candidate (read -> unreadable)
    (tmp_path / "c.gif").write_bytes(b"GIF89a")
    (tmp_path / ".DS_Store").write_bytes(b"")
    (tmp_path / "d.png.d").mkdir()
    (tmp_path / "sub.png").mkdir()
    os.mkfifo(tmp_path / "e.png")  # never opened (reading would block)
    (tmp_path / "README").write_text("x")
    listing = scan_folder(Source(tmp_path))
    assert sorted(listing.found) == ["a", "b"] and listing.found["a"].name == "a.png"
    assert listing.duplicates == ["a.jpg"]
    assert dict(listing.not_scored) == {
        ".DS_Store": "hidden file", "README": "no image extension", "c.gif": "unsupported extension '.gif'",
        "d.png.d": "a folder (subfolders are not searched)", "e.png": "not a regular file",
        "sub.png": "a folder (subfolders are not searched)"}
    with pytest.raises(ReadError, match="symlink loop"):
        read_mask(listing.found["b"])
    with pytest.raises(ReadError, match="broken symlink"):
        read_prediction(tmp_path / "a.jpg")
    with pytest.raises(ReadError, match="cannot list"):
        scan_folder(Source(tmp_path / "absent"))


def test_read_trimap_accepts_only_the_three_levels(tmp_path: Path) -> None:
    levels = np.array([[0, 128, 255, 128]], np.uint8)
    Image.fromarray(levels).save(tmp_path / "ok.png")
    np.testing.assert_array_equal(read_trimap(tmp_path / "ok.png"), levels)
    bad = levels.copy()
    bad[0, 1], bad[0, 3] = 100, 127
    Image.fromarray(bad).save(tmp_path / "bad.png")
    with pytest.raises(InvalidMap, match=r"2 pixels hold levels other than 0, 128, 255 \(100, 127\)"):
        read_trimap(tmp_path / "bad.png")
