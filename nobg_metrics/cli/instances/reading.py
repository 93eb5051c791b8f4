"""The torch-free half of ``nobg-metrics instances``: the files read and each image's segmentations decoded, in the
order the reference scores them (the scoring half is :mod:`nobg_metrics.cli.instances.run`).

:class:`Reading` reads the annotation file and the results file (:mod:`nobg_metrics.io.coco.annotations`,
:mod:`nobg_metrics.io.coco.results`) and yields, for each image with ground truths or detections in increasing id
order, its :class:`ImageData`: the detections' scores, categories, box areas and positions in the file, and every
segmentation (ground truths first) sorted by form, compressed strings decoded to runs
(:func:`~nobg_metrics.io.coco.forms.split_forms`). Images with neither are skipped (the reference's
``evaluateImg`` gives ``None`` for them). The same :class:`Reading` runs in the scoring process or, ahead of it, in
a reading process that never loads torch (:mod:`nobg_metrics.cli.instances.reader_process`).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from nobg_metrics.io.coco.annotations import GroundTruth, GtImage, load_ground_truth
from nobg_metrics.io.coco.forms import Forms, split_forms
from nobg_metrics.io.coco.results import LVIS_MAX_DETS, Detection, Results, load_results
from nobg_metrics.io.errors import InputError, SegmentationError


@dataclass
class ImageData:
    """One image's detections as columns and its segmentations by form (ground truths first).

    Attributes:
        image_id: the image.
        positions: :math:`(N,)` int64, each detection's position in the results file (for error messages).
        scores: :math:`(N,)` float64. labels: :math:`(N,)` int64 category ids.
        box_areas: :math:`(N,)` float64 ``bbox`` ``w * h`` where boxes decide the areas, else ``None``.
        forms: the :math:`M + N` segmentations, the image's :math:`M` ground truths first.
    """

    image_id: int
    positions: np.ndarray
    scores: np.ndarray
    labels: np.ndarray
    box_areas: np.ndarray | None
    forms: Forms


def segmentation_error(gt: GroundTruth, image: GtImage, positions: np.ndarray | list[int], results_path: Path,
                       error: SegmentationError) -> InputError:
    """The :class:`InputError` of a segmentation that cannot be read, named by file, position and image id
    (``error.index``: its position among the image's ground truths, then its detections)."""
    count = len(image.annotations)
    if error.index < count:
        position, ann = image.annotations[error.index]
        return InputError(f"{gt.path}: annotations[{position}] (id {ann['id']}, image {image.id}): {error.reason}")
    return InputError(f"{results_path}: detection {int(positions[error.index - count])} (image {image.id}): "
                      f"{error.reason}")


def read_image(gt: GroundTruth, image: GtImage, detections: list[Detection], results: Results) -> ImageData:
    """One image's :class:`ImageData`.

    Raises:
        InputError: a segmentation of a form the reference cannot read, or of another size than its image.
    """
    positions = np.fromiter((d.position for d in detections), dtype=np.int64, count=len(detections))
    segmentations = [ann["segmentation"] for _, ann in image.annotations] + [d.segmentation for d in detections]
    try:
        forms = split_forms(segmentations, image.height, image.width)
    except SegmentationError as error:
        raise segmentation_error(gt, image, positions, results.path, error) from None
    return ImageData(
        image.id, positions,
        np.fromiter((d.score for d in detections), dtype=np.float64, count=len(detections)),
        np.fromiter((d.category_id for d in detections), dtype=np.int64, count=len(detections)),
        np.fromiter((d.box_area for d in detections), dtype=np.float64, count=len(detections))
        if results.area_from_box else None,
        forms)


def images_to_score(gt: GroundTruth, results: Results) -> list[GtImage]:
    """The images with ground truths or detections, in id order (the reference's ``evaluateImg`` gives ``None`` for
    the others)."""
    return [image for image in gt.images if image.annotations or results.per_image.get(image.id)]


class ImageFeed(Protocol):
    """Images with their data, and the files they come from: what the batching reads."""

    @property
    def gt(self) -> GroundTruth:
        """The annotation file."""

    @property
    def results(self) -> Results | None:
        """The results file's index (``None`` until a helper has sent it)."""

    def images(self) -> Iterator[tuple[GtImage, ImageData]]:
        """The images this process scores, with their data."""


class ImageSource(ImageFeed, Protocol):
    """What a run reads its files through: a :class:`Reading`, or a helper process's side
    (:class:`~nobg_metrics.cli.instances.reader_process.ForkedReading`,
    :class:`~nobg_metrics.cli.instances.shared_scoring.ForkedScoring`)."""

    @property
    def todo(self) -> list[GtImage]:
        """Every image the run scores, in id order."""

    def open(self) -> ImageSource:
        """Itself, the files' index ready (raises what reading the files raised)."""

    def full_results(self) -> Results:
        """The results file with every detection."""

    def close(self) -> None:
        """Stop and reap a helper process, if any."""


class Reading:
    """The files of a run read (``gt``, ``results``, the images to score, ``todo``) and each image's
    :class:`ImageData` on demand (:meth:`images`).

    ``dt_path`` defaults to ``args.dt_json_file`` (``--compare`` reads a second results file against the same
    annotation file: pass ``gt`` then).
    """

    def __init__(self, args: argparse.Namespace, dt_path: Path | None = None, gt: GroundTruth | None = None) -> None:
        self.gt = gt if gt is not None else load_ground_truth(args.gt_json_file, lvis=args.lvis)
        self.results = load_results(dt_path or args.dt_json_file, self.gt, lvis=args.lvis,
                                    max_dets=args.max_dets or LVIS_MAX_DETS, strict=getattr(args, "strict", False))
        self.todo = images_to_score(self.gt, self.results)

    def open(self) -> Reading:
        """The files are read already: ``self``."""
        return self

    def images(self) -> Iterator[tuple[GtImage, ImageData]]:
        """Each image of :attr:`todo` and its data, decoded one at a time."""
        for image in self.todo:
            yield image, read_image(self.gt, image, self.results.per_image.get(image.id, []), self.results)

    def full_results(self) -> Results:
        """The results file with every detection (the report page draws some of their masks)."""
        return self.results

    def close(self) -> None:
        """Nothing to stop (a reading process stops here)."""
