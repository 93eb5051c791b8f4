"""Inputs of the camouflage context measure CCm: ``pred`` and ``gt`` as every segmentation metric takes them
(:func:`nobg_metrics._inputs.prepare_segmentation`) and the RGB ``image`` each pair was predicted from.

``image``: a :math:`(B, 3, H, W)` (or :math:`(3, H, W)`) uint8 tensor with channels R, G, B beside tensor ``pred`` /
``gt`` (one group), or a list with one :math:`(3, H, W)` / :math:`(B_i, 3, H, W)` tensor per list item of ``pred`` and
``gt`` (one group per item: CCm's search runs image by image anyway).
"""

from __future__ import annotations

import torch
from torch import Tensor

from nobg_metrics._inputs import InputMaps, SegBatch, _as_list, prepare_segmentation

InputImages = Tensor | list[Tensor] | tuple[Tensor, ...]
"""``(B, 3, H, W)`` / ``(3, H, W)`` uint8 RGB, or a list of them."""


def _image_bchw(name: str, image: object, batch: SegBatch) -> Tensor:
    """Check one image tensor against its group and return it as a contiguous :math:`(B, 3, H, W)` uint8."""
    if not isinstance(image, Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor, got {type(image).__name__}")
    if image.dtype != torch.uint8:
        raise TypeError(f"`{name}` must be uint8 RGB on 0..255; got dtype {image.dtype}")
    tensor = image[None] if image.ndim == 3 else image
    if tensor.ndim != 4 or tensor.shape[1] != 3:
        raise ValueError(f"`{name}` must have shape (B, 3, H, W) or (3, H, W) (channels R, G, B); got shape "
                         f"{tuple(image.shape)}")
    expected = (batch.shape[0], 3, *batch.shape[1:])
    if tuple(tensor.shape) != expected:
        raise ValueError(f"`{name}` must match its pred / gt: shape {expected}; got {tuple(tensor.shape)}")
    if tensor.device != batch.gt_raw.device:
        raise ValueError(f"`{name}` must be on the device of its pred / gt ({batch.gt_raw.device}); got {tensor.device}")
    return tensor.contiguous()


def prepare_camouflage(pred: InputMaps, gt: InputMaps, image: InputImages, *, normalize: bool = False,
                       validate_args: bool = True) -> list[tuple[SegBatch, Tensor]]:
    """Validate CCm's inputs: the segmentation groups, each with its :math:`(B, 3, H, W)` uint8 images.

    Example:
        >>> import torch
        >>> groups = prepare_camouflage(torch.rand(2, 8, 9), torch.rand(2, 8, 9) > 0.5,
        ...                             torch.zeros(2, 3, 8, 9, dtype=torch.uint8))
        >>> len(groups), tuple(groups[0][1].shape)
        (1, (2, 3, 8, 9))
    """
    images = _as_list("image", image)
    if images is None:
        if not isinstance(pred, Tensor) or not isinstance(gt, Tensor):
            raise TypeError("`image` is one tensor: `pred` and `gt` must be tensors too (or pass three lists)")
        (batch,) = prepare_segmentation(pred, gt, normalize=normalize, validate_args=validate_args)
        return [(batch, _image_bchw("image", image, batch))]
    preds, gts = _as_list("pred", pred), _as_list("gt", gt)
    if preds is None or gts is None or not len(preds) == len(gts) == len(images):
        raise ValueError("`image` is a list: `pred` and `gt` must be lists of the same length "
                         f"(got {len(images)} images)")
    groups = []
    for index, (one_pred, one_gt, one_image) in enumerate(zip(preds, gts, images)):
        (batch,) = prepare_segmentation(one_pred, one_gt, normalize=normalize, validate_args=validate_args)
        groups.append((batch, _image_bchw(f"image[{index}]", one_image, batch)))
    return groups
