"""A real Lightning Trainer on CPU, 1 and 2 processes (ddp_spawn, gloo), logging a tier to real
TensorBoard event files: every logged scalar equals the value computed directly on the same predictions."""

from __future__ import annotations

import pathlib

import lightning as L
import pytest
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import nobg_metrics as nm
from examples.lightning_validation import ShardSampler


def validation_data(count: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fixed predictions, gt mattes and trimaps (the 'model output' is part of the data)."""
    generator = torch.Generator().manual_seed(count)
    yy, xx = torch.meshgrid(torch.arange(24), torch.arange(30), indexing="ij")
    gts, preds, trimaps = [], [], []
    for _ in range(count):
        cy, cx, r = torch.rand(3, generator=generator) * torch.tensor([12.0, 14.0, 6.0]) + torch.tensor([6.0, 8.0, 4.0])
        dist = ((yy - cy) ** 2 + (xx - cx) ** 2).sqrt()
        gt = (r + 1 - dist).clamp(0, 1)
        pred = (gt + torch.rand(gt.shape, generator=generator) * 0.3 - 0.1).clamp(0, 1)
        trimap = torch.where((dist - r).abs() < 3, 128, torch.where(dist < r, 255, 0)).to(torch.uint8)
        gts.append(gt[None]), preds.append(pred[None]), trimaps.append(trimap[None])
    return torch.stack(preds), torch.stack(gts), torch.stack(trimaps)


class LoggedValidation(L.LightningModule):
    def __init__(self, count: int, tier: str) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))
        self.count = count
        self.val_metrics = nm.make_collection(tier, prefix="val/")

    def training_step(self, batch, batch_idx):
        return (self.weight - 1).pow(2).sum()

    def validation_step(self, batch, batch_idx):
        pred, gt, trimap = batch
        self.val_metrics.update(pred, gt, trimap=trimap)

    def on_validation_epoch_end(self):
        self.log_dict(self.val_metrics.compute())
        self.val_metrics.reset()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return DataLoader(TensorDataset(torch.zeros(2, 1)), batch_size=1)

    def val_dataloader(self):
        dataset = TensorDataset(*validation_data(self.count))
        sampler = None
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            sampler = ShardSampler(len(dataset))
        return DataLoader(dataset, batch_size=2, sampler=sampler)


def run_and_read(tmp_path: pathlib.Path, devices: int, count: int, tier: str, precision: str = "32-true") -> dict:
    trainer = L.Trainer(
        accelerator="cpu", devices=devices, strategy="ddp_spawn" if devices > 1 else "auto", max_epochs=2,
        precision=precision, logger=TensorBoardLogger(str(tmp_path), name="run"), use_distributed_sampler=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
    )
    trainer.fit(LoggedValidation(count, tier))
    (events,) = list(tmp_path.glob("run/version_0"))
    accumulator = EventAccumulator(str(events))
    accumulator.Reload()
    return {tag: [event.value for event in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}


def direct_values(count: int, tier: str) -> dict[str, float]:
    collection = nm.make_collection(tier, prefix="val/")
    pred, gt, trimap = validation_data(count)
    collection.update(pred, gt, trimap=trimap)
    return {key: float(value) for key, value in collection.compute().items()}


def assert_logged(logged: dict, expected: dict) -> None:
    for key, value in expected.items():
        assert key in logged, f"{key} not logged (got {sorted(logged)})"
        assert len(logged[key]) == 2, f"{key}: expected one scalar per epoch, got {logged[key]}"
        for scalar in logged[key]:
            assert abs(scalar - value) <= 1e-5 * max(1.0, abs(value)), (key, scalar, value)


@pytest.mark.slow
def test_one_process_logs_the_direct_values(tmp_path):
    assert_logged(run_and_read(tmp_path, 1, 5, "expensive"), direct_values(5, "expensive"))


@pytest.mark.slow
def test_two_processes_with_uneven_shares_log_the_single_process_values(tmp_path):
    assert_logged(run_and_read(tmp_path, 2, 5, "expensive"), direct_values(5, "expensive"))


@pytest.mark.slow
def test_a_rank_without_validation_data_still_logs_the_dataset_value(tmp_path):
    assert_logged(run_and_read(tmp_path, 2, 1, "cheap"), direct_values(1, "cheap"))


@pytest.mark.slow
def test_bf16_mixed_precision_keeps_states_and_values(tmp_path):
    logged = run_and_read(tmp_path, 1, 3, "cheap", precision="bf16-mixed")
    assert_logged(logged, direct_values(3, "cheap"))
