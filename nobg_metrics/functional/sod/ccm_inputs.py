"""Inputs of the camouflage context measure CCm: ``pred`` and ``gt`` as every segmentation metric takes them
(:func:`nobg_metrics._inputs.prepare_segmentation`) and the RGB ``image`` each pair was predicted from.

``image``: a :math:`(B, 3, H, W)` (or :math:`(3, H, W)`) uint8 tensor with channels R, G, B beside tensor ``pred`` /
``gt``, or a list with one :math:`(3, H, W)` / :math:`(B_i, 3, H, W)` tensor per list item of ``pred`` and ``gt``; the
checks are the input contract's (:func:`nobg_metrics._inputs.prepare`).
"""

from __future__ import annotations

from torch import Tensor

from nobg_metrics._inputs import InputMaps, prepare
from nobg_metrics._seg_batch import SegBatch, segmentation_batch

InputImages = Tensor | list[Tensor] | tuple[Tensor, ...]
"""``(B, 3, H, W)`` / ``(3, H, W)`` uint8 RGB, or a list of them."""


def prepare_camouflage(pred: InputMaps, gt: InputMaps, image: InputImages, *, normalize: bool = False,
                       validate_args: bool = True) -> list[tuple[SegBatch, Tensor]]:
    """Validate CCm's inputs: the segmentation groups, each with its :math:`(B, 3, H, W)` uint8 images.

    Examples:
        >>> import torch
        >>> groups = prepare_camouflage(torch.rand(2, 8, 9), torch.rand(2, 8, 9) > 0.5,
        ...                             torch.zeros(2, 3, 8, 9, dtype=torch.uint8))
        >>> len(groups), tuple(groups[0][1].shape)
        (1, (2, 3, 8, 9))
    """
    out = []
    for group in prepare(pred, gt, image=image, validate_args=validate_args):
        assert group.image is not None  # every group has the images given
        out.append((segmentation_batch(group, normalize), group.image))
    return out
