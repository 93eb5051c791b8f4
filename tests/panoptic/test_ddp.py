"""Two gloo ranks give bit-identical PQ to one process (integer states: one all-reduce of exact sums), with
uneven shares and with one rank empty."""

from __future__ import annotations

import functools

import pytest
import torch

from nobg_metrics import PanopticQuality
from tests.helpers.ddp import run_ddp
from tests.panoptic.helpers import COCO, scenes
from tests.panoptic.scenes import STUFFS, THINGS


def _worker(rank: int, world_size: int, make_metric, shares) -> dict[str, torch.Tensor]:
    metric = make_metric()
    for form in shares[rank]:
        metric.update([form[0]], [form[1]], [form[2]])
    return metric.compute()


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_two_ranks_are_bit_identical_to_one(iou_type):
    forms = [item[1:] for item in scenes()]
    make_metric = functools.partial(PanopticQuality, THINGS, STUFFS, True, iou_type=iou_type, **COCO)
    single = make_metric()
    for form in forms:
        single.update([form[0]], [form[1]], [form[2]])
    expected = single.compute()
    for shares in ([forms[:3], forms[3:]], [[], forms]):
        for rank, values in enumerate(run_ddp(_worker, 2, make_metric, shares)):
            for name, value in values.items():
                assert torch.equal(value, expected[name]), (name, rank, [len(s) for s in shares])
