"""The Cityscapes label table the instance evaluation reads (cityscapesScripts ``helpers/labels.py``): label ids,
names and the two flags that decide what is evaluated and what is void.

- **Evaluated classes**: ``hasInstances and not ignoreInEval`` — person, rider, car, truck, bus, train, motorcycle,
  bicycle (in the table's order, which is the order of the printed table and of every per-class output).
- **Void**: a gt pixel whose raw value is the id of an ``ignoreInEval`` label (``0`` unlabeled, ``1`` ego vehicle,
  ..., ``29`` caravan, ``30`` trailer, ``-1`` license plate). The test is on the raw value: a caravan *instance*
  (``29001``) is neither void nor evaluated.
- **Encoding** of an ``*_instanceIds`` map: ``label id * 1000 + instance number`` for instances, the bare label id
  elsewhere (``instance.py``: ``labelID = v // 1000 if v >= 1000 else v``); a value ``< 1000`` of an evaluated
  class is a *group* region (``26``: several cars).
"""

from __future__ import annotations

import torch
from torch import Tensor

LABELS: tuple[tuple[int, str, bool, bool], ...] = (
    # (id, name, hasInstances, ignoreInEval), as labels.py lists them
    (0, "unlabeled", False, True), (1, "ego vehicle", False, True), (2, "rectification border", False, True),
    (3, "out of roi", False, True), (4, "static", False, True), (5, "dynamic", False, True),
    (6, "ground", False, True), (7, "road", False, False), (8, "sidewalk", False, False),
    (9, "parking", False, True), (10, "rail track", False, True), (11, "building", False, False),
    (12, "wall", False, False), (13, "fence", False, False), (14, "guard rail", False, True),
    (15, "bridge", False, True), (16, "tunnel", False, True), (17, "pole", False, False),
    (18, "polegroup", False, True), (19, "traffic light", False, False), (20, "traffic sign", False, False),
    (21, "vegetation", False, False), (22, "terrain", False, False), (23, "sky", False, False),
    (24, "person", True, False), (25, "rider", True, False), (26, "car", True, False), (27, "truck", True, False),
    (28, "bus", True, False), (29, "caravan", True, True), (30, "trailer", True, True), (31, "train", True, False),
    (32, "motorcycle", True, False), (33, "bicycle", True, False), (-1, "license plate", False, True),
)

EVAL_LABEL_IDS: tuple[int, ...] = tuple(i for i, _, instances, ignored in LABELS if instances and not ignored)
"""``(24, 25, 26, 27, 28, 31, 32, 33)``: the evaluated classes, in table order."""
EVAL_CLASS_NAMES: tuple[str, ...] = tuple(n for _, n, instances, ignored in LABELS if instances and not ignored)
IGNORED_LABEL_IDS: tuple[int, ...] = tuple(i for i, _, _, ignored in LABELS if ignored)
LOWEST_LABEL_ID, HIGHEST_LABEL_ID = -1, 33
"""Every id in ``-1 .. 33`` is a label; gt values are ``-1 .. 33`` or ``1000 .. 33999``."""
GROUP_LIMIT = 1000
"""Values below it are not instances (``Instance.getLabelID``)."""


def label_ids(values: Tensor) -> Tensor:
    """The label id of each instanceIds value: ``v // 1000`` for ``v >= 1000``, else ``v`` (int64)."""
    values = values.to(torch.int64)
    return torch.where(values >= GROUP_LIMIT, torch.div(values, GROUP_LIMIT, rounding_mode="floor"), values)


def eval_class_index(labels: Tensor) -> Tensor:
    """Position of each label id among :data:`EVAL_LABEL_IDS` (0..7), ``-1`` for any other id (int64)."""
    table = torch.full((HIGHEST_LABEL_ID - LOWEST_LABEL_ID + 1,), -1, dtype=torch.int64, device=labels.device)
    table[torch.tensor(EVAL_LABEL_IDS, device=labels.device) - LOWEST_LABEL_ID] = torch.arange(
        len(EVAL_LABEL_IDS), device=labels.device)
    labels = labels.to(torch.int64)
    known = (labels >= LOWEST_LABEL_ID) & (labels <= HIGHEST_LABEL_ID)
    return torch.where(known, table[(labels - LOWEST_LABEL_ID).clamp(0, table.numel() - 1)], -1)


def is_void_value(values: Tensor) -> Tensor:
    """Whether each raw instanceIds value is the id of an ``ignoreInEval`` label (bool)."""
    return torch.isin(values.to(torch.int64), torch.tensor(IGNORED_LABEL_IDS, device=values.device))
