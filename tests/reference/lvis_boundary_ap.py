"""Reference LVIS mask AP and Boundary AP: the installed ``lvis`` package (0.5.3) and a port of boundary-iou-api's
``lvis_instance_api.LVISEval`` (commit 37d2558), written from its definition as a subclass of the installed one.

What boundary-iou-api's LVIS evaluator changes in ``lvis`` 0.5.3, and nothing else:

- ``_prepare``: gts get ``iscrowd = 0`` and ``ignore = 0`` when absent and ``ignore = iscrowd or ignore``; the
  federated filter (a detection is kept only when its category is among the image's gt categories or its
  ``neg_category_ids``) applies only when the first image has ``neg_category_ids``; missing per-image lists are
  empty; missing category frequencies give empty frequency groups;
- ``compute_iou``: crowd gts take the crowd IoU; ``iou_type="boundary"`` pairs score ``min(mask IoU, boundary IoU)``
  (crowd pairs: the crowd mask IoU);
- ``evaluate_img``: area ranges exclude their upper end (``area >= hi`` is outside), and a matched crowd gt stays
  available (``if gt_m[t, g] > 0 and not iscrowd[g]: continue``).

The 300-per-image cap (``LVISResults.limit_dets_per_image``), ``accumulate`` and ``summarize`` are lvis' own
(``accumulate`` still writes ``np.float``: :func:`numpy_float` restores the alias for the call).
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import numpy as np
import pycocotools.mask as mask_utils
from lvis import LVIS, LVISEval, LVISResults

from tests.reference.boundary_iou_ref import mask_to_boundary


@contextlib.contextmanager
def numpy_float() -> Iterator[None]:
    """``np.float`` (removed in numpy 1.24) for the duration of an lvis call."""
    had = "float" in np.__dict__
    if not had:
        np.float = float  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if not had:
            del np.float  # type: ignore[attr-defined]


def lvis_from_dict(dataset: dict[str, Any]) -> LVIS:
    """An ``LVIS`` index of a deep copy of ``dataset`` (no file)."""
    lvis = LVIS.__new__(LVIS)
    lvis.logger = logging.getLogger("lvis_reference")
    lvis.dataset = copy.deepcopy(dataset)
    lvis._create_index()
    return lvis


def _band(ann: dict[str, Any], lvis: LVIS, dilation_ratio: float) -> dict[str, Any]:
    if "boundary" not in ann:
        band = mask_to_boundary(lvis.ann_to_mask(ann).astype(np.uint8), dilation_ratio)
        ann["boundary"] = mask_utils.encode(np.asfortranarray(band))
    return ann["boundary"]


class BoundaryLVISEval(LVISEval):
    """boundary-iou-api's ``LVISEval(lvis_gt, lvis_dt, iou_type, max_dets, dilation_ratio)`` (module notes)."""

    def __init__(self, lvis_gt: LVIS, results: list[dict[str, Any]], iou_type: str = "segm", max_dets: int = 300,
                 dilation_ratio: float = 0.02) -> None:
        super().__init__(lvis_gt, LVISResults(lvis_gt, results, max_dets=max_dets), "segm")
        self.use_boundary = iou_type == "boundary"
        self.dilation_ratio = dilation_ratio
        self.params.max_dets = max_dets

    def _prepare(self) -> None:
        cat_ids = self.params.cat_ids if self.params.cat_ids else None
        gts = self.lvis_gt.load_anns(self.lvis_gt.get_ann_ids(img_ids=self.params.img_ids, cat_ids=cat_ids))
        dts = self.lvis_dt.load_anns(self.lvis_dt.get_ann_ids(img_ids=self.params.img_ids, cat_ids=cat_ids))
        for anns, source in ((gts, self.lvis_gt), (dts, self.lvis_dt)):
            for ann in anns:
                ann["segmentation"] = source.ann_to_rle(ann)
        positives: dict[int, set[int]] = defaultdict(set)
        for gt in gts:
            gt.setdefault("iscrowd", 0)
            gt.setdefault("ignore", 0)
            gt["ignore"] = gt["iscrowd"] or gt["ignore"]
            self._gts[gt["image_id"], gt["category_id"]].append(gt)
            positives[gt["image_id"]].add(gt["category_id"])
        images = self.lvis_gt.load_imgs(ids=self.params.img_ids)
        federated = "neg_category_ids" in images[0]  # decided by the first image, for all
        negatives = {image["id"]: image.get("neg_category_ids", []) for image in images}
        self.img_nel = {image["id"]: image.get("not_exhaustive_category_ids", []) for image in images}
        for dt in dts:
            image, category = dt["image_id"], dt["category_id"]
            if federated and category not in negatives[image] and category not in positives[image]:
                continue
            self._dts[image, category].append(dt)
        self.freq_groups = self._prepare_freq_group()

    def _prepare_freq_group(self) -> list[list[int]]:
        categories = self.lvis_gt.load_cats(self.params.cat_ids)
        if "frequency" not in categories[0]:
            return [[] for _ in self.params.img_count_lbl]
        return super()._prepare_freq_group()

    def compute_iou(self, img_id: int, cat_id: int) -> Any:
        gt, dt = self._get_gt_dt(img_id, cat_id)
        if len(gt) == 0 and len(dt) == 0:
            return []
        dt = [dt[i] for i in np.argsort([-d["score"] for d in dt], kind="mergesort")]
        crowd = [int(g["iscrowd"]) for g in gt]
        mask_ious = mask_utils.iou([d["segmentation"] for d in dt], [g["segmentation"] for g in gt], crowd)
        if not self.use_boundary:
            return mask_ious
        mask_ious = np.array(mask_ious)
        band_ious = np.array(mask_utils.iou([_band(d, self.lvis_dt, self.dilation_ratio) for d in dt],
                                            [_band(g, self.lvis_gt, self.dilation_ratio) for g in gt], crowd))
        if len(gt) == 0 or len(dt) == 0:
            return np.minimum(mask_ious, band_ious)
        non_crowd = np.array(crowd) == 0
        mask_ious[:, non_crowd] = np.minimum(mask_ious[:, non_crowd], band_ious[:, non_crowd])
        return mask_ious

    def evaluate_img(self, img_id: int, cat_id: int, area_rng: list[float]) -> dict[str, Any] | None:
        gt, dt = self._get_gt_dt(img_id, cat_id)
        if len(gt) == 0 and len(dt) == 0:
            return None
        low, high = area_rng
        for g in gt:
            g["_ignore"] = int(bool(g["ignore"]) or g["area"] < low or g["area"] >= high)
        gt_order = np.argsort([g["_ignore"] for g in gt], kind="mergesort")
        gt = [gt[i] for i in gt_order]
        crowd = [int(g["iscrowd"]) for g in gt]
        dt = [dt[i] for i in np.argsort([-d["score"] for d in dt], kind="mergesort")]
        ious = self.ious[img_id, cat_id]
        ious = ious[:, gt_order] if len(ious) > 0 else ious
        levels, num_gt, num_dt = len(self.params.iou_thrs), len(gt), len(dt)
        gt_matches, dt_matches = np.zeros((levels, num_gt)), np.zeros((levels, num_dt))
        gt_ignore, dt_ignore = np.array([g["_ignore"] for g in gt]), np.zeros((levels, num_dt))
        for t, threshold in enumerate(self.params.iou_thrs):
            if len(ious) == 0:
                break
            for d, det in enumerate(dt):
                best, match = min([threshold, 1 - 1e-10]), -1
                for g in range(num_gt):
                    if gt_matches[t, g] > 0 and not crowd[g]:
                        continue
                    if match > -1 and gt_ignore[match] == 0 and gt_ignore[g] == 1:
                        break
                    if ious[d, g] < best:
                        continue
                    best, match = ious[d, g], g
                if match == -1:
                    continue
                dt_ignore[t, d] = gt_ignore[match]
                dt_matches[t, d] = gt[match]["id"]
                gt_matches[t, match] = det["id"]
        outside = np.array([d["area"] < low or d["area"] >= high or d["category_id"] in self.img_nel[d["image_id"]]
                            for d in dt]).reshape((1, num_dt))
        dt_ignore = np.logical_or(dt_ignore, np.logical_and(dt_matches == 0, np.repeat(outside, levels, 0)))
        return {"image_id": img_id, "category_id": cat_id, "area_rng": area_rng, "dt_ids": [d["id"] for d in dt],
                "gt_ids": [g["id"] for g in gt], "dt_matches": dt_matches, "gt_matches": gt_matches,
                "dt_scores": [d["score"] for d in dt], "gt_ignore": gt_ignore, "dt_ignore": dt_ignore}


def run_lvis(dataset: dict[str, Any], results: list[dict[str, Any]], iou_type: str = "segm", *,
             evaluator: str = "port", max_dets: int = 300, dilation_ratio: float = 0.02,
             iou_thresholds: list[float] | None = None, rec_thresholds: list[float] | None = None) -> LVISEval:
    """Evaluate, accumulate and summarize; ``evaluator="lvis"`` for the installed package (segm only).

    Returns the evaluator: ``.eval["precision"]`` :math:`(T, R, K, A)`, ``.eval["recall"]``, ``.results``.
    """
    gt = lvis_from_dict(dataset)
    with numpy_float():
        if evaluator == "lvis":
            if iou_type != "segm":
                raise ValueError("lvis 0.5.3 has no boundary IoU")
            ev = LVISEval(gt, LVISResults(gt, copy.deepcopy(results), max_dets=max_dets), "segm")
            ev.params.max_dets = max_dets
        else:
            ev = BoundaryLVISEval(gt, copy.deepcopy(results), iou_type, max_dets, dilation_ratio)
        if iou_thresholds is not None:
            ev.params.iou_thrs = np.array(iou_thresholds, dtype=np.float64)
        if rec_thresholds is not None:
            ev.params.rec_thrs = np.array(rec_thresholds, dtype=np.float64)
        ev.run()
    return ev
