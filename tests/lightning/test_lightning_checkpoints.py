"""Metric states in real Lightning checkpoints (``ModelCheckpoint`` mid-epoch, ``Trainer.save_checkpoint``), both
ways: by default a checkpoint holds no metric state and loads, strictly, into a module with the metrics or without
them; with ``persistent(True)`` it holds every state and a resume from it ends on the uninterrupted run's values."""

from __future__ import annotations

import pathlib
import warnings

import lightning as L
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import nobg_metrics as nm

BATCHES, BATCH_SIZE = 4, 2


def training_data() -> tuple[torch.Tensor, torch.Tensor]:
    """Fixed predictions and gt masks (the 'model output' is part of the data), ``BATCHES`` batches."""
    generator = torch.Generator().manual_seed(7)
    gt = torch.rand(BATCHES * BATCH_SIZE, 1, 12, 16, generator=generator) > 0.6
    pred = (gt.double() * 0.7 + torch.rand(gt.shape, generator=generator, dtype=torch.float64) * 0.3).clamp(0, 1)
    return pred, gt


class ResumableLoader(DataLoader):
    """A ``DataLoader`` that starts where a checkpoint left it (the ``state_dict`` / ``load_state_dict`` pair
    Lightning asks of a loader for a mid-epoch resume; without it the epoch starts again from its first batch)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.served, self.skip = 0, 0

    def __iter__(self):
        skip, self.skip = self.skip, 0
        self.served = skip
        for index, batch in enumerate(super().__iter__()):
            if index >= skip:
                self.served = index + 1
                yield batch

    def state_dict(self) -> dict[str, int]:
        return {"served": self.served}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.skip = state["served"]


class Plain(L.LightningModule):
    """The model alone: what a checkpoint is loaded into for inference."""

    def __init__(self, persistent: bool = False) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.weight = nn.Parameter(torch.zeros(1))

    def training_step(self, batch, batch_idx):
        return (self.weight - 1).pow(2).sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return ResumableLoader(TensorDataset(*training_data()), batch_size=BATCH_SIZE)


class Scored(Plain):
    """The model with a collection and a single metric, updated on every training batch."""

    def __init__(self, persistent: bool = False) -> None:
        super().__init__(persistent)
        self.metrics = nm.make_collection("cheap", prefix="train/")
        self.mae = nm.MAE()
        self.metrics.persistent(persistent)  # the collection's switch reaches every member
        self.mae.persistent(persistent)

    def training_step(self, batch, batch_idx):
        self.metrics.update(*batch)
        self.mae.update(*batch)
        return super().training_step(batch, batch_idx)

    def values(self) -> dict[str, float]:
        values = {key: float(value) for key, value in self.metrics.compute().items()}
        return {**values, "mae": float(self.mae.compute())}


def trainer(root: pathlib.Path, **options) -> L.Trainer:
    return L.Trainer(accelerator="cpu", devices=1, max_epochs=1, logger=False, enable_progress_bar=False,
                     enable_model_summary=False, default_root_dir=str(root), **options)


def fit_with_checkpoints(root: pathlib.Path, persistent: bool) -> tuple[Scored, pathlib.Path]:
    """One epoch of ``BATCHES`` steps, a ``ModelCheckpoint`` every 2 steps; returns the module and the mid-epoch one."""
    saving = ModelCheckpoint(dirpath=root / "checkpoints", filename="{step}", every_n_train_steps=2, save_top_k=-1)
    module = Scored(persistent)
    trainer(root, callbacks=[saving]).fit(module)
    middle = root / "checkpoints" / "step=2.ckpt"
    assert middle.exists(), sorted(p.name for p in (root / "checkpoints").iterdir())
    return module, middle


def checkpoint_state(path: pathlib.Path) -> dict[str, object]:
    return torch.load(path, map_location="cpu", weights_only=False)["state_dict"]


@pytest.mark.slow
def test_by_default_a_checkpoint_holds_no_metric_state_and_loads_with_or_without_the_metrics(tmp_path):
    module, middle = fit_with_checkpoints(tmp_path, persistent=False)
    assert list(checkpoint_state(middle)) == ["weight"]
    saved = tmp_path / "end.ckpt"
    module.trainer.save_checkpoint(saved)  # after the epoch, by hand
    assert list(checkpoint_state(saved)) == ["weight"]
    for path in (middle, saved):
        inference = Plain.load_from_checkpoint(path)  # strict: a module without the metrics
        assert torch.equal(inference.weight.detach(), checkpoint_state(path)["weight"])
        scored = Scored.load_from_checkpoint(path)  # strict: a module with them, fresh
        assert not scored.mae.update_called
        assert not any(member.update_called for member in scored.metrics.values())
    with pytest.raises(RuntimeError, match="Missing key"):  # a module that keeps its states expects them
        Scored.load_from_checkpoint(middle, persistent=True)


@pytest.mark.slow
def test_a_persistent_mid_epoch_checkpoint_resumes_on_the_uninterrupted_values(tmp_path):
    module, middle = fit_with_checkpoints(tmp_path, persistent=True)
    expected = module.values()
    state = checkpoint_state(middle)
    assert {"mae.mae_sum", "mae.mae_count"} <= set(state)
    assert any(key.startswith("mae.options_") for key in state)  # the fingerprint travels with the states
    assert sum(key.startswith("metrics.") for key in state) >= 2 * len(module.metrics)

    pred, gt = training_data()
    first_half = Scored()
    for start in range(0, 2 * BATCH_SIZE, BATCH_SIZE):
        first_half.training_step((pred[start:start + BATCH_SIZE], gt[start:start + BATCH_SIZE]), 0)
    resumed = Scored.load_from_checkpoint(middle)  # persistent=True from the saved hyperparameters
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "compute called before update": the loaded counts are data
        assert resumed.values() == first_half.values()
    for start in range(2 * BATCH_SIZE, BATCHES * BATCH_SIZE, BATCH_SIZE):
        resumed.training_step((pred[start:start + BATCH_SIZE], gt[start:start + BATCH_SIZE]), 0)
    assert resumed.values() == expected

    # the same through Lightning's own resume: fit(ckpt_path=...) restores the states, then runs the rest
    refit = Scored(persistent=True)
    trainer(tmp_path / "resume").fit(refit, ckpt_path=middle)
    assert refit.values() == expected

    with pytest.raises(RuntimeError, match="Unexpected key"):  # states in it: a module without them loads it
        Plain.load_from_checkpoint(middle)  # only with strict=False, as for any unexpected key
    assert torch.equal(Plain.load_from_checkpoint(middle, strict=False).weight.detach(), state["weight"])
