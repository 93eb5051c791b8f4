r"""Mean average precision of instance masks: COCO mask AP and Boundary AP (Cheng et al., CVPR 2021), COCO and LVIS.

The reference is boundary-iou-api (commit 37d2558): ``coco_instance_api.COCOeval(iouType="segm" | "boundary")``
— pycocotools' ``COCOeval`` with the gt ignore flag ``ignore OR iscrowd`` and, for ``"boundary"``, the pair IoU
``min(mask IoU, boundary IoU)`` — and ``lvis_instance_api.LVISEval``. ``iou_type="segm"`` with COCO is
pycocotools' mask AP (which overwrites ``ignore`` with ``iscrowd``: the two agree unless the targets carry an
``ignore`` key). The three stages, each a module:

- :mod:`~nobg_metrics.functional.instance.iou`: per image, the IoU matrix of detections against gts;
- :mod:`~nobg_metrics.functional.instance.matching`: ``evaluateImg``'s greedy matching, all thresholds and
  area ranges at once, kept as per-detection outcomes (:mod:`~nobg_metrics.functional.instance.statistics`);
- :mod:`~nobg_metrics.functional.instance.accumulate` and :mod:`~nobg_metrics.functional.instance.summary`:
  ``accumulate`` and ``summarize``.

``_mean_average_precision_update`` returns a batch's statistics; ``_mean_average_precision_compute`` turns the
statistics of any number of batches (and DDP ranks) into the values; :func:`mean_average_precision` chains them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

__all__ = ["mean_average_precision"]

import warnings

from nobg_metrics._inputs import check_option
from nobg_metrics.functional.instance.accumulate import Accumulated, accumulate
from nobg_metrics.functional.instance.contract import BOX_FORMATS, InputTypeError
from nobg_metrics.functional.instance.extended import ImageIous, image_iou_matrices, ious_by_image_and_class
from nobg_metrics.functional.instance.inputs import ImageInstances, prepare_instances
from nobg_metrics.functional.instance.options import InstanceOptions, make_options
from nobg_metrics.functional.instance.statistics import constant, instance_update
from nobg_metrics.functional.instance.summary import summarize
from nobg_metrics.ops.host_reads import Engine

IOU_TYPES = ("bbox", "segm", "boundary")
BACKENDS = ("pycocotools", "faster_coco_eval")
DEFAULT_IOU_TYPE = "bbox"
"""The ``iou_type`` of :func:`mean_average_precision` and ``MeanAveragePrecision`` when none is given."""


def iou_types_of(iou_type: object) -> tuple[str, ...]:
    """``iou_type`` as a tuple of distinct IoU types: a name (``"bbox"``, ``"segm"``, ``"boundary"``) or a tuple /
    list of them (torchmetrics' ``_validate_iou_type_arg``, with ``"boundary"`` added).

    Examples:
        >>> iou_types_of("segm"), iou_types_of(["bbox", "segm"])
        (('segm',), ('bbox', 'segm'))
    """
    types = (iou_type,) if isinstance(iou_type, str) else iou_type
    if (not isinstance(types, (tuple, list)) or not types or any(t not in IOU_TYPES for t in types)
            or len(set(types)) != len(types)):
        raise ValueError(f"Expected argument `iou_type` to be one of {IOU_TYPES} or a tuple of, but got {iou_type}: "
                         f"`iou_type` must be one of {IOU_TYPES} or a tuple of distinct ones")
    return tuple(types)


def check_torchmetrics_options(box_format: object, class_metrics: object, extended_summary: object,
                               backend: object) -> None:
    """The checks torchmetrics' constructor makes, with its words (``ValueError``; a wrong type is also a
    ``TypeError``)."""
    check_option("box_format", box_format, BOX_FORMATS)
    check_option("backend", backend, BACKENDS)
    for name, value in (("class_metrics", class_metrics), ("extended_summary", extended_summary)):
        if not isinstance(value, bool):
            raise InputTypeError(f"Expected argument `{name}` to be a boolean: `{name}` must be a bool, got "
                                 f"{type(value).__name__}")


def moved_iou_type(box_format: str, iou_type: object) -> tuple[str, object]:
    """``(box_format, iou_type)`` from a call that passed ``iou_type`` first, as before torchmetrics' positional
    order was taken (``MeanAveragePrecision("segm")``): the value goes to ``iou_type`` with a ``FutureWarning``."""
    if (isinstance(box_format, str) and box_format in IOU_TYPES) or isinstance(box_format, (tuple, list)):
        warnings.warn(f"`iou_type` is now the second positional argument, after `box_format` (torchmetrics' order); "
                      f"pass iou_type={box_format!r} by keyword", FutureWarning, stacklevel=3)
        return "xyxy", box_format
    return box_format, iou_type


def warn_many_detections(images: Sequence[ImageInstances], limit: int) -> None:
    """torchmetrics' warning when an image has more detections than the largest max-detections threshold."""
    if any(image.det_scores.shape[0] > limit for image in images):
        warnings.warn(
            f"Encountered more than {limit} detections in a single image. This means that certain detections with the"
            " lowest scores will be ignored, that may have an undesirable impact on performance. Please consider "
            "adjusting the `max_detection_threshold` to suit your use case. To disable this warning, set attribute "
            "class `warn_on_many_detections=False`, after initializing the metric.", UserWarning, stacklevel=3)


def _mean_average_precision_update(preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]],
                                   options: InstanceOptions, first_index: Tensor, world_rank: int = 0,
                                   validate_args: bool = True, engine: Engine = "auto", box_format: str = "xyxy"
                                   ) -> dict[str, Tensor]:
    """Validate a batch and return its statistics ``{state name: tensor}``
    (:func:`~nobg_metrics.functional.instance.statistics.instance_update`)."""
    images = prepare_instances(preds, target, validate_args, (options.iou_type,), box_format)
    return instance_update(images, options, first_index, world_rank, engine)


def prefixed(values: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """torchmetrics' keys of one IoU type in a tuple's output: every key but ``classes`` prefixed."""
    return {(key if key == "classes" else prefix + key): value for key, value in values.items()}


def with_ious(values: dict[str, Any], kept: list[ImageIous], options: InstanceOptions) -> dict[str, Any]:
    """``values`` with torchmetrics' ``ious`` dict (:mod:`~nobg_metrics.functional.instance.extended`) placed
    before ``precision``, where it stands in torchmetrics' output."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key == "precision":
            out["ious"] = ious_by_image_and_class(kept, values["classes"], options.average == "micro")
        out[key] = value
    return out


def check_image_keys(image_keys: Tensor, with_ids: bool) -> None:
    """Images given an ``image_id`` must not repeat one (the reference would merge them into one image)."""
    if with_ids and image_keys.shape[0] > 1:
        ids = torch.sort(image_keys[:, 0]).values
        repeated = ids[1:][ids[1:] == ids[:-1]]
        if repeated.numel():
            raise ValueError(f"`target[i][\"image_id\"]` must be unique over the dataset; {repeated[:5].tolist()} "
                             f"came more than once")


def statistics_values(states: Mapping[str, Tensor], options: InstanceOptions,
                      images_with_ids: int = 0) -> dict[str, Tensor]:
    """The values of kept statistics, for callers that hold a metric's records rather than the metric: the
    command's report page asks for the extended summary (precision per threshold, recall point and category) of a
    metric built without it (:func:`_mean_average_precision_compute`, the class's compute step).

    Args:
        states: the records of one iou type, ``{state name: tensor}``, concatenated.
        options: their options (``dataclasses.replace(options, extended_summary=True)`` for the arrays).
        images_with_ids: how many images came with an ``image_id``.
    """
    return _mean_average_precision_compute(states, options, images_with_ids)


def _mean_average_precision_compute(states: Mapping[str, Tensor], options: InstanceOptions,
                                    images_with_ids: int = 0) -> dict[str, Tensor]:
    """The values from accumulated statistics (states concatenated over batches and ranks).

    Args:
        states: ``{state name: tensor}`` as :func:`_mean_average_precision_update` returns, concatenated.
        options: the options the statistics were made with.
        images_with_ids: how many images came with an ``image_id`` (all or none of them must).

    Returns:
        The output dictionary of :func:`~nobg_metrics.functional.instance.summary.summarize`.
    """
    image_keys = states["image_keys"]
    if 0 < images_with_ids < image_keys.shape[0]:
        raise ValueError(f"`target[i][\"image_id\"]` must be given for every image or for none; {images_with_ids} "
                         f"of {image_keys.shape[0]} images had one")
    check_image_keys(image_keys, images_with_ids > 0)
    labels, gt_labels = states["det_labels"], states["gt_labels"]
    device = labels.device
    classes = torch.unique(torch.cat([labels, gt_labels]), sorted=True)
    keys, scores = states["det_keys"], states["det_scores"]
    rec = constant(options.rec_thresholds, device)
    caps = options.max_detection_thresholds

    def run(outcomes: Tensor, merged: bool) -> Accumulated:
        if merged:
            category, gt_category, num = torch.zeros_like(labels), torch.zeros_like(gt_labels), 1
        else:
            category = torch.searchsorted(classes, labels)
            gt_category = torch.searchsorted(classes, gt_labels)
            num = classes.shape[0]
        cap_rank = keys[:, 2] if merged or options.lvis else keys[:, 3]  # LVIS: per image; COCO: per category
        return accumulate(scores, category, keys[:, :3], cap_rank, outcomes, gt_category, states["gt_counted"], num,
                          rec, caps, with_scores=options.extended_summary)

    macro = run(states["det_outcomes"], merged=False) if options.needs_macro else None
    main = run(states["det_outcomes_micro"], merged=True) if options.average == "micro" else macro
    assert main is not None  # the macro average's per-category matching is always run (needs_macro)
    return summarize(main, macro if options.class_metrics else None, classes, options)


def mean_average_precision(
    preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]], box_format: str = "xyxy",
    iou_type: str | Sequence[str] = DEFAULT_IOU_TYPE, iou_thresholds: Sequence[float] | None = None,
    rec_thresholds: Sequence[float] | None = None, max_detection_thresholds: Sequence[int] | None = None,
    class_metrics: bool = False, extended_summary: bool = False, average: str = "macro",
    backend: str = "pycocotools", warn_on_many_detections: bool = True, *, dilation_ratio: float = 0.02,
    protocol: str = "coco", category_frequencies: Mapping[int, str] | None = None, validate_args: bool = True,
    engine: Engine = "auto",
) -> dict[str, Any]:
    r"""Box, mask or Boundary AP of one set of images, as :class:`~nobg_metrics.MeanAveragePrecision` computes it
    (torchmetrics' ``mean_average_precision`` signature, then ours as keywords).

    Args:
        preds: one dict per image: ``boxes`` :math:`(N, 4)` (``"bbox"``) and / or ``masks`` :math:`(N, H, W)` (bool or
            0/1), ``scores`` :math:`(N,)`, ``labels`` :math:`(N,)`, optional ``area`` :math:`(N,)`.
        target: one dict per image: ``boxes`` :math:`(M, 4)` and / or ``masks`` :math:`(M, H, W)`, ``labels``
            :math:`(M,)`, optional ``iscrowd``, ``area``, ``ignore`` :math:`(M,)`, ``image_id``; LVIS:
            ``neg_category_ids``, ``not_exhaustive_category_ids``.
        box_format: how ``boxes`` are read: ``"xyxy"``, ``"xywh"`` or ``"cxcywh"``.
        iou_type: ``"bbox"`` (box IoU), ``"segm"`` (mask IoU), ``"boundary"`` (``min(mask IoU, boundary IoU)``) or a
            tuple of them (keys prefixed ``bbox_`` / ``segm_`` / ``boundary_``, ``classes`` shared).
        iou_thresholds, rec_thresholds: lists of floats in [0, 1] (default ``np.linspace`` values).
        max_detection_thresholds: list of ints (default ``[1, 10, 100]``; LVIS ``[300]``).
        class_metrics: also return per-class values (a bool).
        extended_summary: also return the ``precision``, ``recall`` and ``scores`` arrays (a bool).
        average: ``"macro"`` or ``"micro"`` (COCO).
        backend: ``"pycocotools"`` or ``"faster_coco_eval"``: accepted, never changing a value.
        warn_on_many_detections: warn (torchmetrics' words) when an image has more detections than the largest
            max-detections threshold.
        dilation_ratio: boundary width as a fraction of the image diagonal (0.02 COCO / LVIS, 0.005 Cityscapes).
        protocol: ``"coco"`` or ``"lvis"``.
        category_frequencies: LVIS ``{category id: "r" | "c" | "f"}`` for ``map_rare`` / ``common`` / ``frequent``.
        validate_args: run the input checks that read values (a device sync).
        engine: ``"auto"`` (data-sized on CPU, sync-free elsewhere), ``"data_sized"`` or ``"fixed"`` (no host read:
            what a GPU runs by default); the values are the same.

    Returns:
        ``{"map", "map_50", ..., "classes"}`` (:mod:`~nobg_metrics.functional.instance.summary`), float64.

    Examples:
        >>> gt = torch.zeros(1, 8, 10, dtype=torch.bool); gt[0, 2:6, 2:8] = True
        >>> det = torch.zeros(2, 8, 10, dtype=torch.bool); det[0, 2:6, 2:7] = True; det[1, 0:3, 0:3] = True
        >>> preds = [{"masks": det, "scores": torch.tensor([0.9, 0.8]), "labels": torch.tensor([1, 1])}]
        >>> target = [{"masks": gt, "labels": torch.tensor([1])}]
        >>> result = mean_average_precision(preds, target, iou_type="segm")
        >>> [round(float(result[key]), 4) for key in ("map", "map_50", "map_75", "mar_1")]  # mask IoU 20/24
        [0.7, 1.0, 1.0, 0.7]
    """
    box_format, iou_type = moved_iou_type(box_format, iou_type)  # type: ignore[assignment]
    check_torchmetrics_options(box_format, class_metrics, extended_summary, backend)
    check_option("engine", engine, Engine)
    types = iou_types_of(iou_type)
    every = [make_options(t, dilation_ratio, protocol, iou_thresholds, rec_thresholds, max_detection_thresholds,
                          class_metrics, average, extended_summary, category_frequencies) for t in types]
    images = prepare_instances(preds, target, validate_args, types, box_format)
    if warn_on_many_detections:
        warn_many_detections(images, every[0].max_detection_thresholds[-1])
    first = torch.zeros((), dtype=torch.int64)  # moved to the images' device with the statistics
    with_ids = sum(1 for gt in target if "image_id" in gt)
    out: dict[str, Any] = {}
    for options in every:
        states = instance_update(images, options, first, 0, engine)
        values: dict[str, Any] = _mean_average_precision_compute(states, options, with_ids)
        if options.extended_summary:
            values = with_ious(values, image_iou_matrices(images, options, 0, "bbox" not in types), options)
        out.update(prefixed(values, f"{options.iou_type}_") if len(types) > 1 else values)
    out["classes"] = out.pop("classes")  # last, as torchmetrics gives it
    return {key: value.squeeze() if isinstance(value, Tensor) and value.numel() == 1 else value  # as the class
            for key, value in out.items()}
