"""``MeanAveragePrecision(errors="tide")`` on 2 gloo ranks: ``tide_errors()`` is synced like ``compute`` and equals
one process' values (and ``functional.tide_errors`` on the whole list), with and without ``image_id``."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from nobg_metrics import MeanAveragePrecision
from nobg_metrics.functional import tide_errors
from tests.helpers.ddp import run_ddp
from tests.instance.test_tide_state import assert_same
from tests.instance.tide_state_data import tide_images


def _worker(rank: int, world_size: int, shares: list, iou_type: Any) -> tuple[dict, dict, dict]:
    torch.set_num_threads(1)
    metric = MeanAveragePrecision(iou_type=iou_type, errors="tide", warn_on_many_detections=False)
    preds, target = shares[rank]
    for start in range(0, len(preds), 2):
        metric.update(preds[start:start + 2], target[start:start + 2])
    values = metric.tide_errors()
    again = metric.tide_errors()  # the states are unsynced after each call: the same values twice
    return values, again, {key: value.clone() for key, value in metric.compute().items()}


@pytest.mark.slow
@pytest.mark.parametrize("image_ids", [True, False])
def test_two_ranks_equal_the_function(image_ids):
    """With ``image_id`` any split agrees (one rank without data too); without, the split of
    ``DistributedSampler(shuffle=False)`` (item ``i`` to rank ``i % 2``)."""
    iou_types = ("bbox", "boundary")
    preds, target = tide_images(11, image_ids=image_ids)
    expected = {t: tide_errors(preds, target, iou_type=t, thresholds="coco") for t in iou_types}
    single = MeanAveragePrecision(iou_type=iou_types, errors="tide", warn_on_many_detections=False)
    single.update(preds, target)
    ap = single.compute()
    if image_ids:
        splits = [[(preds[:3], target[:3]), (preds[3:], target[3:])], [([], []), (preds, target)]]
    else:
        splits = [[(preds[0::2], target[0::2]), (preds[1::2], target[1::2])]]
    for shares in splits:
        for rank, (values, again, ap_values) in enumerate(run_ddp(_worker, 2, shares, iou_types)):
            for iou_type in iou_types:
                assert_same(values[iou_type], expected[iou_type], 0.0)
                assert_same(again[iou_type], expected[iou_type], 0.0)
            assert all(torch.equal(value, ap[key]) for key, value in ap_values.items()), rank
