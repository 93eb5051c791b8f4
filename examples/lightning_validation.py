"""Log a tier of nobg_metrics from a LightningModule to TensorBoard every epoch — on 1 or N processes.

    python examples/lightning_validation.py                      # 1 CPU process, medium tier
    python examples/lightning_validation.py --devices 2          # 2 CPU processes (ddp_spawn, gloo)
    python examples/lightning_validation.py --precision bf16-mixed --tier expensive
    tensorboard --logdir lightning_logs                          # scalars + the PR / F-threshold figure

The recipe, in three lines of the module below:
  1. ``self.val_metrics = make_collection("medium", prefix="val/")`` in ``__init__`` (a registered child
     module: it moves with the model and its states are saved in checkpoints);
  2. ``self.val_metrics.update(pred, gt)`` in ``validation_step`` (probabilities, not logits);
  3. ``self.log_dict(self.val_metrics.compute())`` then ``reset()`` in ``on_validation_epoch_end``: every
     rank calls ``compute()``, which all-reduces the fixed-size states, so each rank logs the dataset value
     — even a rank that received no batch.

Validation data is sharded with ``ShardSampler`` (below): Lightning's default ``DistributedSampler``
pads the last shard by duplicating samples, which biases validation metrics (5 images on 2 ranks would
be scored as 6). Lightning's ``UnrepeatedDistributedSampler`` does not duplicate either, but refuses a
rank with no sample; ``ShardSampler`` allows it.
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from torch import nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Sampler

import nobg_metrics as nm


class ShardSampler(Sampler[int]):
    """Every ``world_size``-th index from ``rank``: each sample on exactly one rank, none duplicated.

    Unlike ``DistributedSampler`` it never pads, and unlike Lightning's ``UnrepeatedDistributedSampler``
    it allows a rank to get no sample at all (fewer samples than ranks) — harmless for our metrics,
    whose states are fixed-size sums. ``length`` is the dataset's length.
    """

    def __init__(self, length: int) -> None:
        self.length = length
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        self.rank = torch.distributed.get_rank() if distributed else 0
        self.world_size = torch.distributed.get_world_size() if distributed else 1

    def __iter__(self):
        return iter(range(self.rank, self.length, self.world_size))

    # No ``__len__`` on purpose: Lightning refuses a dataloader whose length is 0 on some rank, but
    # runs one of unknown length to exhaustion — zero batches there, and the epoch end still syncs.


class SyntheticMasks(Dataset):
    """Deterministic (image, gt) pairs: a bright disc on noise; the gt is the disc."""

    def __init__(self, count: int, size: int = 48, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
        self.items = []
        for _ in range(count):
            cy, cx, radius = (torch.rand(3, generator=generator) * torch.tensor([size / 2, size / 2, size / 4])
                              + torch.tensor([size / 4, size / 4, size / 8]))
            gt = ((yy - cy) ** 2 + (xx - cx) ** 2 <= radius**2).float()[None]
            image = (gt * 0.6 + torch.rand(1, size, size, generator=generator) * 0.4).repeat(3, 1, 1)
            self.items.append((image, gt))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.items[index]


class TinySegmenter(L.LightningModule):
    """A two-layer conv net that learns to find the disc; its validation logs a nobg_metrics tier."""

    def __init__(self, tier: str = "medium", val_count: int = 5, batch_size: int = 2) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
        self.val_metrics = nm.make_collection(tier, prefix="val/")
        self.curves = nm.FMeasure(mode="max")  # for the PR / F-threshold figure
        self.val_count, self.batch_size = val_count, batch_size

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.net(image)

    def training_step(self, batch, batch_idx):
        image, gt = batch
        loss = nn.functional.binary_cross_entropy_with_logits(self(image), gt)
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        image, gt = batch
        pred = torch.sigmoid(self(image))  # probabilities in [0, 1]; half precision under AMP is fine
        self.val_metrics.update(pred, gt)
        self.curves.update(pred, gt)

    def on_validation_epoch_end(self):
        self.log_dict(self.val_metrics.compute())  # synced over ranks inside compute()
        self.val_metrics.reset()
        figure, _ = self.curves.plot()
        if self.trainer.is_global_zero and isinstance(self.logger, TensorBoardLogger):
            self.logger.experiment.add_figure("val/curves", figure, self.current_epoch)
        import matplotlib.pyplot as plt

        plt.close(figure)
        self.curves.reset()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)

    def train_dataloader(self):
        dataset = SyntheticMasks(8, seed=1)
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return DataLoader(dataset, batch_size=self.batch_size, sampler=DistributedSampler(dataset, shuffle=True))
        return DataLoader(dataset, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        dataset = SyntheticMasks(self.val_count, seed=2)
        return DataLoader(dataset, batch_size=self.batch_size, sampler=ShardSampler(len(dataset)))  # no duplicates


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tier", default="medium", choices=["cheap", "medium", "expensive"])
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--precision", default="32-true", help="e.g. 32-true, bf16-mixed, 16-mixed")
    parser.add_argument("--logdir", default="lightning_logs")
    args = parser.parse_args(argv)
    trainer = L.Trainer(
        accelerator="cpu", devices=args.devices, strategy="ddp_spawn" if args.devices > 1 else "auto",
        max_epochs=args.epochs, precision=args.precision, logger=TensorBoardLogger(args.logdir, name="nobg"),
        use_distributed_sampler=False,  # samplers chosen in the dataloaders: validation must not duplicate
        enable_checkpointing=False, enable_progress_bar=False, log_every_n_steps=1,
    )
    trainer.fit(TinySegmenter(args.tier))
    print({key: round(float(value), 4) for key, value in trainer.callback_metrics.items()})


if __name__ == "__main__":
    main()
