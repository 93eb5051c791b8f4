"""count_ones equals a plain sum on 0/1 byte masks of every size: whole 255-word chunks, the words past them,
sizes that are not whole words (the byte-sum fallback), full and empty masks, bool and uint8."""

from __future__ import annotations

import pytest
import torch

from nobg_metrics.ops.byte_counts import count_ones


@pytest.mark.parametrize("pixels", [8, 13, 255 * 8, 255 * 8 + 8, 3 * 255 * 8 + 40, 480 * 854])
def test_equals_a_plain_sum(pixels):
    generator = torch.Generator().manual_seed(pixels)
    for density in (0.0, 0.01, 0.5, 1.0):
        mask = torch.rand(3, pixels, generator=generator) < density
        assert torch.equal(count_ones(mask), mask.sum(dim=1))
        assert torch.equal(count_ones(mask.to(torch.uint8)), mask.sum(dim=1))
    frames = torch.rand(2, 17, 40, generator=generator) > 0.5  # (B, H, W): counted per image
    assert torch.equal(count_ones(frames), frames.sum(dim=(1, 2)))
    assert torch.equal(count_ones(frames[:, :, :24]), frames[:, :, :24].sum(dim=(1, 2)))  # not contiguous
