"""Instance AP across processes and at scale: 1 and 2 gloo ranks bit-identical, a rank without data, a metric
holding 5,000 images' statistics pickles and loads, and memory that does not grow with the image size."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
import torch

from benchmarks.instance_data import to_torch
from nobg_metrics import MeanAveragePrecision
from tests.helpers.ddp import run_ddp
from tests.instance.helpers import images

DATA = images(10, [(45, 60), (37, 53), (105, 140)], seed=50, detections=12)


def _worker(rank: int, world_size: int, shares: list, options: dict) -> dict[str, torch.Tensor]:
    torch.set_num_threads(1)
    metric = MeanAveragePrecision(**options)
    preds, target = shares[rank]
    for start in range(0, len(preds), 2):
        metric.update(preds[start:start + 2], target[start:start + 2])
    # extended_summary's ``ious`` is each process's own dict (documented: not synced); every other value is synced
    return {key: value.clone() for key, value in metric.compute().items() if key != "ious"}


def _single(preds: list, target: list, options: dict) -> dict[str, torch.Tensor]:
    metric = MeanAveragePrecision(**options)
    for start in range(0, len(preds), 2):
        metric.update(preds[start:start + 2], target[start:start + 2])
    return metric.compute()


@pytest.mark.slow
@pytest.mark.parametrize("image_ids", [True, False])
def test_two_ranks_equal_one_bit_for_bit(image_ids):
    """With ``image_id`` any split agrees; without, the split of ``DistributedSampler(shuffle=False)`` (item ``i`` to
    rank ``i % 2``) does, since the order key is (arrival index on the rank, rank)."""
    options = {"iou_type": "boundary", "class_metrics": True, "extended_summary": True}
    preds, target = to_torch(DATA, image_ids=image_ids)
    expected = _single(preds, target, options)
    if image_ids:
        splits = [[(preds[:3], target[:3]), (preds[3:], target[3:])], [([], []), (preds, target)]]
    else:
        splits = [[(preds[0::2], target[0::2]), (preds[1::2], target[1::2])]]
    for shares in splits:
        for rank, values in enumerate(run_ddp(_worker, 2, shares, options)):
            for key, value in values.items():
                assert torch.equal(value, expected[key]), f"{key}, rank {rank}"


@pytest.mark.slow
def test_five_thousand_images_pickle_and_load():
    tiny = images(50, [(12, 16), (9, 11)], seed=51, instances=2, detections=4, max_side=0.9)
    preds, target = to_torch(tiny)
    metric = MeanAveragePrecision(iou_type="boundary", class_metrics=True)
    for _ in range(100):  # 5,000 images in 100 updates
        metric.update(preds, target)
    assert int(metric.image_count) == 5000
    expected = metric.compute()
    restored = pickle.loads(pickle.dumps(metric))
    fresh = MeanAveragePrecision(iou_type="boundary", class_metrics=True)
    metric.persistent(True)
    fresh.load_state_dict(metric.state_dict())
    for other in (restored, fresh):
        result = other.compute()
        for key, value in expected.items():
            assert torch.equal(result[key], value), key


_PEAK = r"""
import resource, sys, torch
sys.path.insert(0, ".")
torch.set_num_threads(1)
from nobg_metrics import MeanAveragePrecision
side, count = int(sys.argv[1]), int(sys.argv[2])
metric = MeanAveragePrecision(iou_type="boundary")
generator = torch.Generator().manual_seed(0)
def batch():
    masks = torch.zeros(8, 6, side, side, dtype=torch.bool)
    corner = torch.randint(0, side // 2, (8, 6, 2), generator=generator)
    for i in range(8):
        for j in range(6):
            y, x = (int(v) for v in corner[i, j])
            masks[i, j, y:y + side // 3, x:x + side // 3] = True
    preds = [{"masks": masks[i, :4], "scores": torch.rand(4, generator=generator), "labels": torch.arange(4) % 2}
             for i in range(8)]
    target = [{"masks": masks[i, 4:], "labels": torch.arange(2)} for i in range(8)]
    return preds, target
before = None
for step in range(count // 8):
    metric.update(*batch())
    if step == 2:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
metric.compute()
state = sum(t.numel() * t.element_size() for name in metric._list_layouts for t in getattr(metric, name))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, state)
"""


@pytest.mark.slow
def test_memory_does_not_grow_with_the_image_size():
    """The statistics of 2,000 images take the same bytes at 32² and 256²; after the first batches the peak
    memory grows by the statistics only, not by the images."""
    results = {}
    for side in (32, 256):
        out = subprocess.run([sys.executable, "-c", _PEAK, str(side), "2000"], capture_output=True, text=True,
                             check=True, cwd=".")
        growth_kib, state_bytes = (int(v) for v in out.stdout.split())
        results[side] = (growth_kib, state_bytes)
    assert results[32][1] == results[256][1]
    assert results[256][0] * 1024 < 4 * results[32][1] + 64 * 2**20, results
