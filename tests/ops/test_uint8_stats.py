"""The byte-arithmetic masks and sums behind the uint8 fast path equal plain comparisons and sums."""

from __future__ import annotations

import pytest
import torch

from nobg_metrics.ops import uint8_stats
from nobg_metrics.ops.histogram import joint_histogram, level_values


def test_masks_equal_comparisons_for_every_level_and_cut():
    levels = torch.arange(256, dtype=torch.uint8).repeat(3, 1)
    assert torch.equal(uint8_stats.foreground(levels).bool(), levels > 128)
    cuts = torch.tensor([0, 128, 255])
    assert torch.equal(uint8_stats.above(levels, cuts).bool(), levels.long() > cuts[:, None])


def test_counts_sums_and_range_per_image():
    generator = torch.Generator().manual_seed(0)
    for batch in (1, 3):
        levels = torch.randint(0, 256, (batch, 7, 9), dtype=torch.uint8, generator=generator)
        gt = torch.randint(0, 256, (batch, 7, 9), dtype=torch.uint8, generator=generator)
        fg = uint8_stats.foreground(gt)
        assert torch.equal(uint8_stats.count(fg), (gt > 128).flatten(1).sum(1))
        total, masked = uint8_stats.level_sums(levels, fg)
        assert torch.equal(total, levels.flatten(1).long().sum(1))
        assert torch.equal(masked, (levels.long() * (gt > 128)).flatten(1).sum(1))
        low, high = uint8_stats.level_range(levels)
        assert torch.equal(low, levels.flatten(1).amin(1)) and torch.equal(high, levels.flatten(1).amax(1))


def test_range_level_values_equal_histogram_level_values():
    levels = torch.tensor([[[51, 102], [153, 153]], [[7, 7], [7, 7]]], dtype=torch.uint8)
    hist = joint_histogram(levels, torch.zeros_like(levels, dtype=torch.bool))
    low, high = uint8_stats.level_range(levels)
    for normalize in (False, True):
        assert torch.equal(uint8_stats.range_level_values(low, high, normalize), level_values(hist, normalize))


def test_positive_counts_match_thresholded_values():
    generator = torch.Generator().manual_seed(1)
    levels = torch.randint(20, 200, (2, 5, 6), dtype=torch.uint8, generator=generator)
    gt = torch.rand(2, 5, 6, generator=generator) > 0.5
    low, high = uint8_stats.level_range(levels)
    values = uint8_stats.range_level_values(low, high, True)
    for threshold in (0.0, 0.3, 0.5, 1.0):
        tp, positives = uint8_stats.positive_counts(levels, uint8_stats.foreground(gt), values, threshold)
        pixel_values = values.gather(1, levels.flatten(1).long())
        binary = pixel_values > threshold
        assert torch.equal(tp, (binary & gt.flatten(1)).sum(1)) and torch.equal(positives, binary.sum(1))


@pytest.mark.slow
def test_count_of_images_past_two_to_the_31_pixels():
    """Several images' counts summed in int32 would wrap from 2^31 pixels per image
    (a 46 341² image). A stride-0 view holds 2^31 + 5 ones per image without the memory."""
    ones = torch.ones(1, dtype=torch.uint8).expand(2, 2**31 + 5)
    assert uint8_stats.count(ones).tolist() == [2**31 + 5] * 2
