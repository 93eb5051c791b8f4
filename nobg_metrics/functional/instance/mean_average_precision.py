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

import torch
from torch import Tensor

__all__ = ["mean_average_precision"]

from nobg_metrics._inputs import check_option
from nobg_metrics.functional.instance.accumulate import Accumulated, accumulate
from nobg_metrics.functional.instance.inputs import prepare_instances
from nobg_metrics.functional.instance.options import InstanceOptions, make_options
from nobg_metrics.functional.instance.statistics import constant, instance_update
from nobg_metrics.functional.instance.summary import summarize
from nobg_metrics.ops.host_reads import Engine


def _mean_average_precision_update(preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]],
                                   options: InstanceOptions, first_index: Tensor, world_rank: int = 0,
                                   validate_args: bool = True, engine: Engine = "auto") -> dict[str, Tensor]:
    """Validate a batch and return its statistics ``{state name: tensor}``
    (:func:`~nobg_metrics.functional.instance.statistics.instance_update`)."""
    images = prepare_instances(preds, target, validate_args)
    return instance_update(images, options, first_index, world_rank, engine)


def _check_image_keys(image_keys: Tensor, with_ids: bool) -> None:
    """Images given an ``image_id`` must not repeat one (the reference would merge them into one image)."""
    if with_ids and image_keys.shape[0] > 1:
        ids = torch.sort(image_keys[:, 0]).values
        repeated = ids[1:][ids[1:] == ids[:-1]]
        if repeated.numel():
            raise ValueError(f"`target[i][\"image_id\"]` must be unique over the dataset; {repeated[:5].tolist()} "
                             f"came more than once")


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
    _check_image_keys(image_keys, images_with_ids > 0)
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
    preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]], iou_type: str = "segm",
    dilation_ratio: float = 0.02, protocol: str = "coco", iou_thresholds: Sequence[float] | None = None,
    rec_thresholds: Sequence[float] | None = None, max_detection_thresholds: Sequence[int] | None = None,
    class_metrics: bool = False, average: str = "macro", extended_summary: bool = False,
    category_frequencies: Mapping[int, str] | None = None, validate_args: bool = True, *, engine: Engine = "auto",
) -> dict[str, Tensor]:
    r"""Mask AP or Boundary AP of one set of images, as :class:`~nobg_metrics.MeanAveragePrecision` computes it.

    Args:
        preds: one dict per image: ``masks`` :math:`(N, H, W)` bool, ``scores`` :math:`(N,)`, ``labels``
            :math:`(N,)`, optional ``area`` :math:`(N,)`.
        target: one dict per image: ``masks`` :math:`(M, H, W)` bool, ``labels`` :math:`(M,)`, optional
            ``iscrowd``, ``area``, ``ignore`` :math:`(M,)`, ``image_id``; LVIS: ``neg_category_ids``,
            ``not_exhaustive_category_ids``.
        iou_type: ``"segm"`` (mask IoU) or ``"boundary"`` (``min(mask IoU, boundary IoU)``).
        dilation_ratio: boundary width as a fraction of the image diagonal (0.02 COCO / LVIS, 0.005 Cityscapes).
        protocol: ``"coco"`` or ``"lvis"``.
        iou_thresholds, rec_thresholds: lists of floats in [0, 1] (default ``np.linspace`` values).
        max_detection_thresholds: list of ints (default ``[1, 10, 100]``; LVIS ``[300]``).
        class_metrics: also return per-class values. average: ``"macro"`` or ``"micro"`` (COCO).
        extended_summary: also return the ``precision``, ``recall`` and ``scores`` arrays.
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
        >>> result = mean_average_precision(preds, target)
        >>> [round(float(result[key]), 4) for key in ("map", "map_50", "map_75", "mar_1")]  # mask IoU 20/24
        [0.7, 1.0, 1.0, 0.7]
    """
    options = make_options(iou_type, dilation_ratio, protocol, iou_thresholds, rec_thresholds,
                           max_detection_thresholds, class_metrics, average, extended_summary, category_frequencies)
    check_option("engine", engine, Engine)
    first = torch.zeros((), dtype=torch.int64)  # moved to the images' device with the statistics
    states = _mean_average_precision_update(preds, target, options, first, 0, validate_args, engine)
    with_ids = sum(1 for gt in target if "image_id" in gt)
    return _mean_average_precision_compute(states, options, with_ids)
