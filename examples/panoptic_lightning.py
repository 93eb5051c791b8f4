"""Boundary PQ of a LightningModule's panoptic predictions, logged at the end of every validation epoch.

    python examples/panoptic_lightning.py                 # 1 CPU process, prints val/pq, val/pq_things, ...
    python examples/panoptic_lightning.py --devices 2     # 2 CPU processes (ddp_spawn, gloo): the same numbers

The recipe (docs/panoptic.md):
  1. ``self.pq = nm.PanopticQuality(things, stuffs, iou_type="boundary", output="dict", rules="panopticapi")``
     in ``__init__`` (a child module; panopticapi's numbers, every value in a dict);
  2. ``self.pq.update(preds, target, iscrowd)`` in ``validation_step``: ``(B, H, W, 2)`` int
     ``(category_id, instance_id)`` maps and the ``(B, H, W)`` crowd marks;
  3. ``self.log_dict`` of the scalar entries of ``self.pq.compute()`` then ``reset()`` in
     ``on_validation_epoch_end``: every rank all-reduces the integer sums and logs the dataset value.

The "model" here predicts the gt shifted by a few pixels, with its second thing labelled as the wrong class: a
stand-in for a network, so the numbers are known to move with ``--shift``.
"""

from __future__ import annotations

import argparse

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

import nobg_metrics as nm

THINGS, STUFFS = {1, 2}, {7, 8}


class Scenes(Dataset):
    """Deterministic 96x128 scenes: two stuff bands (7 above, 8 below), two things, one crowd region of thing 1."""

    def __init__(self, count: int = 6) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        panoptic = torch.zeros(96, 128, 2, dtype=torch.long)
        panoptic[:40, :, 0], panoptic[40:, :, 0] = 7, 8
        top, left = 16 + index % 5, 12 + 6 * index
        panoptic[top:top + 36, left:left + 28] = torch.tensor([1, 1])     # thing 1, instance 1
        panoptic[52:80, 80:116] = torch.tensor([2, 1])                    # thing 2, instance 1
        panoptic[4:16, 100:124] = torch.tensor([1, 9])                    # a crowd region of thing 1
        panoptic[0, :, 0] = 0                                             # one void row (no category)
        iscrowd = (panoptic[..., 0] == 1) & (panoptic[..., 1] == 9)
        return {"panoptic": panoptic, "iscrowd": iscrowd}


class ShiftedPredictor(L.LightningModule):
    def __init__(self, shift: int = 1) -> None:
        super().__init__()
        self.shift = shift
        self.pq = nm.PanopticQuality(THINGS, STUFFS, True, iou_type="boundary", output="dict", rules="panopticapi")

    def validation_step(self, batch: dict[str, torch.Tensor], _: int) -> None:
        target = batch["panoptic"]
        preds = torch.roll(target, shifts=self.shift, dims=2)
        preds[preds[..., 0] == 2] = torch.tensor([1, 5])  # thing 2 predicted as a thing 1 (instance 5)
        self.pq.update(preds, target, batch["iscrowd"])

    def on_validation_epoch_end(self) -> None:
        values = self.pq.compute()
        self.log_dict({f"val/{name}": value.double() for name, value in values.items() if value.ndim == 0})
        self.pq.reset()


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--shift", type=int, default=1)
    args = parser.parse_args(argv)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp_spawn" if args.devices > 1 else "auto",
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, use_distributed_sampler=False)
    (metrics,) = trainer.validate(ShiftedPredictor(args.shift), DataLoader(Scenes(), batch_size=2), verbose=False)
    for name in ("val/pq", "val/sq", "val/rq", "val/pq_things", "val/pq_stuff", "val/n"):
        print(f"{name} {metrics[name]:.4f}")
    return metrics


if __name__ == "__main__":
    main()
