"""The evaluation of ``nobg-metrics instances`` (the flags: :mod:`nobg_metrics.cli.instances.command`).

Steps: read the annotation and results files and decode each image's segmentations, in increasing id order
(:class:`~nobg_metrics.cli.instances.reading.Reading`, or a helper process doing it ahead of this one, or sharing the
images with it: :mod:`.reader_process`, :mod:`.shared_scoring`); pass the images' masks to
:class:`nobg_metrics.MeanAveragePrecision`, a few images per ``update`` (:data:`BATCH_IMAGES`, :data:`BATCH_PIXELS`;
the metric orders score ties by ``image_id``, so batching changes nothing); print the reference's summary
(:mod:`.summary`); write ``--out/results.json`` atomically. Images with neither ground truths nor detections are
skipped (the reference's ``evaluateImg`` gives ``None`` for them).

The masks are handed over **transposed**, ``(N, W, H)``: the column-major layout COCO's RLEs and pycocotools'
polygon fill produce, without a transposing copy (which costs more than the decoding). Mask and Boundary AP do not
change when every mask of an image is transposed — pixel counts and intersections do not, the boundary's square
``(2d + 1)^2`` erosion with a zero outside commutes with transposition, and ``d`` depends on the diagonal only —
and the tests check that both layouts give identical values.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from nobg_metrics._version import __version__
from nobg_metrics.allocator import tune_cpu_allocator
from nobg_metrics.cli.core.dist import pick_device
from nobg_metrics.cli.core.guard import guarded
from nobg_metrics.cli.core.progress import Progress
from nobg_metrics.cli.core.signals import checkpoint
from nobg_metrics.cli.core.statuses import EXIT_OK
from nobg_metrics.cli.core.writing import (
    OutputLock,
    json_writer,
    write_atomically,
)
from nobg_metrics.cli.eval.config import ConfigError
from nobg_metrics.cli.instances.reading import (
    ImageData,
    ImageFeed,
    ImageSource,
    Reading,
    read_image,
    segmentation_error,
)
from nobg_metrics.cli.instances.summary import coco_lines, lvis_lines
from nobg_metrics.cli.outputs import structured_report
from nobg_metrics.io.coco.annotations import GroundTruth, GtImage
from nobg_metrics.io.coco.masks import forms_bands, forms_masks
from nobg_metrics.io.coco.results import LVIS_MAX_DETS, Detection, Results
from nobg_metrics.io.errors import InputError, SegmentationError
from nobg_metrics.metrics.instance.mean_average_precision import MeanAveragePrecision
from nobg_metrics.ops.row_bands import RowBands, held_pixels

BATCH_IMAGES = 16
"""At most this many images per ``update`` (the metric's fixed cost per call is shared)."""
BATCH_PIXELS = 1 << 27
"""An ``update`` is made once the batch's masks hold this many pixels (128 MB of bool masks)."""


def _ids(values: frozenset[int], device: torch.device) -> Tensor:
    return torch.tensor(sorted(values), dtype=torch.int64, device=device)


def image_inputs(gt: GroundTruth, image: GtImage, detections: list[Detection], results: Results,
                 device: torch.device, lvis: bool = False,
                 transposed: bool = False, bands: bool = False) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """One image's ``(pred, target)`` dicts for ``MeanAveragePrecision.update``: :func:`image_tensors` of
    :func:`~nobg_metrics.cli.instances.reading.read_image`.

    Raises:
        InputError: a segmentation that cannot be read, named by file, position and image id.
    """
    data = read_image(gt, image, detections, results)
    return image_tensors(gt, image, data, results, device, lvis, transposed, bands)


def image_tensors(gt: GroundTruth, image: GtImage, data: ImageData, results: Results, device: torch.device,
                  lvis: bool = False, transposed: bool = False, bands: bool = False
                  ) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """One image's ``(pred, target)`` dicts from its :class:`~nobg_metrics.cli.instances.reading.ImageData`
    (``lvis``: with LVIS's lists; ``transposed``: masks ``(N, W, H)``, the image transposed, see the module notes;
    ``bands`` with ``transposed`` on CPU: the masks as :class:`~nobg_metrics.ops.row_bands.RowBands`, each drawn
    into its own columns only, which the metric counts as it counts dense masks).

    Raises:
        InputError: a segmentation that cannot be read, named by file, position and image id.
    """
    anns = [ann for _, ann in image.annotations]
    try:  # one pass for the image's ground truths and detections (on CPU: each mask into its own band)
        masks: Any = (forms_bands(data.forms) if bands and transposed and device.type == "cpu"
                      else forms_masks(data.forms, transposed=transposed, device=device))
    except SegmentationError as error:
        raise segmentation_error(gt, image, data.positions, results.path, error) from None
    gt_masks, det_masks = masks[: len(anns)], masks[len(anns):]
    scores, labels = torch.from_numpy(data.scores), torch.from_numpy(data.labels)
    area = None
    if data.box_areas is not None:
        area = torch.from_numpy(data.box_areas)
    elif results.drop_empty:  # LVIS: get_ann_ids keeps area > 0 only (the mask's pixel count here)
        keep = det_masks.nonempty() if isinstance(det_masks, RowBands) else det_masks.flatten(1).any(1)
        det_masks, scores, labels = det_masks[keep], scores[keep], labels[keep]
    pred: dict[str, Tensor] = {"masks": det_masks.to(device), "scores": scores.to(device),
                               "labels": labels.to(device)}
    if area is not None:
        pred["area"] = area.to(device)
    target: dict[str, Any] = {
        "masks": gt_masks.to(device),
        "labels": torch.tensor([ann["category_id"] for ann in anns], dtype=torch.int64, device=device),
        "iscrowd": torch.tensor([bool(ann.get("iscrowd", 0)) for ann in anns], dtype=torch.bool, device=device),
        "ignore": torch.tensor([bool(ann.get("ignore", 0)) for ann in anns], dtype=torch.bool, device=device),
        "area": torch.tensor([float(ann["area"]) for ann in anns], dtype=torch.float64, device=device),
        "image_id": torch.tensor(image.id, dtype=torch.int64, device=device),
    }
    if lvis:  # lvis: img_nel = d.get("not_exhaustive_category_ids", []); img_nl only when is_lvis
        target["not_exhaustive_category_ids"] = _ids(image.not_exhaustive_category_ids, device)
        if gt.federated:
            target["neg_category_ids"] = _ids(image.neg_category_ids, device)
    return pred, target


def batches(reading: ImageFeed, args: argparse.Namespace, device: torch.device
            ) -> Iterator[tuple[list[GtImage], list[dict[str, Tensor]], list[dict[str, Any]]]]:
    """``(images, preds, targets)`` for ``update``: the images of ``reading`` decoded one by one and handed over a
    few at a time (at most :data:`BATCH_IMAGES` images or :data:`BATCH_PIXELS` pixels held)."""
    images: list[GtImage] = []
    preds: list[dict[str, Tensor]] = []
    targets: list[dict[str, Any]] = []
    pixels = 0
    assert reading.results is not None
    for image, data in reading.images():
        checkpoint()
        pred, target = image_tensors(reading.gt, image, data, reading.results, device, args.lvis,
                                     transposed=True, bands=True)
        images.append(image)
        preds.append(pred)
        targets.append(target)
        pixels += held_pixels(pred["masks"]) + held_pixels(target["masks"])
        if pixels >= BATCH_PIXELS or len(preds) == BATCH_IMAGES:
            yield images, preds, targets
            images, preds, targets, pixels = [], [], [], 0
    if preds:
        yield images, preds, targets


def build_metric(args: argparse.Namespace, gt: GroundTruth, device: torch.device, errors: bool = True) -> Any:
    """The :class:`nobg_metrics.MeanAveragePrecision` of the flags (per-class values on; no warning about images
    with more detections than the cap: the reference evaluators apply ``maxDets`` silently, and a results file of
    100 or 300 detections an image is the normal case; ``--errors tide`` keeps TIDE's state unless ``errors`` is
    False)."""
    options: dict[str, Any] = {"iou_type": args.iou_type, "dilation_ratio": args.dilation_ratio,
                               "protocol": "lvis" if args.lvis else "coco", "class_metrics": True,
                               "warn_on_many_detections": False,
                               "errors": getattr(args, "errors", None) if errors else None}
    if args.lvis:
        options["max_detection_thresholds"] = [args.max_dets or LVIS_MAX_DETS]
        if gt.frequencies is not None:
            options["category_frequencies"] = gt.frequencies
    return MeanAveragePrecision(**options).to(device)


def _number(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.item() if value.numel() == 1 and value.ndim == 0 else value.tolist()
    return value


def results_document(args: argparse.Namespace, gt: GroundTruth, results: Results, values: dict[str, Any],
                     lines: list[str], scored: int, notes: list[str]) -> dict[str, Any]:
    """``results.json``: the flags, the counts, every value of the metric, per class with names, the summary."""
    plain = {key: _number(value) for key, value in values.items()}
    per_class_keys = [key for key in plain if key.endswith("_per_class")]
    classes = plain.get("classes", [])
    classes = classes if isinstance(classes, list) else [classes]
    names = {c["id"]: c.get("name") for c in gt.categories}
    per_class = []
    for index, category in enumerate(classes):
        row: dict[str, Any] = {"category_id": category, "name": names.get(category)}
        for key in per_class_keys:
            column = plain[key] if isinstance(plain[key], list) else [plain[key]]
            row[key[: -len("_per_class")]] = column[index] if index < len(column) else None
        per_class.append(row)
    return {
        "command": "instances", "version": __version__,
        "gt_json_file": str(args.gt_json_file), "dt_json_file": str(args.dt_json_file),
        "iou_type": args.iou_type, "dilation_ratio": args.dilation_ratio, "protocol": "lvis" if args.lvis else "coco",
        "max_dets": [args.max_dets or LVIS_MAX_DETS] if args.lvis else [1, 10, 100],
        "detection_area": "bbox w*h" if results.area_from_box else "mask pixels",
        "images": len(gt.images), "images_scored": scored,
        "detections": {"in_file": results.count, "evaluated": results.kept},
        "results": {key: value for key, value in plain.items() if key not in per_class_keys and key != "classes"},
        "per_class": per_class, "summary": lines, "notes": notes, "warnings": results.warnings,
    }


def run(args: argparse.Namespace, reading: ImageSource | None = None) -> int:
    """Evaluate; errors are raised (see :func:`run_guarded`). ``reading``: the files as a reading process reads
    them (:mod:`~nobg_metrics.cli.instances.reader_process`); default: read here."""
    try:
        device = pick_device(args.device)
    except RuntimeError as error:
        raise ConfigError(str(error)) from None
    tune_cpu_allocator()  # freed tensor memory is reused, not faulted in again per batch
    with OutputLock(args.out) if args.out is not None else contextlib.nullcontext():
        source: ImageSource = reading.open() if reading is not None else Reading(args)
        gt, results = source.gt, source.results
        assert results is not None
        notes = gt.notes + results.notes
        if not args.quiet:
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
            for warning in results.warnings:
                print(f"warning: {warning}", file=sys.stderr)
        metric = build_metric(args, gt, device)
        from nobg_metrics.cli.instances.extras import Extras  # --errors, --bootstrap, --compare

        extra = Extras(args, gt)
        scored = len(source.todo)
        progress = Progress(f"instances {args.iou_type}", scored, enabled=not args.quiet)
        done = 0
        for _, preds, targets in batches(source, args, device):
            metric.update(preds, targets)
            extra.update(preds, targets)
            progress.update(len(preds))
            done += len(preds)
        helper_metric = getattr(source, "helper_metric", None)
        shared = helper_metric() if helper_metric is not None else None
        if shared is not None:  # a shared run: the helper's share (its records follow this process's)
            metric.merge_state(shared)
            progress.update(scored - done)
        progress.close()
        source.close()
        values = metric.compute()
        plain = {key: _number(value) for key, value in values.items()}
        lines = lvis_lines(plain, args.max_dets or LVIS_MAX_DETS) if args.lvis else coco_lines(plain)
        print("\n".join(lines))
        extras = extra.writers(metric, plain, compared_scorer(args, gt, device))
        if args.out is not None:
            document = results_document(args, gt, results, values, lines, scored, notes)
            try:
                write_atomically(args.out, {"results.json": json_writer(document), **extras})
            except OSError as error:
                raise InputError(f"could not write {args.out}/results.json: {error}") from None
            if not args.quiet:
                print(f"wrote results.json to {args.out}", file=sys.stderr)
            if structured_report.wanted(args):  # after the other files: the page reads them
                from nobg_metrics.cli.outputs.structured_report_data import instances_report

                instances_report(args, metric, gt, source.full_results())
    return EXIT_OK


def run_guarded(args: argparse.Namespace, runner: Callable[[argparse.Namespace], int] | None = None,
                reading: ImageSource | None = None) -> int:
    """:func:`run` (or ``runner``: the ``--cityscapes`` evaluation) with every outcome turned into an exit status and
    a one-line message (:mod:`~nobg_metrics.cli.core.guard`); ``reading``: the run's reading process, stopped when
    the run ends, however it ends."""
    if reading is None:
        return guarded(lambda: (runner or run)(args))
    try:
        return guarded(lambda: run(args, reading))
    finally:
        reading.close()


def compared_scorer(args: argparse.Namespace, gt: GroundTruth, device: torch.device
                    ) -> Callable[[Path], tuple[Any, dict[str, Any], list[int], list[int]]]:
    """``--compare``'s scoring, as the run's (the same images, batches and metric): ``(metric, values, scored
    image ids, their gt counts)``."""
    def score(path: Path) -> tuple[Any, dict[str, Any], list[int], list[int]]:
        metric = build_metric(args, gt, device, errors=False)
        ids: list[int] = []
        counts: list[int] = []
        for images, preds, targets in batches(Reading(args, path, gt), args, device):
            ids += [image.id for image in images]
            counts += [int(target["labels"].shape[0]) for target in targets]
            metric.update(preds, targets)
        values = {key: value.item() if isinstance(value, Tensor) and value.numel() == 1 else value
                  for key, value in metric.compute().items()}
        return metric, values, ids, counts
    return score
