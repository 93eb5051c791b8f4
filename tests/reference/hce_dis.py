"""Reference HCE of the DIS authors' tool (xuebinqin/DIS ``IS-Net/hce_metric_main.py``: ``relax_HCE``,
``filter_bdy_cond``, ``approximate_RDP``), written from docs/references.md ("Human Correction Effort") and the
tool's definitions: numpy + OpenCV + scikit-image, one image at a time, uint8 inputs as ``cv2.imread(...,
IMREAD_GRAYSCALE)`` reads them.

What differs from PySODMetrics 1.6.2 ``HumanCorrectionEffortMeasure``:

- binarisation: ``gt > 128`` and ``pred > 128`` on the raw 8-bit levels (no ``/ 255``, no min-max stretch;
  PySODMetrics thresholds the stretched ``pred / 255`` at 0.5);
- the skeleton: read from a cached ``ske/`` image as ``ske > 128`` when one exists, else
  ``skeletonize(gt > 128)``;
- the independent-region flags are sized by ``len(np.unique(labels))`` and indexed by label value, so for a
  region mask with no background pixel (``FP_`` or ``FN_`` covering the whole image: one component) the
  component has no flag — it counts 0 (PySODMetrics, sizing them ``labels.max() + 1``: 1), and the tool
  raises ``IndexError`` if a point of it is kept. Everything else is the same procedure.
"""

from __future__ import annotations

import cv2
import numpy as np
from skimage.measure import label
from skimage.morphology import disk, skeletonize

_KERNEL = disk(1)


def _filter_boundaries(contours, mask: np.ndarray, condition: np.ndarray) -> tuple[list[np.ndarray], int]:
    condition = cv2.dilate(condition.astype(np.uint8), _KERNEL)
    labels = label(mask)
    independent = np.ones(np.unique(labels).shape[0])  # the tool's sizing (see the module docstring)
    independent[0] = 0
    visited = np.zeros(condition.shape[:2])
    boundaries = []
    for contour in contours:
        runs, run = [], []
        for point in contour:
            col, row = point[0, 0], point[0, 1]
            if condition[row, col] == 0 or visited[row, col] != 0:
                if run:
                    runs.append(run)
                    run = []
                continue
            run.append([col, row])
            visited[row, col] += 1
            independent[labels[row, col]] = 0
        if run:
            runs.append(run)
        if len(runs) > 1:
            first_x, first_y = runs[0][0]
            last_x, last_y = runs[-1][-1]
            if max(abs(first_x - last_x), abs(first_y - last_y)) == 1:
                runs[-1].extend(runs[0][::-1])
                del runs[0]
        boundaries.extend(np.array(r)[:, np.newaxis, :] for r in runs)
    return boundaries, int(np.sum(independent))


def relax_hce_dis(gt_u8: np.ndarray, pred_u8: np.ndarray, skeleton: np.ndarray | None = None,
                  relax: int = 5, epsilon: float = 2.0) -> tuple[int, int, int, int]:
    """``(FP points, FP independent, FN points, FN independent)`` of one image; HCE is their sum.

    ``skeleton``: a cached skeleton image (uint8, read as ``> 128``, or bool); None: ``skeletonize(gt > 128)``.
    """
    gt = (gt_u8 > 128).astype(np.uint8)
    pred = (pred_u8 > 128).astype(np.uint8)
    if skeleton is None:
        skeleton = skeletonize(gt > 0)
    elif skeleton.dtype == np.uint8:
        skeleton = skeleton > 128
    union = np.logical_or(gt, pred)
    tp = np.logical_and(gt, pred)
    fp = pred - tp
    fn = gt - tp
    union_eroded = cv2.erode(union.astype(np.uint8), _KERNEL, iterations=relax)
    fp_ = np.logical_and(fp, union_eroded)
    for _ in range(relax):
        fp_ = cv2.dilate(fp_.astype(np.uint8), _KERNEL)
        fp_ = np.logical_and(fp_, 1 - np.logical_or(tp, fn))
    fp_ = np.logical_and(fp, fp_)
    fn_ = np.logical_and(fn, union_eroded)
    for _ in range(relax):
        fn_ = cv2.dilate(fn_.astype(np.uint8), _KERNEL)
        fn_ = np.logical_and(fn_, 1 - np.logical_or(tp, fp))
    fn_ = np.logical_and(fn, fn_)
    fn_ = np.logical_or(fn_, np.logical_xor(skeleton, np.logical_and(tp, skeleton)))
    contours_fp, _ = cv2.findContours(fp_.astype(np.uint8), cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)
    boundaries_fp, independent_fp = _filter_boundaries(contours_fp, fp_, np.logical_or(tp, fn_))
    contours_fn, _ = cv2.findContours(fn_.astype(np.uint8), cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)
    boundaries_fn, independent_fn = _filter_boundaries(
        contours_fn, fn_, 1 - np.logical_or(np.logical_or(tp, fp_), fn_))
    points_fp = sum(len(cv2.approxPolyDP(b, epsilon, False)) for b in boundaries_fp)
    points_fn = sum(len(cv2.approxPolyDP(b, epsilon, False)) for b in boundaries_fn)
    return points_fp, independent_fp, points_fn, independent_fn


def hce_dis(gt_u8: np.ndarray, pred_u8: np.ndarray, skeleton: np.ndarray | None = None) -> int:
    """The DIS tool's HCE of one image (relax 5, epsilon 2.0)."""
    return int(sum(relax_hce_dis(gt_u8, pred_u8, skeleton)))
