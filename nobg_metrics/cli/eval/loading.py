"""Decoding for the scoring loop: the loader's dataset of decoded ``(gt, pred, trimap, image)`` maps (in the
DataLoader's workers), the workers' set-up, and the stacking of a group of equal-size samples into tensors.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from nobg_metrics.cli.core.signals import worker_signals
from nobg_metrics.cli.eval.jobs import Item
from nobg_metrics.cli.eval.protocols import reader_protocol
from nobg_metrics.io.errors import InvalidMap, ReadError
from nobg_metrics.io.images import read_image, read_mask, read_prediction, read_trimap, resize_prediction
from nobg_metrics.ops.arith import divide

_KEPT_GTS = 64
"""Decoded gts a loader worker keeps (64 MiB at 1024²): more than a gt chunk of the default batch size."""


class Pairs(Dataset):
    """Decoded ``(gt, pred, trimap, image)`` uint8 maps (``image`` :math:`(H, W, 3)` RGB, only for the jobs in
    ``image_jobs``); a decoding problem is returned, not raised."""

    def __init__(self, items: list[Item], protocol: str = "pysodmetrics", image_jobs: frozenset[int] = frozenset()
                 ) -> None:
        self.items = items
        self.protocol = reader_protocol(protocol)  # how predictions are read and resized (files.read_prediction)
        self.image_jobs = image_jobs
        self._gts: OrderedDict[Path, np.ndarray] = OrderedDict()  # the last gts read (cli.eval.batching: methods of a
        # gt chunk follow each other, so a loader worker meets the same gt again within a few batches)

    def _read_gt(self, path: Path) -> np.ndarray:
        if path in self._gts:
            self._gts.move_to_end(path)
            return self._gts[path]
        gt = self._gts[path] = read_mask(path)
        while len(self._gts) > _KEPT_GTS:
            self._gts.popitem(last=False)
        return gt

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        item = self.items[index]
        out: dict[str, Any] = {"item": item, "error": None, "resized": False}
        read_pred = functools.partial(read_prediction, protocol=self.protocol)
        image = item.image if item.job in self.image_jobs else None
        for key, path, reader in (("gt", item.gt, self._read_gt), ("pred", item.pred, read_pred),
                                  ("trimap", item.trimap, read_trimap), ("image", image, read_image)):
            if path is None:
                out[key] = None
                continue
            try:
                out[key] = reader(path)
            except InvalidMap as error:
                out["error"] = (path.name, f"invalid {key}: {error}")
                return out
            except (ReadError, OSError) as error:
                out["error"] = (path.name, f"unreadable {key}: {error}")
                return out
        gt, pred, trimap = out["gt"], out["pred"], out["trimap"]
        if pred.shape != gt.shape:
            out["pred"], out["resized"] = resize_prediction(pred, gt.shape[0], gt.shape[1], self.protocol), True
        if trimap is not None and trimap.shape != gt.shape:
            assert item.trimap is not None  # the trimap was read from it
            out["error"] = (item.trimap.name, f"trimap size {trimap.shape} differs from gt size {gt.shape}")
        if out["image"] is not None and out["image"].shape[:2] != gt.shape:
            assert image is not None  # the image was read from it
            out["error"] = (f"image/{image.name}",
                            f"image size {out['image'].shape[:2]} differs from gt size {gt.shape}")
        return out


def keep_list(samples: list) -> list:
    return samples


def worker_init(parent: int, _: int) -> None:
    worker_signals(parent)  # never outlives the scoring process; Ctrl-C of a worker stops the run in order
    torch.set_num_threads(1)


def as_tensors(samples: list[dict], protocol: str,
               device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Stack equal-size decoded maps: pred (B, H, W) uint8 (raw protocol: float64 / 255), gt, trimap, image
    (B, 3, H, W) uint8 RGB (``None`` when the samples have none)."""
    pred = torch.from_numpy(np.stack([s["pred"] for s in samples])).to(device)
    gt = torch.from_numpy(np.stack([s["gt"] for s in samples])).to(device)
    trimap = None
    if samples[0]["trimap"] is not None:
        trimap = torch.from_numpy(np.stack([s["trimap"] for s in samples])).to(device)
    image = None
    if samples[0]["image"] is not None:
        image = torch.from_numpy(np.stack([s["image"] for s in samples])).permute(0, 3, 1, 2).contiguous().to(device)
    if protocol == "raw":
        pred = divide(pred.double(), 255)  # true division on every device, as numpy
    return pred, gt, trimap, image
