"""Box, mask and Boundary AP of a Mask R-CNN-style LightningModule, logged to TensorBoard every validation epoch.

    python examples/instance_lightning.py                 # 1 CPU process, prints every logged value
    python examples/instance_lightning.py --devices 2     # 2 CPU processes (ddp_spawn, gloo): the same numbers
    tensorboard --logdir lightning_logs                   # val/segm_map, val/boundary_map_per_class/5, ...

The recipe (docs/training.md, docs/instance_segmentation.md):
  1. ``self.map = nm.MeanAveragePrecision(iou_type=("bbox", "segm", "boundary"), class_metrics=True)`` in
     ``__init__`` (a child module): one metric, three IoU types, keys prefixed ``bbox_``, ``segm_``, ``boundary_``;
  2. ``self.map.update(preds, targets)`` in ``validation_step``: torchvision-style lists of dicts, the masks
     thresholded (``masks[:, 0] > 0.5``);
  3. ``self.log_dict(loggable(self.map.compute()))`` then ``reset()`` in ``on_validation_epoch_end``: every
     rank gathers the statistics of all ranks in ``compute()`` and logs the dataset value (no ``sync_dist``: the
     values are already synced); ``loggable`` keeps the scalars and splits each ``*_per_class`` tensor into one
     scalar per category id, ``val/segm_map_per_class/5``.

The "model" turns each image's ground truth into detections: it shifts the masks by a pixel or two, drops some,
mislabels a few, adds false positives, and draws the scores (in steps of 0.05, so equal scores occur) from a
generator seeded by the image id — a stand-in for a network that runs in seconds, with the same detections on 1 or
N ranks. Validation is sharded without duplicates (``UnrepeatedDistributedSampler``, image ``i`` on rank
``i % N``), so 7 images on 2 ranks log exactly the 1-process values.
"""

from __future__ import annotations

import argparse
import warnings

import lightning as L
import torch
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.overrides.distributed import UnrepeatedDistributedSampler
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

import nobg_metrics as nm

# Lightning advises ``sync_dist=True`` for every epoch-level value logged under DDP; ours are synced by compute().
warnings.filterwarnings("ignore", r"It is recommended to use `self.log\('val/", category=Warning)

CATEGORIES = (1, 2, 5)
SIZES = ((97, 131), (120, 85), (75, 75), (59, 140), (88, 63), (137, 122), (41, 40))  # (H, W), one image each


def _randint(low: int, high: int, generator: torch.Generator) -> int:
    return int(torch.randint(low, high, (), generator=generator))


def _ellipse(height: int, width: int, generator: torch.Generator) -> Tensor:
    """A filled ellipse of random size and place, inside the (H, W) image."""
    ry, rx = _randint(3, max(4, height // 3), generator), _randint(3, max(4, width // 3), generator)
    cy, cx = _randint(ry + 1, height - ry - 1, generator), _randint(rx + 1, width - rx - 1, generator)
    yy, xx = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1


def boxes_of(masks: Tensor) -> Tensor:
    """(N, H, W) bool masks -> (N, 4) float xyxy boxes around them (empty masks: zeros)."""
    boxes = torch.zeros(len(masks), 4)
    for n, mask in enumerate(masks):
        rows, cols = mask.any(1).nonzero()[:, 0], mask.any(0).nonzero()[:, 0]
        if len(rows):
            boxes[n] = torch.tensor([cols[0], rows[0], cols[-1] + 1, rows[-1] + 1], dtype=torch.float32)
    return boxes


class Scenes(Dataset):
    """(image, target) pairs of odd sizes: 2-4 objects of categories 1, 2, 5, and a crowd region every third image."""

    def __len__(self) -> int:
        return len(SIZES)

    def __getitem__(self, index: int) -> tuple[Tensor, dict]:
        generator = torch.Generator().manual_seed(index)
        height, width = SIZES[index]
        count = 2 + index % 3
        masks = torch.stack([_ellipse(height, width, generator) for _ in range(count)])
        labels = torch.tensor([CATEGORIES[_randint(0, len(CATEGORIES), generator)] for _ in range(count)])
        iscrowd = torch.zeros(count, dtype=torch.long)
        iscrowd[-1] = int(index % 3 == 0)
        image = masks.any(0).float().expand(3, height, width) * 0.5 + torch.rand(3, height, width, generator=generator)
        target = {"boxes": boxes_of(masks), "masks": masks, "labels": labels, "iscrowd": iscrowd, "image_id": index}
        return image, target


def collate(batch: list[tuple[Tensor, dict]]) -> tuple[list[Tensor], list[dict]]:
    """Images of different sizes stay a list, as torchvision's detection models take them."""
    return [image for image, _ in batch], [target for _, target in batch]


def _shifted(mask: Tensor, dy: int, dx: int) -> Tensor:
    height, width = mask.shape
    out = torch.zeros_like(mask)
    out[max(dy, 0):height + min(dy, 0), max(dx, 0):width + min(dx, 0)] = \
        mask[max(-dy, 0):height + min(-dy, 0), max(-dx, 0):width + min(-dx, 0)]
    return out


def stand_in_detections(target: dict) -> dict[str, Tensor]:
    """Mask R-CNN's output for one image, made from its target: ``boxes``, ``labels``, ``scores``, ``masks``
    (N, 1, H, W) probabilities."""
    generator = torch.Generator().manual_seed(1000 + int(target["image_id"]))
    height, width = target["masks"].shape[-2:]
    masks, labels = [], []
    for mask, label in zip(target["masks"], target["labels"].tolist()):
        if torch.rand((), generator=generator) < 0.2:
            continue  # a missed object
        masks.append(_shifted(mask, _randint(-2, 3, generator), _randint(-2, 3, generator)))
        labels.append(label if torch.rand((), generator=generator) > 0.15 else CATEGORIES[label % len(CATEGORIES)])
    for _ in range(_randint(1, 3, generator)):  # false positives
        masks.append(_ellipse(height, width, generator))
        labels.append(CATEGORIES[_randint(0, len(CATEGORIES), generator)])
    stacked = torch.stack(masks)
    scores = torch.randint(1, 21, (len(masks),), generator=generator) * 0.05  # ties between images occur
    return {"boxes": boxes_of(stacked) + torch.randint(-1, 2, (len(masks), 4), generator=generator),
            "labels": torch.tensor(labels), "scores": scores, "masks": stacked[:, None].float() * 0.9 + 0.05}


def loggable(values: dict[str, Tensor], prefix: str = "val/") -> dict[str, Tensor]:
    """The scalars of ``compute()``'s dict, and each ``*_per_class`` tensor as ``<prefix><key>/<category id>``."""
    classes = values["classes"].reshape(-1).tolist()
    logged = {}
    for key, value in values.items():
        if key.endswith("_per_class"):
            logged.update({f"{prefix}{key}/{c}": v for c, v in zip(classes, value.reshape(-1).double())})
        elif key != "classes" and value.numel() == 1:
            logged[prefix + key] = value.double()
    return logged


class MaskRCNNValidation(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.map = nm.MeanAveragePrecision(iou_type=("bbox", "segm", "boundary"), class_metrics=True)

    def forward(self, images: list[Tensor], targets: list[dict]) -> list[dict[str, Tensor]]:
        return [stand_in_detections(target) for target in targets]  # a real model: self.model(images)

    def validation_step(self, batch: tuple[list[Tensor], list[dict]], batch_idx: int) -> None:
        images, targets = batch
        outputs = self(images, targets)
        preds = [{"boxes": o["boxes"], "masks": o["masks"][:, 0] > 0.5, "scores": o["scores"], "labels": o["labels"]}
                 for o in outputs]
        self.map.update(preds, targets)

    def on_validation_epoch_end(self) -> None:
        self.log_dict(loggable(self.map.compute()))  # synced over ranks inside compute(): no sync_dist
        self.map.reset()

    def val_dataloader(self) -> DataLoader:
        dataset = Scenes()
        distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        sampler = UnrepeatedDistributedSampler(dataset, shuffle=False) if distributed else None
        return DataLoader(dataset, batch_size=2, sampler=sampler, collate_fn=collate)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--logdir", default="lightning_logs")
    args = parser.parse_args(argv)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp_spawn" if args.devices > 1 else "auto",
                        logger=TensorBoardLogger(args.logdir, name="instances"), use_distributed_sampler=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    (metrics,) = trainer.validate(MaskRCNNValidation(), verbose=False)
    for name, value in metrics.items():
        print(f"{name} {value:.4f}")
    return dict(metrics)


if __name__ == "__main__":
    main()
