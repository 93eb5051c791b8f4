r"""Box IoU and box areas of instance AP with ``iou_type="bbox"``, as pycocotools' ``COCOeval(iouType="bbox")``.

pycocotools (``computeIoU`` → ``maskUtils.iou`` → ``bbIou`` in ``maskApi.c``) works in float64 on the
``[x, y, w, h]`` boxes it is given::

    iw = min(x_d + w_d, x_g + w_g) - max(x_d, x_g);   0 if iw <= 0
    ih = min(y_d + h_d, y_g + h_g) - max(y_d, y_g);   0 if ih <= 0
    o[d, g] = iw * ih / (w_d * h_d + w_g * h_g - iw * ih)      (crowd g: iw * ih / (w_d * h_d))

Boxes arrive here as float64 ``xyxy``; they are first turned into the ``xywh`` torchmetrics hands to pycocotools
(``w = x2 - x1``, ``h = y2 - y1``) and every sum, product and quotient above is then done in the same order, so
that each IoU equals the reference's bit for bit. A detection's area is ``w * h`` (``loadRes``); a gt's area is
its ``area`` where one above 0 is given, else ``w * h`` (torchmetrics fills COCO's ``area`` field that way).

All images at once: the boxes are laid out padded, :math:`(B, D, 4)` and :math:`(B, G, 4)`, and the IoU is one
broadcast :math:`(B, D, G)` computation — no loop over images or detections, no host read.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def xywh(boxes: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(x, y, w, h)`` of float64 ``xyxy`` boxes :math:`(..., 4)`, each :math:`(...)` (``w = x2 - x1``)."""
    x1, y1, x2, y2 = boxes.unbind(-1)
    return x1, y1, x2 - x1, y2 - y1


def box_areas(boxes: Tensor) -> Tensor:
    """``w * h`` of float64 ``xyxy`` boxes: :math:`(..., 4)` -> :math:`(...)` float64.

    Examples:
        >>> box_areas(torch.tensor([[1.0, 2.0, 4.0, 6.0], [0.0, 0.0, 0.0, 3.0]], dtype=torch.float64))
        tensor([12.,  0.], dtype=torch.float64)
    """
    _, _, width, height = xywh(boxes)
    return width * height


def gt_box_areas(boxes: Tensor, given: Tensor | None) -> Tensor:
    """The area that places a gt in an area range: ``given`` where it is above 0, else the box's ``w * h``."""
    areas = box_areas(boxes)
    return areas if given is None else torch.where(given > 0, given, areas)


def box_ious(det: Tensor, gt: Tensor, crowd: Tensor) -> Tensor:
    """pycocotools' box IoU of every detection against every gt of the same image, for a padded batch.

    Args:
        det: :math:`(B, D, 4)` float64 ``xyxy`` detection boxes.
        gt: :math:`(B, G, 4)` float64 ``xyxy`` gt boxes.
        crowd: :math:`(B, G)` bool (a crowd gt divides by the detection's area).

    Returns:
        :math:`(B, D, G)` float64 (module notes).

    Examples:
        >>> det = torch.tensor([[[0.0, 0.0, 4.0, 4.0]]], dtype=torch.float64)
        >>> gt = torch.tensor([[[2.0, 0.0, 6.0, 4.0], [2.0, 2.0, 10.0, 10.0]]], dtype=torch.float64)
        >>> box_ious(det, gt, torch.tensor([[False, True]]))  # 8 / 24 and, crowd, 4 / 16
        tensor([[[0.3333, 0.2500]]], dtype=torch.float64)
    """
    dx, dy, dw, dh = (value[:, :, None] for value in xywh(det))
    gx, gy, gw, gh = (value[:, None, :] for value in xywh(gt))
    iw = torch.minimum(dw + dx, gw + gx) - torch.maximum(dx, gx)  # bbIou: fmin(D[2]+D[0], G[2]+G[0]) - fmax(...)
    ih = torch.minimum(dh + dy, gh + gy) - torch.maximum(dy, gy)
    apart = (iw <= 0) | (ih <= 0)  # the reference's `continue`: IoU 0
    inter = iw.clamp_(min=0) * ih.clamp_(min=0)  # 0 where apart; masks by products and clamps: torch.where is slow
    crowd = crowd[:, None, :]
    gt_area = torch.where(crowd, 0.0, gw * gh)  # (B, 1, G): a crowd gt's union is the detection's area
    union = (dw * dh + gt_area) - inter * ~crowd  # da + ga - i, or da (+ 0 - 0, exactly da)
    return inter / torch.maximum(union, apart)  # apart: 0 / max(u, 1) = 0


def padded(values: Tensor, image: Tensor, local: Tensor, count: int, width: int, fill: float | bool = 0) -> Tensor:
    """Rows of ``values`` :math:`(N, ...)` placed at ``[image, local]`` of a :math:`(count, width, ...)` tensor."""
    out = torch.full((count, width, *values.shape[1:]), fill, dtype=values.dtype, device=values.device)
    out[image, local] = values
    return out


class BoxPairs:
    """The box IoU of a padded batch, :math:`(B, D, G)` as :func:`box_ious` gives it, computed only for the pairs
    the matching reads (:class:`~nobg_metrics.functional.instance.matching.PairIous`): a group's detections
    against its own gts, a few per detection, instead of every detection against every gt of its image.

    Args:
        det: :math:`(B, D, 4)` float64 ``xyxy``. gt: :math:`(B, G, 4)`. crowd: :math:`(B, G)` bool.
        ious: the IoU function (:func:`box_ious`).

    Examples:
        >>> det = torch.tensor([[[0.0, 0.0, 4.0, 4.0], [9.0, 9.0, 10.0, 10.0]]], dtype=torch.float64)
        >>> gt = torch.tensor([[[2.0, 0.0, 6.0, 4.0]]], dtype=torch.float64)
        >>> pairs = BoxPairs(det, gt, torch.tensor([[False]]))
        >>> pairs.pairs(torch.tensor([0]), torch.tensor([[0, 1]]), torch.tensor([[0]])).flatten().tolist()
        [0.3333333333333333, 0.0]
    """

    def __init__(self, det: Tensor, gt: Tensor, crowd: Tensor,
                 ious: Callable[[Tensor, Tensor, Tensor], Tensor] = box_ious) -> None:
        self.det, self.gt, self.crowd, self.ious = det, gt, crowd, ious
        self.shape: tuple[int, ...] = (det.shape[0], det.shape[1], gt.shape[1])
        self.dtype: torch.dtype = det.dtype
        self.device: torch.device = det.device

    def pairs(self, image: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
        """:math:`(S, K, J)` IoU of the detections ``rows`` :math:`(S, K)` and gts ``cols`` :math:`(S, J)` of the
        images ``image`` :math:`(S,)`."""
        image = image[:, None]
        return self.ious(self.det[image, rows], self.gt[image, cols], self.crowd[image, cols])

    def full(self) -> Tensor:
        """The whole :math:`(B, D, G)` IoU."""
        return self.ious(self.det, self.gt, self.crowd)
