"""Square erosion/dilation (nobg_metrics.ops.morphology) against OpenCV, on non-square, tiny and 1xN masks.

Erosion reads outside the image as background (``cv2.erode(..., BORDER_CONSTANT, borderValue=0)``, the
boundary-iou-api's padded iterated 3x3 erosion); dilation likewise (``cv2.dilate``'s default border).
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from nobg_metrics.ops.morphology import (
    count_bits,
    dilate,
    erode,
    pack_bits,
    pack_levels_at_least,
    shift_bits,
    unpack_bits,
)

SHAPES = [(1, 1), (1, 17), (17, 1), (2, 3), (5, 5), (37, 53), (9, 63), (7, 64), (6, 65), (3, 130), (64, 48)]


def _masks(rng: np.random.Generator, h: int, w: int, batch: int = 3) -> np.ndarray:
    """Random blobs of varying density, plus an all-foreground mask (the border case)."""
    density = rng.uniform(0.5, 0.98, (batch - 1, 1, 1))
    noisy = rng.random((batch - 1, h, w)) < density
    return np.concatenate([noisy, np.ones((1, h, w), bool)])


def _cv2(masks: np.ndarray, radius: int, dilation: bool) -> np.ndarray:
    kernel = np.ones((2 * radius + 1, 2 * radius + 1), np.uint8)
    if dilation:
        return np.stack([cv2.dilate(m.astype(np.uint8), kernel) for m in masks]).astype(bool)
    return np.stack([cv2.erode(m.astype(np.uint8), kernel, borderType=cv2.BORDER_CONSTANT, borderValue=0)
                     for m in masks]).astype(bool)


@pytest.mark.parametrize("shape", SHAPES)
def test_erode_and_dilate_equal_cv2_for_many_radii(shape):
    rng = np.random.default_rng(sum(shape))
    masks = _masks(rng, *shape)
    for radius in [0, 1, 2, 3, 7, 8, 31, 32, 33, 64, 70]:  # includes 2r+1 > H, W
        tensor = torch.from_numpy(masks)
        assert np.array_equal(erode(tensor, radius).numpy(), _cv2(masks, radius, False)), radius
        assert np.array_equal(dilate(tensor, radius).numpy(), _cv2(masks, radius, True)), radius


@pytest.mark.parametrize("shape", [(1, 300), (300, 1), (2, 500), (500, 3), (9, 200)])
def test_elongated_masks_with_radii_beyond_one_side(shape):
    # the erosion of a side shorter than 2r + 1 is empty; the dilation's window is clamped to the image
    rng = np.random.default_rng(sum(shape))
    masks = _masks(rng, *shape)
    for radius in [1, 4, 5, 100, 149, 150, 400]:
        tensor = torch.from_numpy(masks)
        assert np.array_equal(erode(tensor, radius).numpy(), _cv2(masks, radius, False)), radius
        assert np.array_equal(dilate(tensor, radius).numpy(), _cv2(masks, radius, True)), radius


def test_erode_equals_the_boundary_iou_api_padded_iterated_erosion():
    rng = np.random.default_rng(1)
    for h, w in [(37, 53), (1, 40), (40, 1), (20, 90)]:
        mask = (rng.random((h, w)) < 0.9).astype(np.uint8)
        mask[:, : w // 2] = 1  # foreground touching three borders
        for radius in [1, 2, 5, 13]:
            padded = cv2.copyMakeBorder(mask, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
            expected = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=radius)[1:h + 1, 1:w + 1]
            assert np.array_equal(erode(torch.from_numpy(mask.astype(bool))[None], radius)[0].numpy(),
                                  expected.astype(bool))


def test_image_border_is_contour_unlike_max_pool_padding():
    full = torch.ones(1, 6, 9, dtype=torch.bool)
    eroded = erode(full, 1)
    assert not eroded[0, 0].any() and not eroded[0, :, -1].any() and eroded[0, 1:-1, 1:-1].all()
    pooled = -torch.nn.functional.max_pool2d(-full.float(), 3, 1, 1)
    assert bool(pooled.bool().all())  # -inf padding: the border survives; not the reference


def test_non_contiguous_and_offset_inputs():
    rng = np.random.default_rng(2)
    big = torch.from_numpy(rng.random((4, 20, 140)) < 0.8)
    for view in [big[1:3, 3:17, 5:133], big[:, :, 0:128][1:], big.transpose(1, 2)[:2]]:
        expected = _cv2(view.numpy(), 3, False)
        assert np.array_equal(erode(view, 3).numpy(), expected)


def test_pack_count_shift_round_trip():
    rng = np.random.default_rng(3)
    masks = torch.from_numpy(rng.random((2, 5, 150)) < 0.5)
    packed = pack_bits([masks])
    assert packed.shape == (2, 5, 3)
    assert torch.equal(unpack_bits(packed, 150), masks)
    assert torch.equal(count_bits(packed), masks.sum(dim=(1, 2)))
    full = pack_bits([torch.ones(1, 2, 128, dtype=torch.bool)])  # bit 63 set: sign bits must not leak
    assert count_bits(full).item() == 256
    for shift in [1, 7, 63, 64, 65, 100, 149, 200]:
        left = torch.zeros_like(masks)
        left[..., : max(150 - shift, 0)] = masks[..., shift:]
        assert torch.equal(unpack_bits(shift_bits(packed, shift), 150), left), shift
        right = torch.zeros_like(masks)
        right[..., shift:] = masks[..., : max(150 - shift, 0)]
        assert torch.equal(unpack_bits(shift_bits(packed, -shift), 150), right), -shift
    widened = torch.nn.functional.pad(packed, (0, 2))
    assert torch.equal(unpack_bits(shift_bits(widened, -70), 220)[..., 70:], masks)


def test_uint8_levels_pack_like_their_comparison():
    rng = np.random.default_rng(5)
    for width in [1, 8, 63, 64, 65, 130]:
        levels = torch.from_numpy(rng.integers(0, 256, (2, 3, width)).astype(np.uint8))
        levels[0, 0] = 255  # the top bit of the last byte of a word: the int64 sign bit
        for level in range(1, 256):
            assert torch.equal(pack_levels_at_least(levels, level), pack_bits([levels >= level])), (width, level)
    offset = torch.from_numpy(rng.integers(0, 256, (1, 4, 200)).astype(np.uint8))[:, 1:, 3:131]
    assert torch.equal(pack_levels_at_least(offset, 129), pack_bits([offset >= 129]))


def test_bad_arguments():
    with pytest.raises(TypeError, match="bool"):
        erode(torch.zeros(1, 3, 3), 1)
    with pytest.raises(TypeError, match=r"\(B, H, W\)"):
        dilate(torch.zeros(3, 3, dtype=torch.bool), 1)
    with pytest.raises(ValueError, match="radius"):
        erode(torch.zeros(1, 3, 3, dtype=torch.bool), -1)


@pytest.mark.slow
def test_large_images_equal_cv2():
    rng = np.random.default_rng(4)
    yy, xx = np.mgrid[0:1024, 0:1000]
    masks = np.stack([((yy - 500) ** 2 + (xx - 480) ** 2 < 400**2) ^ (rng.random((1024, 1000)) < 0.001),
                      (yy < 700) & (xx > 100)])
    for radius in [29, 60]:
        assert np.array_equal(erode(torch.from_numpy(masks), radius).numpy(), _cv2(masks, radius, False))
        assert np.array_equal(dilate(torch.from_numpy(masks), radius).numpy(), _cv2(masks, radius, True))


@pytest.mark.cuda
def test_cuda_equals_cpu():
    masks = torch.rand(3, 77, 201) < 0.9
    for radius in [1, 29, 60]:
        assert torch.equal(erode(masks.cuda(), radius).cpu(), erode(masks, radius))
        assert torch.equal(dilate(masks.cuda(), radius).cpu(), dilate(masks, radius))
