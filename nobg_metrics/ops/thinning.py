"""Zhang–Suen thinning of batched bool masks, bit for bit ``skimage.morphology.skeletonize`` (2-D).

Reference (scikit-image 0.25 ``_fast_skeletonize``; Zhang & Suen, CACM 27(3), 1984): the image is padded
with one background pixel; each iteration has two parallel sub-iterations; in each, every foreground
pixel's 8-neighbourhood code

    code = NW + 2 N + 4 NE + 8 E + 16 SE + 32 S + 64 SW + 128 W

indexes a 256-entry table whose value says in which sub-iteration the pixel is removed (1: the first,
2: the second, 3: both, 0: never); all removals of a sub-iteration are decided on the image before it.
Iterations repeat until one removes nothing. scikit-image's table is not the textbook Zhang–Suen
condition (25 of its 256 entries differ from ``2 <= B <= 6, A == 1`` with the two triple products), so
the table itself is the definition here: :data:`_REMOVAL_TABLE`, checked against skimage on random and
structured masks in ``tests/ops/test_thinning.py``.

How it is fast: a pixel can only be removed when it has a background 8-neighbour, so each sub-iteration
looks only at the *border set* (foreground pixels with a background neighbour), kept as flat indices of
the padded batch; after a sub-iteration the foreground neighbours of the removed pixels join it. The
work is proportional to the pixels removed plus the border, not to ``iterations × H × W``.

Host reads: the loop stops when a sub-iteration pair removes nothing (one read per iteration) and the
border set is a data-sized index list; on an accelerator this op therefore syncs once per iteration.
"""

from __future__ import annotations

import torch
from torch import Tensor

# scikit-image's removal table, entry ``code``: digit 0 keep, 1 first sub-iteration, 2 second, 3 both.
_REMOVAL_TABLE = (
    "0001001300311013000000002020303300000000300000000000000020003022"
    "0000000000000000000000000000000020000000200020003000000030003020"
    "0031001300000001000000000000000131000000000000002000000000000000"
    "2313001300000001000000000000000023010001000000003301000022002000"
)

# (row, col) offsets of the neighbourhood code's bits 0..7: NW, N, NE, E, SE, S, SW, W
_CODE_OFFSETS = ((-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1))


def _table(device: torch.device) -> Tensor:
    return torch.tensor([int(d) for d in _REMOVAL_TABLE], dtype=torch.uint8, device=device)


def skeletonize(mask: Tensor) -> Tensor:
    """The Zhang–Suen skeleton of each image, equal to ``skimage.morphology.skeletonize`` (2-D).

    Args:
        mask: :math:`(B, H, W)` or :math:`(H, W)` bool.

    Returns:
        the skeleton, same shape, bool.

    Example:
        >>> box = torch.zeros(5, 7, dtype=torch.bool); box[1:4, 1:6] = True
        >>> skeletonize(box).int()
        tensor([[0, 0, 0, 0, 0, 0, 0],
                [0, 0, 0, 0, 1, 0, 0],
                [0, 1, 1, 1, 0, 0, 0],
                [0, 0, 0, 0, 0, 0, 0],
                [0, 0, 0, 0, 0, 0, 0]], dtype=torch.int32)
    """
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"`mask` must be a bool tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    if mask.ndim not in (2, 3):
        raise ValueError(f"`mask` must have shape (B, H, W) or (H, W), got {tuple(mask.shape)}")
    batch = mask.unsqueeze(0) if mask.ndim == 2 else mask
    count, height, width = batch.shape
    if batch.numel() == 0:
        return mask.clone()
    device = batch.device
    padded = torch.zeros((count, height + 2, width + 2), dtype=torch.uint8, device=device)
    padded[:, 1:-1, 1:-1] = batch
    flat = padded.view(-1)
    stride = width + 2
    offsets = torch.tensor([dy * stride + dx for dy, dx in _CODE_OFFSETS], dtype=torch.int64, device=device)
    weights = (1 << torch.arange(8, dtype=torch.int64, device=device)).to(torch.uint8)
    table = _table(device)

    # border set: foreground pixels with a background 8-neighbour (only those can ever be removed)
    fg_index = torch.nonzero(flat).flatten()
    if fg_index.numel() == 0:
        return mask.clone()
    border = fg_index[(flat[fg_index.unsqueeze(1) + offsets] == 0).any(dim=1)]
    removed_last_round = True
    while removed_last_round:
        removed_last_round = False
        for pass_bit in (1, 2):
            neighbours = flat[border.unsqueeze(1) + offsets]  # (K, 8) 0/1
            code = (neighbours * weights).sum(dim=1, dtype=torch.int64)
            remove = (table[code] & pass_bit) != 0
            gone = border[remove]
            if gone.numel() == 0:
                continue
            removed_last_round = True
            flat[gone] = 0
            # the removed pixels' foreground neighbours now touch the background: they join the border
            touched = (gone.unsqueeze(1) + offsets).flatten()
            touched = touched[flat[touched] != 0]
            border = torch.unique(torch.cat([border[~remove], touched]))
    out = padded[:, 1:-1, 1:-1].bool()
    return out if mask.ndim == 3 else out[0]
