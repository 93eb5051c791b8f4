"""Mask AP and Boundary AP as a ``Metric``: the state of :func:`nobg_metrics.functional.mean_average_precision`.

States — sufficient statistics, never pixels (:mod:`nobg_metrics.functional.instance_statistics`):

- list states (``dist_reduce_fx="cat"``: they grow with the detections, as instance AP's statistics must):
  ``det_scores``, ``det_labels``, ``det_keys``, ``det_outcomes`` (``det_outcomes_micro`` for
  ``average="micro"``), ``gt_labels``, ``gt_counted``, ``image_keys``;
- ``image_count`` (images seen on this rank: the arrival index of the next one) and ``images_with_ids``, int64
  sums; and the options' fingerprint.

Ties between equal scores break as the reference breaks them — by image, then by the rank in the image. The
image order is ``image_id`` where the targets give one, else (arrival index on the rank, DDP rank): with
``DistributedSampler(shuffle=False)``, which deals dataset item ``i`` to rank ``i % world`` as its
``i // world``-th item, that is the dataset order, so 1 and N ranks agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from nobg_metrics.functional.instance_options import AREA_RANGES, make_options
from nobg_metrics.functional.mean_average_precision import (
    _mean_average_precision_compute,
    _mean_average_precision_update,
)
from nobg_metrics.metrics.base import NobgMetric


class MeanAveragePrecision(NobgMetric):
    r"""Mean average precision of instance masks: COCO mask AP (``iou_type="segm"``) or Boundary AP (``"boundary"``).

    A drop-in for ``torchmetrics.detection.MeanAveragePrecision(iou_type="segm")``, exact against boundary-iou-api
    (``COCOeval`` / ``LVISEval``, ``iouType="segm" | "boundary"``) and pycocotools; masks never leave the device
    and are not kept. See docs/instance_segmentation.md.

    As input to ``update``:

    - ``preds``: a list of dicts, one per image: ``masks`` :math:`(N, H, W)` bool, ``scores`` :math:`(N,)` float,
      ``labels`` :math:`(N,)` int, optional ``area`` :math:`(N,)` (the area that picks the area range).
    - ``target``: a list of dicts: ``masks`` :math:`(M, H, W)` bool, ``labels`` :math:`(M,)` int, optional
      ``iscrowd``, ``area``, ``ignore`` :math:`(M,)`, ``image_id`` (int), and for LVIS ``neg_category_ids`` and
      ``not_exhaustive_category_ids`` (1-D int tensors).

    As output of ``compute``: a dict of float64 tensors — ``map``, ``map_50``, ``map_75``, ``map_small``,
    ``map_medium``, ``map_large``, ``mar_<k>`` for each max-detections ``k``, ``mar_small``, ``mar_medium``,
    ``mar_large`` (LVIS adds ``map_rare``, ``map_common``, ``map_frequent``), ``map_per_class``,
    ``mar_<k>_per_class`` (-1 unless ``class_metrics``), ``classes`` (int32); ``precision``, ``recall``,
    ``scores`` with ``extended_summary``. -1 marks a value with no ground truth to measure it on.

    Args:
        iou_type: ``"segm"`` or ``"boundary"``.
        dilation_ratio: boundary width as a fraction of the image diagonal (0.02 COCO / LVIS; 0.005 Cityscapes).
        protocol: ``"coco"`` or ``"lvis"`` (300 detections per image, federated filters, APr / APc / APf).
        iou_thresholds: IoU thresholds (default ``np.linspace(.5, .95, 10)``, float64).
        rec_thresholds: recall thresholds (default ``np.linspace(0, 1, 101)``).
        max_detection_thresholds: any list of caps (default ``[1, 10, 100]``, LVIS ``[300]``); ``mar_<k>`` follows.
        class_metrics: also compute ``map_per_class`` and ``mar_<k>_per_class``.
        average: ``"macro"`` (mean over categories) or ``"micro"`` (all categories pooled; COCO only).
        extended_summary: also return the ``precision`` :math:`(T, R, K, A, M)`, ``recall`` and ``scores`` arrays.
        category_frequencies: LVIS ``{category id: "r" | "c" | "f"}``.
        box_format, backend: accepted for torchmetrics compatibility and unused (masks only; one implementation).
        validate_args: run the input checks that read values (a device sync).
        kwargs: :class:`torchmetrics.Metric` options.

    Example:
        >>> import torch
        >>> gt = torch.zeros(1, 8, 10, dtype=torch.bool); gt[0, 2:6, 2:8] = True
        >>> det = torch.zeros(1, 8, 10, dtype=torch.bool); det[0, 2:6, 2:7] = True
        >>> metric = MeanAveragePrecision(iou_type="boundary")
        >>> metric.update([{"masks": det, "scores": torch.tensor([0.9]), "labels": torch.tensor([3])}],
        ...               [{"masks": gt, "labels": torch.tensor([3])}])
        >>> result = metric.compute()
        >>> round(float(result["map"]), 4), round(float(result["map_50"]), 4)  # min(mask 20/24, boundary 12/18)
        (0.4, 1.0)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0
    image_count: Tensor
    images_with_ids: Tensor
    det_scores: list[Tensor]
    det_labels: list[Tensor]
    det_keys: list[Tensor]
    det_outcomes: list[Tensor]
    det_outcomes_micro: list[Tensor]
    gt_labels: list[Tensor]
    gt_counted: list[Tensor]
    image_keys: list[Tensor]

    def __init__(
        self, iou_type: str = "segm", dilation_ratio: float = 0.02, protocol: str = "coco",
        iou_thresholds: Sequence[float] | None = None, rec_thresholds: Sequence[float] | None = None,
        max_detection_thresholds: Sequence[int] | None = None, class_metrics: bool = False, average: str = "macro",
        extended_summary: bool = False, category_frequencies: Mapping[int, str] | None = None, *,
        box_format: str = "xyxy", backend: str = "pycocotools", validate_args: bool = True, **kwargs: Any,
    ) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        if box_format not in ("xyxy", "xywh", "cxcywh"):
            raise ValueError(f"`box_format` must be one of ('xyxy', 'xywh', 'cxcywh'), got {box_format!r}")
        if backend not in ("pycocotools", "faster_coco_eval"):
            raise ValueError(f"`backend` must be one of ('pycocotools', 'faster_coco_eval'), got {backend!r}")
        self.options = make_options(iou_type, dilation_ratio, protocol, iou_thresholds, rec_thresholds,
                                    max_detection_thresholds, class_metrics, average, extended_summary,
                                    category_frequencies)
        options = self.options
        self.iou_type, self.protocol, self.average, self.class_metrics = iou_type, protocol, average, class_metrics
        self.iou_thresholds, self.rec_thresholds = list(options.iou_thresholds), list(options.rec_thresholds)
        self.max_detection_thresholds = list(options.max_detection_thresholds)
        self._add_fingerprint({"options": repr(options)})
        self._add_count("image_count")
        self._add_count("images_with_ids")
        areas, levels = len(AREA_RANGES), len(options.iou_thresholds)
        layouts: dict[str, tuple[tuple[int, ...], torch.dtype]] = {
            "det_scores": ((0,), torch.float64), "det_labels": ((0,), torch.int64), "det_keys": ((0, 4), torch.int64),
            "gt_labels": ((0,), torch.int64), "gt_counted": ((0, areas), torch.bool),
            "image_keys": ((0, 2), torch.int64),
        }
        if options.needs_macro:
            layouts["det_outcomes"] = ((0, areas, levels), torch.int8)
        if average == "micro":
            layouts["det_outcomes_micro"] = ((0, areas, levels), torch.int8)
        self._layouts = layouts
        for name in layouts:  # statistics that grow with the detections: list states, concatenated over ranks
            self.add_state(name, default=[], dist_reduce_fx="cat", persistent=True)

    def _world_rank(self) -> int:
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(self.process_group) if self.process_group is not None else dist.get_rank()
        return 0

    def update(self, preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]]) -> None:
        """Add a batch: ``preds`` and ``target`` lists of per-image dicts (class docstring)."""
        stats = _mean_average_precision_update(preds, target, self.options, self.image_count, self._world_rank(),
                                               self.validate_args)
        stats = {name: value.to(self.device, non_blocking=True) for name, value in stats.items()}
        with_ids = sum(1 for gt in target if "image_id" in gt)
        # one final step, new objects only (a snapshot holds references)
        self.det_scores = [*self.det_scores, stats["det_scores"]]
        self.det_labels = [*self.det_labels, stats["det_labels"]]
        self.det_keys = [*self.det_keys, stats["det_keys"]]
        if "det_outcomes" in self._layouts:
            self.det_outcomes = [*self.det_outcomes, stats["det_outcomes"]]
        if "det_outcomes_micro" in self._layouts:
            self.det_outcomes_micro = [*self.det_outcomes_micro, stats["det_outcomes_micro"]]
        self.gt_labels = [*self.gt_labels, stats["gt_labels"]]
        self.gt_counted = [*self.gt_counted, stats["gt_counted"]]
        self.image_keys = [*self.image_keys, stats["image_keys"]]
        self.image_count = self.image_count + len(target)
        self.images_with_ids = self.images_with_ids + with_ids

    def _state(self, name: str) -> Tensor:
        """A list state as one tensor (an empty one of the right layout when nothing was added)."""
        value = getattr(self, name)
        if isinstance(value, Tensor):
            return value
        if value:
            return torch.cat(value)
        shape, dtype = self._layouts[name]
        return torch.zeros(shape, dtype=dtype, device=self.device)

    def compute(self) -> dict[str, Tensor]:
        """The output dictionary (class docstring)."""
        states = {name: self._state(name) for name in self._layouts}
        return _mean_average_precision_compute(states, self.options, int(self.images_with_ids))

    def _reduce_states(self, incoming_state: dict[str, Any]) -> None:
        """``forward`` and ``merge_state``: the incoming images come first, so this metric's images (numbered from
        0 on their own) move after them in the arrival order before the lists are joined."""
        offset = incoming_state["image_count"]
        if int(self.images_with_ids) == 0:
            for name, column in (("det_keys", 0), ("image_keys", 0)):
                shifted = []
                for value in getattr(self, name):
                    value = value.clone()
                    value[:, column] += offset.to(value.device)
                    shifted.append(value)
                setattr(self, name, shifted)
        super()._reduce_states(incoming_state)

    def _sync_dist(self, dist_sync_fn: Callable | None = None, process_group: Any = None) -> None:
        """A rank without data gathers empty tensors of each state's layout (torchmetrics would send a 1-D float32
        one, which a rank with statistics cannot be gathered with)."""
        for name, (shape, dtype) in self._layouts.items():
            if isinstance(getattr(self, name), list) and not getattr(self, name):
                setattr(self, name, [torch.zeros(shape, dtype=dtype, device=self.device)])
        kwargs = {"dist_sync_fn": dist_sync_fn} if dist_sync_fn is not None else {}
        super()._sync_dist(process_group=process_group, **kwargs)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list[str], unexpected_keys: list[str], error_msgs: list[str]) -> None:
        """Accept list states only as lists of tensors of this metric's layouts (dtype and trailing shape)."""
        for name, (shape, dtype) in self._layouts.items():
            value = state_dict.get(prefix + name)
            if value is None:
                if strict:
                    raise ValueError(f"the state_dict has no `{prefix + name}` for this MeanAveragePrecision")
                continue
            items = value if isinstance(value, list) else [value]
            for item in items:
                if not isinstance(item, Tensor) or item.dtype != dtype or tuple(item.shape[1:]) != shape[1:]:
                    got = f"{item.dtype} {tuple(item.shape)}" if isinstance(item, Tensor) else type(item).__name__
                    raise ValueError(f"`{prefix + name}` must hold {dtype} tensors of shape (n, {shape[1:]}); "
                                     f"got {got}")
            state_dict[prefix + name] = [item.to(self.device) for item in items]
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
