"""examples/instance_lightning.py under a real Lightning Trainer on CPU, 1 and 2 processes (ddp_spawn, gloo), logging
to real TensorBoard event files: the box, mask and Boundary AP scalars and the per-class scalars equal a direct
``MeanAveragePrecision`` on the same detections (at TensorBoard's float32), and 2 processes log what 1 logs, bit for
bit — with the targets' ``image_id`` and without it (then the image order is the arrival order on the ranks)."""

from __future__ import annotations

import pathlib

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import nobg_metrics as nm
from examples import instance_lightning as example

EPOCHS = 2
IOU_TYPES = ("bbox", "segm", "boundary")


class WithoutImageIds(nm.MeanAveragePrecision):
    """The metric fed targets without ``image_id``: equal scores then break by arrival order (and DDP rank)."""

    def update(self, preds, target):  # type: ignore[override]
        super().update(preds, [{k: v for k, v in item.items() if k != "image_id"} for item in target])


class Trained(example.MaskRCNNValidation):
    """The example's module with a one-weight training loop, so ``fit`` validates every epoch (and resets)."""

    def __init__(self, image_ids: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))
        if not image_ids:
            self.map = WithoutImageIds(iou_type=IOU_TYPES, class_metrics=True)

    def training_step(self, batch, batch_idx):
        return (self.weight - 1).pow(2).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=1)


def run_and_read(root: pathlib.Path, devices: int, image_ids: bool = True) -> dict[str, list[float]]:
    """Every ``val/`` scalar of the run's TensorBoard event file, one value per epoch."""
    trainer = L.Trainer(
        accelerator="cpu", devices=devices, strategy="ddp_spawn" if devices > 1 else "auto", max_epochs=EPOCHS,
        logger=TensorBoardLogger(str(root), name="run"), use_distributed_sampler=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
    )
    trainer.fit(Trained(image_ids))
    accumulator = EventAccumulator(str(root / "run" / "version_0"))
    accumulator.Reload()
    return {tag: [event.value for event in accumulator.Scalars(tag)]
            for tag in accumulator.Tags()["scalars"] if tag.startswith("val/")}


def direct_values(image_id=lambda index: index) -> dict[str, float]:
    """``loggable`` of one metric fed every image in one call, in float64 (``image_id`` renumbers the images)."""
    images, targets = example.collate([example.Scenes()[i] for i in range(len(example.Scenes()))])
    outputs = example.MaskRCNNValidation()(images, targets)
    preds = [{"boxes": o["boxes"], "masks": o["masks"][:, 0] > 0.5, "scores": o["scores"], "labels": o["labels"]}
             for o in outputs]
    metric = nm.MeanAveragePrecision(iou_type=IOU_TYPES, class_metrics=True)
    metric.update(preds, [{**target, "image_id": image_id(target["image_id"])} for target in targets])
    return {key: float(value) for key, value in example.loggable(metric.compute()).items()}


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> dict[str, list[float]]:
    return run_and_read(tmp_path_factory.mktemp("one"), 1)


@pytest.mark.slow
def test_one_process_logs_the_direct_values_and_each_category(one_process):
    expected = direct_values()
    assert sorted(one_process) == sorted(expected)
    for iou_type in IOU_TYPES:
        for key in ("map", "map_50", "map_75", "map_medium", "mar_100"):
            assert f"val/{iou_type}_{key}" in expected
        for category in example.CATEGORIES:
            assert f"val/{iou_type}_map_per_class/{category}" in expected
            assert f"val/{iou_type}_mar_100_per_class/{category}" in expected
    for key, value in expected.items():
        assert len(one_process[key]) == EPOCHS, key  # one value per epoch: reset between epochs
        for logged in one_process[key]:
            assert abs(logged - float(np.float32(value))) <= 1e-12, (key, logged, value)
    # the point of Boundary AP: the shifted masks lose more on their boundaries than on their areas
    assert 0 < expected["val/boundary_map"] < expected["val/segm_map"] < 1
    assert 0 < expected["val/bbox_map"] < 1 and expected["val/segm_map_medium"] > 0


@pytest.mark.slow
def test_equal_scores_make_the_image_order_matter():
    """So the 2-process runs below agree only if the metric restores the dataset's image order."""
    forward, backward = direct_values(), direct_values(lambda index: len(example.SIZES) - 1 - index)
    assert forward["val/bbox_map"] != backward["val/bbox_map"]


@pytest.mark.slow
@pytest.mark.parametrize("image_ids", [True, False], ids=["image_ids", "arrival_order"])
def test_two_processes_log_the_one_process_values_bit_for_bit(one_process, tmp_path, image_ids):
    assert run_and_read(tmp_path, 2, image_ids) == one_process
