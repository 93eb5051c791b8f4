"""A port of davis2017-evaluation's measures and semi-supervised protocol (davisvideochallenge/davis2017-evaluation,
commit ac7c43f: ``davis2017/metrics.py``, ``utils.db_statistics``, ``evaluation.py``, ``davis.py``, ``results.py``,
``evaluation_method.py``), written from their definitions with numpy, OpenCV and scikit-image, frame by frame.

Validated against the real code (unpacked under /tmp, run on generated sequences: equal to the last bit; see
docs/boundary_measures.md "Parity"). The tests never import the real code.
"""

from __future__ import annotations

import os
import warnings

import cv2
import numpy as np
from PIL import Image
from skimage.morphology import disk


def region_similarity(gt: np.ndarray, pred: np.ndarray, void: np.ndarray | None = None) -> float:
    """J of one frame: IoU of two bool masks outside the void; 1 when the union (outside the void) is empty."""
    keep = np.ones_like(gt, dtype=bool) if void is None else ~void.astype(bool)
    intersection = int((gt & pred & keep).sum())
    union = int(((gt | pred) & keep).sum())
    return 1.0 if union == 0 else intersection / union


def boundary_map(seg: np.ndarray) -> np.ndarray:
    """One-pixel boundaries: a pixel differing from its east, south or south-east neighbour (no padding: the last
    row compares east only, the last column south only, the bottom-right pixel is never set)."""
    seg = seg.astype(bool)
    east, south, south_east = (np.zeros_like(seg) for _ in range(3))
    east[:, :-1], south[:-1, :], south_east[:-1, :-1] = seg[:, 1:], seg[1:, :], seg[1:, 1:]
    out = (seg != east) | (seg != south) | (seg != south_east)
    out[-1, :] = seg[-1, :] != east[-1, :]
    out[:, -1] = seg[:, -1] != south[:, -1]
    out[-1, -1] = False
    return out


def bound_pixels(shape: tuple[int, int], bound_th: float = 0.008) -> float:
    """``bound_th`` when >= 1, else ``ceil(bound_th * ||shape||)`` (a float, as the reference keeps it)."""
    return bound_th if bound_th >= 1 else float(np.ceil(bound_th * np.linalg.norm(shape)))


def contour_accuracy(pred: np.ndarray, gt: np.ndarray, void: np.ndarray | None = None,
                     bound_th: float = 0.008) -> float:
    """F of one frame: boundary maps of the void-zeroed masks matched within a disk of ``bound_pixels``."""
    keep = np.ones_like(gt, dtype=bool) if void is None else ~void.astype(bool)
    radius = bound_pixels(pred.shape, bound_th)
    pred_b, gt_b = boundary_map(pred & keep), boundary_map(gt & keep)
    footprint = disk(radius).astype(np.uint8)
    pred_dil = cv2.dilate(pred_b.astype(np.uint8), footprint) > 0
    gt_dil = cv2.dilate(gt_b.astype(np.uint8), footprint) > 0
    n_pred, n_gt = int(pred_b.sum()), int(gt_b.sum())
    if n_pred == 0 and n_gt == 0:
        precision = recall = 1.0
    elif n_pred == 0:
        precision, recall = 1.0, 0.0
    elif n_gt == 0:
        precision, recall = 0.0, 1.0
    else:
        precision = int((pred_b & gt_dil).sum()) / n_pred
        recall = int((gt_b & pred_dil).sum()) / n_gt
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def sequence_statistics(values: np.ndarray) -> tuple[float, float, float]:
    """``(mean, recall, decay)``: nanmean, fraction > 0.5, first minus last of 4 bins whose edges are
    ``round(linspace(1, n, 5) + 1e-10) - 1`` cast to uint8 (wrapping past 255), slices ``[a, b + 1)`` in uint8."""
    values = np.asarray(values, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        mean = np.nanmean(values)
        recall = np.nanmean(values > 0.5)
        edges = (np.round(np.linspace(1, len(values), 5) + 1e-10) - 1).astype(np.uint8)
        first = values[edges[0]:np.uint8(edges[1] + np.uint8(1))]
        last = values[edges[3]:np.uint8(edges[4] + np.uint8(1))]
        decay = np.nanmean(first) - np.nanmean(last)
    return float(mean), float(recall), float(decay)


def object_masks(labels: np.ndarray, count: int) -> np.ndarray:
    """``(count, *labels.shape)`` bool: the mask of each object id ``1 .. count``."""
    return labels[None] == np.arange(1, count + 1).reshape(-1, *([1] * labels.ndim))


def read_labels(path: str) -> np.ndarray:
    """A palette / grey PNG as its integer labels (``np.array(Image.open(path))``)."""
    return np.array(Image.open(path))


def evaluate_semisupervised(gt_folder: str, results_folder: str, sequences: list[str]) -> dict:
    """The semi-supervised protocol on ``<gt_folder>/<seq>/*.png`` and ``<results_folder>/<seq>/<frame>.png``.

    Objects: ids ``1 .. max(first gt frame)`` (void 255 set to 0 first); the first and last frames are not scored;
    results with more objects than the gt are refused, fewer are padded with empty masks.

    Returns:
        ``{"objects": {name: {"J": (T,), "F": (T,)}}, "per_object": {name: (JM, JR, JD, FM, FR, FD)}, "global":
        {"J&F-Mean", "J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay"}}``.
    """
    objects, per_object = {}, {}
    for seq in sequences:
        frames = sorted(os.path.join(gt_folder, seq, name) for name in os.listdir(os.path.join(gt_folder, seq))
                        if name.endswith(".png"))
        labels = np.stack([read_labels(path) for path in frames]).astype(np.float64)
        labels[labels == 255] = 0
        count = int(labels[0].max())
        ids = [os.path.splitext(os.path.basename(path))[0] for path in frames][1:-1]
        gt = object_masks(labels[1:-1], count)
        results = np.stack([read_labels(os.path.join(results_folder, seq, f"{frame}.png")) for frame in ids])
        result_count = int(results.max())
        if result_count > count:
            raise ValueError(f"{seq}: the results hold object {result_count}, the gt {count} objects")
        pred = object_masks(results, count)  # ids above the result's max are empty: the zero padding
        for index in range(count):
            name = f"{seq}_{index + 1}"
            j = np.array([region_similarity(g, p) for g, p in zip(gt[index], pred[index])])
            f = np.array([contour_accuracy(p, g) for g, p in zip(gt[index], pred[index])])
            objects[name] = {"J": j, "F": f}
            per_object[name] = (*sequence_statistics(j), *sequence_statistics(f))
    table = np.array(list(per_object.values()))
    means = table.mean(axis=0)
    names = ["J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay"]
    result = {"J&F-Mean": (means[0] + means[3]) / 2.0, **dict(zip(names, means))}
    return {"objects": objects, "per_object": per_object, "global": result}

