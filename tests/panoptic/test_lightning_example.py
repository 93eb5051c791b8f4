"""examples/panoptic_lightning.py logs the values the metric gives on the same data, on 1 and 2 processes."""

from __future__ import annotations

import pytest
import torch

from examples import panoptic_lightning as example
from nobg_metrics.functional import panoptic_quality


def _expected() -> dict[str, torch.Tensor]:
    items = [example.Scenes()[i] for i in range(len(example.Scenes()))]
    target = torch.stack([item["panoptic"] for item in items])
    preds = torch.roll(target, shifts=1, dims=2)
    preds[preds[..., 0] == 2] = torch.tensor([1, 5])  # thing 2 predicted as a thing 1 (instance 5)
    return panoptic_quality(preds, target, example.THINGS, example.STUFFS, iscrowd=torch.stack(
        [item["iscrowd"] for item in items]), iou_type="boundary", allow_unknown_preds_category=True,
        output="dict", rules="panopticapi")


@pytest.mark.slow
@pytest.mark.parametrize("devices", [1, 2])
def test_the_example_logs_the_metrics_values(devices, capsys):
    metrics = example.main(["--devices", str(devices)])
    expected = _expected()
    for name in ("pq", "sq", "rq", "pq_things", "pq_stuff", "n"):
        assert metrics[f"val/{name}"] == pytest.approx(float(expected[name]), abs=1e-12), name
    assert 0 < metrics["val/pq_things"] < metrics["val/pq_stuff"] < 1 and "val/pq " in capsys.readouterr().out
