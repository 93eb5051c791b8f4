"""On CPU a group is scored in blocks of at most CPU_BLOCK_PIXELS pixels: the same values as the whole group."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nobg_metrics import functional as F
from nobg_metrics.functional import _per_image
from tests.helpers.data import gt_uint8, pred_uint8

PER_IMAGE = {
    "mae": F.mae,
    "s_measure": F.s_measure,
    "weighted_f_measure": F.weighted_f_measure,
    "sad": F.sad,
    "gradient_error": F.gradient_error,
    "connectivity_error": F.connectivity_error,
}


@pytest.mark.parametrize("name", list(PER_IMAGE))
@pytest.mark.parametrize("per_block", [1, 2, 5])
def test_blocks_give_the_whole_group_s_values(name, per_block, monkeypatch):
    rng = np.random.default_rng(7)
    gts = np.stack([gt_uint8(rng, 23, 31) for _ in range(5)])
    gts[3] = 0  # an empty gt in the middle of a block
    preds = np.stack([pred_uint8(rng, gt) for gt in gts])
    pred, gt = torch.from_numpy(preds), torch.from_numpy(gts)
    whole = PER_IMAGE[name](pred, gt).item()
    monkeypatch.setattr(_per_image, "CPU_BLOCK_PIXELS", per_block * 23 * 31)
    blocked = PER_IMAGE[name](pred, gt).item()
    assert abs(blocked - whole) <= 1e-12 * max(1.0, abs(whole))
