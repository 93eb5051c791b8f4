"""The one module of 8-bit reading rules: every fast form of ``gt > 128`` agrees with the rule on all 256 values."""

from __future__ import annotations

import numpy as np
import torch

from nobg_metrics.ops.levels import (
    binarize_gt,
    foreground_bit_256,
    foreground_indicator,
    quantize,
    range_level_values,
)

ALL_LEVELS = torch.arange(256, dtype=torch.int32).to(torch.uint8)


def test_gt_rule_is_strictly_greater_than_128():
    assert binarize_gt(ALL_LEVELS).tolist() == [v > 128 for v in range(256)]
    assert binarize_gt(torch.tensor([0.5, 0.500001])).tolist() == [False, True]


def test_fast_forms_equal_the_rule():
    rule = binarize_gt(ALL_LEVELS)
    assert torch.equal(foreground_indicator(ALL_LEVELS[None]).bool()[0], rule)
    for dtype in (torch.int16, torch.int32):
        assert torch.equal(foreground_bit_256(ALL_LEVELS, dtype), rule.to(dtype) * 256)


def test_level_values_are_the_references_pixel_values_bit_for_bit():
    rng = np.random.default_rng(3)
    for low, high in [(0, 255), (51, 153), (7, 7), (0, 1), (200, 254)]:
        pixels = rng.integers(low, high + 1, (9, 11)).astype(np.uint8)
        pixels.flat[0], pixels.flat[1] = low, high
        expected = pixels / 255
        if expected.max() != expected.min():
            expected = (expected - expected.min()) / (expected.max() - expected.min())
        table = range_level_values(torch.tensor([low]), torch.tensor([high]), True)[0]
        assert np.array_equal(table[torch.from_numpy(pixels).long()].numpy(), expected)
        assert np.array_equal(quantize(torch.from_numpy(expected)).numpy(), (expected * 255).astype(np.uint8))
