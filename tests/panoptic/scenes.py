"""Test data for panoptic quality: the scenes of benchmarks/panoptic_scenes.py in our tensor convention, and the
same images in the port's form (id maps + ``segments_info``) as the tensor convention reads them."""

from __future__ import annotations

import numpy as np
import torch

from benchmarks.panoptic_scenes import (
    STUFF_IDS,
    THING_IDS,
    Scene,
    make_scene,
    tensor_form,
)


def to_tensor_form(scene: Scene) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(preds, target, iscrowd)`` of a scene in our tensor convention (benchmarks.panoptic_scenes.tensor_form)."""
    return tensor_form(scene, THING_IDS)


def port_form(preds: torch.Tensor, target: torch.Tensor, iscrowd: torch.Tensor | None, things, stuffs
              ) -> Scene:
    """The port's view of one (H, W, 2) image pair as the tensor convention reads it: a segment per
    (category, instance), stuff instances ignored, unknown gt categories void, segments listed in the order of
    (category index, instance) with categories ordered things sorted then stuffs sorted."""
    order = [*sorted(things), *sorted(stuffs)]
    index = {c: i for i, c in enumerate(order)}
    maps, infos = [], []
    for value in (target, preds):
        cat, inst = value[..., 0].numpy(), value[..., 1].numpy()
        known = np.isin(cat, order)
        inst = np.where(np.isin(cat, list(stuffs)), 0, inst)
        keys = {}
        for c, i in sorted({(index[c], i) for c, i in zip(cat[known].tolist(), inst[known].tolist())}):
            keys[(order[c], i)] = len(keys) + 1
        ids = np.zeros(cat.shape, np.int64)
        segments = []
        for (c, i), sid in keys.items():
            mask = known & (cat == c) & (inst == i)
            ids[mask] = sid
            crowd = int(iscrowd is not None and value is target and bool(iscrowd.numpy()[mask].any()))
            segments.append({"id": sid, "category_id": c, "iscrowd": crowd, "area": int(mask.sum())})
        maps.append(ids)
        infos.append(segments)
    return Scene(maps[0], infos[0], maps[1], infos[1])


def categories_of(things, stuffs) -> list[dict]:
    """The port's category list in our output order."""
    return ([{"id": c, "isthing": 1} for c in sorted(things)] + [{"id": c, "isthing": 0} for c in sorted(stuffs)])


THINGS, STUFFS = set(THING_IDS), set(STUFF_IDS)
__all__ = ["STUFFS", "THINGS", "categories_of", "make_scene", "port_form", "to_tensor_form"]
