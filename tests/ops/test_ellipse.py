"""OpenCV's elliptic structuring element and its dilation / erosion / gradient (ops/ellipse.py) vs cv2."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from nobg_metrics.ops import host_reads
from nobg_metrics.ops.ellipse import (
    dilate_ellipse,
    dilate_ellipse_packed,
    dilate_ellipses_packed,
    ellipse_kernel,
    ellipse_rectangles,
    erode_ellipse,
    gradient_ellipse,
)
from nobg_metrics.ops.morphology import pack_bits, unpack_bits
from tests.helpers.syncs import HostSyncRecorder

SHAPES = [(37, 53), (1, 17), (17, 1), (1, 1), (5, 5), (2, 3), (64, 130), (9, 200)]
RADII = [0, 1, 2, 3, 5, 8, 13, 30]


def _cv_kernel(radius: int) -> np.ndarray:
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))


@pytest.mark.parametrize("radius", range(61))
def test_kernel_and_rectangles_equal_opencv(radius):
    expected = _cv_kernel(radius) > 0
    assert np.array_equal(ellipse_kernel(radius).numpy(), expected)
    union = np.zeros_like(expected)
    for half_height, half_width in ellipse_rectangles(radius):
        union[radius - half_height:radius + half_height + 1, radius - half_width:radius + half_width + 1] = True
    assert np.array_equal(union, expected)


def test_morphology_equals_opencv_default_border():
    rng = np.random.default_rng(0)
    for height, width in SHAPES:
        masks = np.stack([rng.random((height, width)) < density for density in (0.05, 0.5, 0.95)]
                         + [np.zeros((height, width), bool), np.ones((height, width), bool)])
        tensor = torch.from_numpy(masks)
        for radius in RADII:
            kernel = _cv_kernel(radius)
            ours = {"dilate": dilate_ellipse(tensor, radius), "erode": erode_ellipse(tensor, radius),
                    "gradient": gradient_ellipse(tensor, radius)}
            for index, mask in enumerate(masks.astype(np.uint8)):
                expected = {"dilate": cv2.dilate(mask, kernel) > 0, "erode": cv2.erode(mask, kernel) > 0,
                            "gradient": cv2.morphologyEx(mask, cv2.MORPH_GRADIENT, kernel) > 0}
                for name, value in expected.items():
                    assert np.array_equal(ours[name][index].numpy(), value), (name, height, width, radius, index)


def test_input_is_never_written_and_bad_arguments_raise():
    mask = torch.rand(2, 7, 9) > 0.5
    packed = pack_bits([mask])
    before = packed.clone()
    dilate_ellipse_packed(packed, 9, 0)
    dilate_ellipse_packed(packed, 9, 3)
    assert torch.equal(packed, before)
    with pytest.raises(TypeError, match="mask"):
        dilate_ellipse(mask.float(), 1)
    with pytest.raises(TypeError, match="mask"):
        erode_ellipse(mask[0, 0], 1)
    with pytest.raises(ValueError, match="radius"):
        gradient_ellipse(mask, -1)
    with pytest.raises(ValueError, match="radius"):
        ellipse_kernel(True)


def test_no_host_sync(monkeypatch):
    monkeypatch.setattr(host_reads, "free_on", lambda tensor: False)
    mask = torch.rand(2, 11, 70) > 0.5
    with HostSyncRecorder() as recorder:
        gradient_ellipse(mask, 2)
    assert not recorder.hits, recorder.hits


@pytest.mark.parametrize(("shape", "radii"), [((1, 3000), (1, 65, 200, 333)), ((2, 1500), (65, 333)),
                                              ((5, 700), (1, 70, 133)), ((600, 1), (1, 65, 150)),
                                              ((300, 3), (2, 100))])
def test_wide_radii_on_thin_masks_equal_opencv(shape, radii):
    """Radii beyond the tripling width (a thin image's mBA radii reach (H + W) / 300) and clamped rectangles."""
    rng = np.random.default_rng(1)
    masks = np.stack([rng.random(shape) < 0.002, rng.random(shape) < 0.5])
    ours = dilate_ellipses_packed(pack_bits([torch.from_numpy(masks)]), shape[1], radii)
    for radius in radii:
        dilated = unpack_bits(ours[radius], shape[1])
        for index, mask in enumerate(masks.astype(np.uint8)):
            expected = cv2.dilate(mask, _cv_kernel(radius)) > 0
            assert np.array_equal(dilated[index].numpy(), expected), (shape, radius, index)


@pytest.mark.parametrize("shape", [(40, 7), (9, 200), (1, 300), (300, 1)])
def test_transposed_masks_dilate_by_the_transposed_window(shape):
    rng = np.random.default_rng(2)
    masks = np.stack([rng.random(shape) < 0.02, rng.random(shape) < 0.5])
    radii = (1, 2, 5, 13, 70)
    ours = dilate_ellipses_packed(pack_bits([torch.from_numpy(masks).transpose(1, 2).contiguous()]), shape[0], radii,
                                  transposed=True)
    for radius in radii:
        dilated = unpack_bits(ours[radius], shape[0]).transpose(1, 2)
        for index, mask in enumerate(masks.astype(np.uint8)):
            assert np.array_equal(dilated[index].numpy(), cv2.dilate(mask, _cv_kernel(radius)) > 0), (shape, radius)
