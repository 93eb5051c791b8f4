"""Mask AP and Boundary AP as a ``Metric``: the state of :func:`nobg_metrics.functional.mean_average_precision`.

States — sufficient statistics, never pixels (:mod:`nobg_metrics.functional.instance.statistics`):

- list states (``dist_reduce_fx="cat"``: they grow with the detections, as instance AP's statistics must):
  ``det_scores``, ``det_labels``, ``det_keys``, ``det_outcomes`` (``det_outcomes_micro`` for
  ``average="micro"``), ``gt_labels``, ``gt_counted``, ``image_keys``;
- ``image_count`` (images seen on this rank: the arrival index of the next one) and ``images_with_ids``, int64
  sums; and the options' fingerprint;
- with ``errors="tide"``, TIDE's matching statistics, taken from the same IoU matrices as AP's (list states,
  :mod:`nobg_metrics.functional.instance.tide_state`).

Ties between equal scores break as the reference breaks them — by image, then by the rank in the image. The
image order is ``image_id`` where the targets give one, else (arrival index on the rank, DDP rank): with
``DistributedSampler(shuffle=False)``, which deals dataset item ``i`` to rank ``i % world`` as its
``i // world``-th item, that is the dataset order, so 1 and N ranks agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

import torch
import torch.distributed as dist
from torch import Tensor

from nobg_metrics._inputs import check_option
from nobg_metrics.functional.instance.extended import ImageIous, image_iou_matrices
from nobg_metrics.functional.instance.inputs import prepare_instances
from nobg_metrics.functional.instance.mean_average_precision import (
    DEFAULT_IOU_TYPE,
    _mean_average_precision_compute,
    check_image_keys,
    check_torchmetrics_options,
    iou_types_of,
    moved_iou_type,
    prefixed,
    warn_many_detections,
    with_ious,
)
from nobg_metrics.functional.instance.options import AREA_RANGES, InstanceOptions, make_options
from nobg_metrics.functional.instance.statistics import instance_update
from nobg_metrics.functional.instance.tide_state import TIDE_RECORDS, tide_layouts, tide_records, tide_state_values
from nobg_metrics.io.coco import torchmetrics_format
from nobg_metrics.metrics.base import NobgMetric, Statistics
from nobg_metrics.ops.host_reads import Engine

__all__ = ["MeanAveragePrecision"]

BoxFormat = Literal["xyxy", "xywh", "cxcywh"]
"""How ``boxes`` are read: corners, corner + size, or centre + size (torchmetrics' ``box_format``)."""
Backend = Literal["pycocotools", "faster_coco_eval"]
"""torchmetrics' ``backend`` choices: accepted, never changing a value."""
Errors = Literal[None, "tide"]
"""``errors``: no error analysis, or TIDE's (:meth:`MeanAveragePrecision.tide_errors`)."""
_RECORDS = ("det_scores", "det_labels", "det_keys", "det_outcomes", "det_outcomes_micro", "gt_labels", "gt_counted",
            "image_keys")


class MeanAveragePrecision(NobgMetric):
    r"""Mean average precision of boxes (``iou_type="bbox"``), masks (``"segm"``) or boundaries (``"boundary"``).

    A drop-in for ``torchmetrics.detection.MeanAveragePrecision`` (its positional arguments, inputs, errors and
    output keys), exact against pycocotools' ``COCOeval``, boundary-iou-api (``iouType="boundary"``) and lvis'
    ``LVISEval``; masks never leave the device and are not kept. See docs/instance_segmentation.md.

    As input to ``forward`` and ``update`` the metric accepts the following input:

    - ``preds`` (:class:`list` of :class:`dict`): one dict per image, with the keys:

        - ``boxes`` (:class:`~torch.Tensor`): :math:`(N, 4)` in ``box_format`` (``"bbox"``).
        - ``masks`` (:class:`~torch.Tensor`): :math:`(N, H, W)` bool or 0/1 of any dtype (``"segm"``, ``"boundary"``).
        - ``scores`` (:class:`~torch.Tensor`): :math:`(N,)` float, the detection scores.
        - ``labels`` (:class:`~torch.Tensor`): :math:`(N,)` integer category ids.
        - ``area`` (:class:`~torch.Tensor`, optional): :math:`(N,)`, the area that picks the area range.

    - ``target`` (:class:`list` of :class:`dict`): one dict per image, with the keys:

        - ``boxes`` :math:`(M, 4)` / ``masks`` :math:`(M, H, W)` (:class:`~torch.Tensor`): as in ``preds``.
        - ``labels`` (:class:`~torch.Tensor`): :math:`(M,)` integer category ids.
        - ``iscrowd``, ``area``, ``ignore`` (:class:`~torch.Tensor`, optional): :math:`(M,)` each.
        - ``image_id`` (:class:`int`, optional): the image's id (ties between equal scores break by it).
        - ``neg_category_ids``, ``not_exhaustive_category_ids`` (:class:`~torch.Tensor`, optional): 1-D integer tensors,
          LVIS's federated annotation.

    An image without instances may give ``Tensor([])``, :math:`(0,)`, :math:`(0, 4)` or :math:`(0, H, W)`.

    As output of ``forward`` and ``compute`` the metric returns the following output:

    - ``map_dict`` (:class:`dict`): float64 tensors by name (``classes``: int32); -1 marks a value with no ground truth
      to measure it on. For a tuple of IoU types every key but ``classes`` is prefixed (``bbox_map``, ``segm_map``):

        - ``map``: scalar, the mean AP over the IoU thresholds (default 0.50:0.05:0.95), categories and objects.
        - ``map_50``, ``map_75``: scalar, AP at IoU 0.50 / 0.75 (-1 when ``iou_thresholds`` lacks it).
        - ``map_small``, ``map_medium``, ``map_large``: scalar, AP by area (< 32², 32² to 96², > 96² pixels).
        - ``mar_<k>``: scalar, the mean AR with at most ``k`` detections per image, one per ``max_detection_thresholds``
          entry ``k``.
        - ``mar_small``, ``mar_medium``, ``mar_large``: scalar, AR by area (at the largest ``k``).
        - ``map_rare``, ``map_common``, ``map_frequent``: scalar, LVIS only.
        - ``ious``, ``precision`` :math:`(T, R, K, A, M)`, ``recall`` :math:`(T, K, A, M)`, ``scores``
          :math:`(T, R, K, A, M)`: with ``extended_summary`` only (T IoU and R recall thresholds, K categories,
          A = 4 area ranges, M max-detection caps); ``ious``: ``{(image index, category id): (D, G) float32 or []}``
          as torchmetrics returns pycocotools' ``COCOeval.ious`` (kept on this process: not synced under DDP).
        - ``map_per_class``, ``mar_<k>_per_class`` (the largest ``k``): :math:`(K,)` in the order of ``classes`` with
          ``class_metrics``, else a scalar -1.
        - ``classes``: :math:`(K,)` int32, the category ids seen.

    One-element tensors come back as scalars, as torchmetrics' ``compute`` returns them.

    Args:
        box_format: how ``boxes`` are read: ``"xyxy"``, ``"xywh"`` or ``"cxcywh"``.
        iou_type: ``"bbox"``, ``"segm"``, ``"boundary"`` or a tuple / list of them (one pass each).
        iou_thresholds: IoU thresholds (default ``np.linspace(.5, .95, 10)``, float64).
        rec_thresholds: recall thresholds (default ``np.linspace(0, 1, 101)``).
        max_detection_thresholds: three caps (default ``[1, 10, 100]``; LVIS one, ``[300]``); ``mar_<k>`` follows.
        class_metrics: (a bool) also compute ``map_per_class`` and ``mar_<k>_per_class``.
        extended_summary: (a bool) also return ``ious``, ``precision``, ``recall`` and ``scores``.
        average: ``"macro"`` (mean over categories) or ``"micro"`` (all categories pooled; COCO only).
        backend: ``"pycocotools"`` or ``"faster_coco_eval"``, accepted for torchmetrics' signature: it never changes
            a value (there is one implementation, exact against pycocotools).
        dilation_ratio: boundary width as a fraction of the image diagonal (0.02 COCO / LVIS; 0.005 Cityscapes).
        protocol: ``"coco"`` or ``"lvis"`` (300 detections per image, federated filters, APr / APc / APf).
        category_frequencies: LVIS ``{category id: "r" | "c" | "f"}``.
        warn_on_many_detections: warn (torchmetrics' words) when an image has more detections than the largest
            cap; also an attribute, as in torchmetrics.
        record_inputs: keep the inputs for :meth:`tm_to_coco` (default: only for ``iou_type="bbox"``; masks are
            kept only when asked for).
        validate_args: run the input checks that read values (a device sync).
        engine: ``"auto"`` (data-sized on CPU, sync-free elsewhere), ``"data_sized"`` or ``"fixed"`` (no host read:
            what a GPU runs by default); the values are the same.
        errors: ``"tide"``: also keep TIDE's error statistics (tidecv 1.0.1's defaults), read by
            :meth:`tide_errors`; they reuse the IoU matrices AP's matching computes (all pairs, categories crossed).
        kwargs: :class:`torchmetrics.Metric` options.

    Examples:
        >>> import torch
        >>> gt = torch.zeros(1, 8, 10, dtype=torch.bool); gt[0, 2:6, 2:8] = True
        >>> det = torch.zeros(1, 8, 10, dtype=torch.bool); det[0, 2:6, 2:7] = True
        >>> metric = MeanAveragePrecision(iou_type="boundary")
        >>> metric.update([{"masks": det, "scores": torch.tensor([0.9]), "labels": torch.tensor([3])}],
        ...               [{"masks": gt, "labels": torch.tensor([3])}])
        >>> result = metric.compute()
        >>> round(float(result["map"]), 4), round(float(result["map_50"]), 4)  # min(mask 20/24, boundary 12/18)
        (0.4, 1.0)
        >>> boxes = MeanAveragePrecision(iou_type=("bbox", "segm"))
        >>> boxes.update([{"boxes": torch.tensor([[2.0, 2.0, 7.0, 6.0]]), "masks": det, "scores": torch.tensor([0.9]),
        ...                "labels": torch.tensor([3])}],
        ...              [{"boxes": torch.tensor([[2.0, 2.0, 8.0, 6.0]]), "masks": gt, "labels": torch.tensor([3])}])
        >>> values = boxes.compute()
        >>> round(float(values["bbox_map"]), 4), round(float(values["segm_map"]), 4)  # box IoU 20/24 as the masks'
        (0.7, 0.7)
    """

    higher_is_better = True
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self, box_format: BoxFormat = "xyxy", iou_type: str | Sequence[str] = DEFAULT_IOU_TYPE,
        iou_thresholds: Sequence[float] | None = None, rec_thresholds: Sequence[float] | None = None,
        max_detection_thresholds: Sequence[int] | None = None, class_metrics: bool = False,
        extended_summary: bool = False, average: str = "macro", backend: Backend = "pycocotools", *,
        dilation_ratio: float = 0.02, protocol: str = "coco", category_frequencies: Mapping[int, str] | None = None,
        warn_on_many_detections: bool = True, record_inputs: bool | None = None, validate_args: bool = True,
        engine: Engine = "auto", errors: Errors = None, **kwargs: Any,
    ) -> None:
        super().__init__(validate_args=validate_args, **kwargs)
        box_format, iou_type = moved_iou_type(box_format, iou_type)  # type: ignore[assignment]
        check_torchmetrics_options(box_format, class_metrics, extended_summary, backend)
        check_option("engine", engine, Engine)
        check_option("errors", errors, Errors)
        self.errors = errors
        self.box_format, self.backend, self.engine = box_format, backend, engine
        self.warn_on_many_detections = warn_on_many_detections
        self._recorded: list[torchmetrics_format.RecordedImage] = []
        self._pending: list[torchmetrics_format.RecordedImage] = []
        self._ious: dict[str, list[ImageIous]] = {}  # extended_summary: each type's kept IoU matrices
        self._pending_ious: dict[str, list[ImageIous]] = {}
        self._iou_types = iou_types_of(iou_type)
        self._options: dict[str, InstanceOptions] = {
            t: make_options(t, dilation_ratio, protocol, iou_thresholds, rec_thresholds, max_detection_thresholds,
                            class_metrics, average, extended_summary, category_frequencies) for t in self._iou_types}
        single = len(self._iou_types) == 1
        self._prefixes = {t: "" if single else f"{t}_" for t in self._iou_types}
        options = self.options = self._options[self._iou_types[0]]
        self.iou_type = self._iou_types[0] if single else self._iou_types
        self.protocol, self.average, self.class_metrics = protocol, average, class_metrics
        self.extended_summary = extended_summary
        self.iou_thresholds, self.rec_thresholds = list(options.iou_thresholds), list(options.rec_thresholds)
        self.max_detection_thresholds = list(options.max_detection_thresholds)
        self.record_inputs = record_inputs if record_inputs is not None else self._iou_types == ("bbox",)
        self._add_fingerprint({"options": repr(options) if single else repr(tuple(self._options.values())),
                               **({"errors": errors} if errors else {})})
        self._add_count("image_count")
        self._add_count("images_with_ids")
        areas, levels = len(AREA_RANGES), len(options.iou_thresholds)
        layouts: dict[str, tuple[torch.dtype, tuple[int, ...]]] = {
            "det_scores": (torch.float64, ()), "det_labels": (torch.int64, ()), "det_keys": (torch.int64, (4,)),
            "gt_labels": (torch.int64, ()), "gt_counted": (torch.bool, (areas,)), "image_keys": (torch.int64, (2,)),
        }
        if options.needs_macro:
            layouts["det_outcomes"] = (torch.int8, (areas, levels))
        if average == "micro":
            layouts["det_outcomes_micro"] = (torch.int8, (areas, levels))
        if errors is not None:
            layouts.update(tide_layouts())
        for prefix in self._prefixes.values():  # one state set per IoU type (unprefixed for a single type)
            for name, (dtype, shape) in layouts.items():  # statistics that grow with the detections: list states
                self._add_list(prefix + name, dtype, shape)

    def _count(self, name: str) -> Tensor:
        """A count state (``image_count``, ``images_with_ids``): a 0-d int64 tensor (no class-level annotation, which
        TorchScript would try to read)."""
        return cast(Tensor, getattr(self, name))

    @torch.jit.unused
    def forward(self, *inputs: Any, **named: Any) -> Any:
        """``update`` with the batch and return the batch's own value (unused by TorchScript, as torchmetrics'
        ``forward``: ``torch.jit.script(metric)`` works)."""
        return super().forward(*inputs, **named)

    def _world_rank(self) -> int:
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(self.process_group) if self.process_group is not None else dist.get_rank()
        return 0

    def update(  # type: ignore[override]  # per-image dicts of instances, not maps
            self, preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]]) -> None:
        """Add a batch: ``preds`` and ``target`` lists of per-image dicts (class docstring)."""
        self._accumulate(self._batch_statistics(preds, target))

    def _statistics(self, preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]]
                    ) -> Statistics:
        """The batch's per-detection and per-gt records (each list state's entry, per IoU type) and its image counts;
        images are numbered on from this rank's ``image_count``."""
        images = prepare_instances(preds, target, self.validate_args, self._iou_types, self.box_format)
        if self.warn_on_many_detections:
            warn_many_detections(images, self.max_detection_thresholds[-1])
        masks = any(t != "bbox" for t in self._iou_types)
        self._pending = [torchmetrics_format.RecordedImage(
            image.det_labels, image.det_scores, image.det_boxes, image.dense_det_masks() if masks else None,
            image.gt_labels, image.gt_boxes, image.dense_gt_masks() if masks else None, image.gt_crowd, image.gt_area)
            for image in images] if self.record_inputs else []
        if self.extended_summary:  # the image numbers are read on the host: extended_summary only
            self._pending_ious = {t: image_iou_matrices(images, self._options[t], int(self._count("image_count")),
                                                        "bbox" not in self._iou_types) for t in self._iou_types}
        records: dict[str, Tensor] = {}
        for iou_type, prefix in self._prefixes.items():
            stats = instance_update(images, self._options[iou_type], self._count("image_count"), self._world_rank(),
                                    self.engine, with_ious=self.errors is not None)
            if self.errors is not None:  # TIDE from the same IoU matrices: no second pass over the masks
                stats.update(tide_records(images, stats.pop("ious"), stats["image_keys"]))
            records.update({prefix + name: value.to(self.device, non_blocking=True) for name, value in stats.items()
                            if prefix + name in self._list_layouts})
        with_ids = sum(1 for gt in target if "image_id" in gt)
        device = self._count("image_count").device  # counts filled on the device: no host-to-device copy
        counts = {"image_count": torch.full((), len(target), dtype=torch.int64, device=device),
                  "images_with_ids": torch.full((), with_ids, dtype=torch.int64, device=device)}
        return {**records, **counts}

    def _accumulate(self, statistics: Statistics) -> None:
        """The states, then (with ``record_inputs``) the batch's inputs for :meth:`tm_to_coco`."""
        super()._accumulate(statistics)
        self._recorded += self._pending
        for iou_type, kept in self._pending_ious.items():
            self._ious[iou_type] = self._ious.get(iou_type, []) + kept
        self._pending, self._pending_ious = [], {}

    def reset(self) -> None:
        """Clear the states and the recorded inputs."""
        super().reset()
        self._recorded, self._ious = [], {}

    def tm_to_coco(self, name: str = "tm_map_input") -> None:
        """Write the inputs seen since the last ``reset`` as ``{name}_preds.json`` and ``{name}_target.json`` in
        COCO format (:func:`nobg_metrics.io.coco.torchmetrics_format.tm_to_coco`). Needs ``record_inputs=True``
        (the default for ``iou_type="bbox"``; masks are kept only when asked for)."""
        if not self.record_inputs:
            raise RuntimeError("`tm_to_coco` writes the inputs the metric recorded; construct it with "
                               "record_inputs=True (the default only for iou_type='bbox': masks kept only when asked)")
        torchmetrics_format.tm_to_coco(self._recorded, name, self._iou_types)

    @staticmethod
    def coco_to_tm(coco_preds: str, coco_target: str, iou_type: str | Sequence[str] = ("bbox",),
                   backend: Backend = "pycocotools") -> tuple[list[dict[str, Tensor]], list[dict[str, Tensor]]]:
        """torchmetrics' ``(preds, target)`` lists from a COCO results file and a COCO ground-truth file, boxes in
        ``xywh`` (:func:`nobg_metrics.io.coco.torchmetrics_format.coco_to_tm`; ``backend`` changes nothing)."""
        check_option("backend", backend, Backend)
        return torchmetrics_format.coco_to_tm(coco_preds, coco_target, iou_types_of(iou_type))

    def _record_tensor(self, states: Mapping[str, Any], name: str) -> Tensor:
        """A list state as one tensor (an empty one of the right layout when nothing was added)."""
        value = states[name]
        if isinstance(value, Tensor):
            return value
        if value:
            return torch.cat(value)
        dtype, shape = self._list_layouts[name]
        return torch.zeros((0, *shape), dtype=dtype, device=self.device)

    def _value(self, states: Mapping[str, Any]) -> dict[str, Any]:
        """The output dictionary (class docstring): per IoU type, keys prefixed for a tuple of types."""
        out: dict[str, Any] = {}
        for iou_type, prefix in self._prefixes.items():
            records = {name: self._record_tensor(states, prefix + name) for name in _RECORDS
                       if prefix + name in self._list_layouts}
            values: dict[str, Any] = _mean_average_precision_compute(records, self._options[iou_type],
                                                                     int(states["images_with_ids"]))
            if self.extended_summary:
                values = with_ious(values, self._ious.get(iou_type, []), self._options[iou_type])
            out.update(prefixed(values, prefix))
        out["classes"] = out.pop("classes")  # last, as torchmetrics gives it
        return out

    def tide_errors(self) -> dict[str, Any]:
        """TIDE's values of the images seen (synced under DDP, as ``compute``): the dict
        :func:`nobg_metrics.functional.tide_errors` returns with ``thresholds="coco"``, or ``{iou type: that dict}``
        for a tuple of IoU types. Needs ``errors="tide"``.

        Examples:
            >>> box, one, two = torch.tensor([[0.0, 0.0, 10.0, 10.0]]), torch.tensor([1]), torch.tensor([2])
            >>> metric = MeanAveragePrecision(errors="tide")
            >>> metric.update([{"boxes": box, "scores": torch.tensor([0.9]), "labels": one},
            ...                {"boxes": box + 4.0, "scores": torch.tensor([0.8]), "labels": two}],
            ...               [{"boxes": box, "labels": one}, {"boxes": box, "labels": two}])
            >>> out = metric.tide_errors()  # class 2's box is poorly localised: a Loc error worth 50 AP points
            >>> round(float(out["ap"]), 2), round(float(out["main"]["Loc"]), 2), int(out["counts"]["Loc"])
            (50.0, 50.0, 1)
        """
        if self.errors is None:
            raise RuntimeError("`tide_errors` reads the TIDE statistics; construct the metric with errors='tide'")
        with self.sync_context(dist_sync_fn=self.dist_sync_fn, should_sync=self._to_sync,
                               should_unsync=self._should_unsync):
            values = {}
            for iou_type, prefix in self._prefixes.items():  # image ids must not repeat, as for AP
                check_image_keys(self._record_tensor(self.metric_state, prefix + "image_keys"),
                                  int(self._count("images_with_ids")) > 0)
                values[iou_type] = tide_state_values({name: self._record_tensor(self.metric_state, prefix + name)
                                                      for name in TIDE_RECORDS})
        return values[self._iou_types[0]] if len(values) == 1 else values

    def _incoming_statistics(self, incoming: dict[str, Any]) -> dict[str, Any]:
        """``merge_state``: without image ids, the incoming images' arrival numbers move on from this metric's
        ``image_count`` (ties keep breaking by arrival, as if one metric had seen both)."""
        if int(self._count("images_with_ids")) == 0:
            offset = self._count("image_count")
            keys = ("det_keys", "image_keys") + (("tide_det_keys", "tide_gt_keys") if self.errors else ())
            for name in (prefix + key for prefix in self._prefixes.values() for key in keys):
                items = incoming[name] if isinstance(incoming[name], list) else [incoming[name]]
                incoming[name] = [torch.cat([item[:, :1] + offset.to(item.device), item[:, 1:]], dim=1)
                                  for item in items]
        return incoming
