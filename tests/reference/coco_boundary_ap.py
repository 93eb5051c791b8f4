"""Reference COCO mask AP and Boundary AP: pycocotools' ``COCOeval`` and a port of boundary-iou-api's
``coco_instance_api.COCOeval`` (commit 37d2558) written from its definition as a subclass of pycocotools'.

What boundary-iou-api changes in pycocotools' evaluator, and nothing else:

- ``_prepare``: the gt ignore flag is ``ignore OR iscrowd`` (pycocotools overwrites it with ``iscrowd``);
- ``iouType="boundary"``: every annotation (gt and result) also gets the RLE of its boundary
  (``mask_to_boundary``: ``mask - erode(pad(mask, 1 px of 0), 3x3, d times)``, ``d`` from the image diagonal),
  and the IoU of a pair is ``min(mask IoU, boundary IoU)`` for a non-crowd gt, the crowd mask IoU for a crowd gt
  (both from ``maskUtils.iou``, after the same score sort and ``maxDets[-1]`` cap as ``computeIoU``).

``evaluate``, ``evaluateImg``, ``accumulate`` and ``summarize`` are pycocotools' own. Validated against the real
boundary-iou-api by ``tests/reference/check_ports.py`` (run by hand; the tests never need boundary-iou-api).
"""

from __future__ import annotations

import contextlib
import copy
import io
from typing import Any

import numpy as np
import pycocotools.mask as mask_utils
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from tests.reference.boundary_iou_ref import mask_to_boundary


def coco_from_dict(dataset: dict[str, Any]) -> COCO:
    """A pycocotools ``COCO`` holding a deep copy of ``dataset`` (no file, no printing)."""
    coco = COCO()
    coco.dataset = copy.deepcopy(dataset)
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
    return coco


def boundary_rle(ann: dict[str, Any], coco: COCO, dilation_ratio: float) -> dict[str, Any]:
    """The RLE of an annotation's boundary (cached in ``ann["boundary"]``, as boundary-iou-api's index does)."""
    if "boundary" not in ann:
        mask = coco.annToMask(ann).astype(np.uint8)
        band = mask_to_boundary(mask, dilation_ratio)
        ann["boundary"] = mask_utils.encode(np.asfortranarray(band))
    return ann["boundary"]


class BoundaryCOCOeval(COCOeval):
    """boundary-iou-api's ``COCOeval(cocoGt, cocoDt, iouType, dilation_ratio)`` (module notes)."""

    def __init__(self, cocoGt: COCO, cocoDt: COCO, iouType: str = "segm", dilation_ratio: float = 0.02) -> None:
        super().__init__(cocoGt, cocoDt, "segm")  # detection Params; the boundary changes only the pair IoU
        self.use_boundary = iouType == "boundary"
        self.dilation_ratio = dilation_ratio

    def _prepare(self) -> None:
        p = self.params
        gts = self.cocoGt.loadAnns(self.cocoGt.getAnnIds(imgIds=p.imgIds, catIds=p.catIds))
        dts = self.cocoDt.loadAnns(self.cocoDt.getAnnIds(imgIds=p.imgIds, catIds=p.catIds))
        for anns, coco in ((gts, self.cocoGt), (dts, self.cocoDt)):
            for ann in anns:
                ann["segmentation"] = coco.annToRLE(ann)
        for gt in gts:  # boundary-iou-api: gt['ignore'] = gt['ignore'] or ('iscrowd' in gt and gt['iscrowd'])
            gt["ignore"] = gt.get("ignore", 0) or ("iscrowd" in gt and gt["iscrowd"])
        self._gts, self._dts = _grouped(gts), _grouped(dts)
        self.evalImgs, self.eval = [], {}

    def computeIoU(self, imgId: int, catId: int) -> Any:
        if not self.use_boundary:
            return super().computeIoU(imgId, catId)
        gt, dt = self._gts[imgId, catId], self._dts[imgId, catId]
        if len(gt) == 0 and len(dt) == 0:
            return []
        order = np.argsort([-d["score"] for d in dt], kind="mergesort")
        dt = [dt[i] for i in order][: self.params.maxDets[-1]]
        crowd = [int(g["iscrowd"]) for g in gt]
        mask_ious = np.array(mask_utils.iou([d["segmentation"] for d in dt], [g["segmentation"] for g in gt], crowd))
        band_ious = np.array(mask_utils.iou([boundary_rle(d, self.cocoDt, self.dilation_ratio) for d in dt],
                                            [boundary_rle(g, self.cocoGt, self.dilation_ratio) for g in gt], crowd))
        if len(gt) == 0 or len(dt) == 0:
            return np.minimum(mask_ious, band_ious)
        non_crowd = np.array(crowd) == 0
        mask_ious[:, non_crowd] = np.minimum(mask_ious[:, non_crowd], band_ious[:, non_crowd])
        return mask_ious


def _grouped(anns: list[dict[str, Any]]) -> Any:
    from collections import defaultdict

    groups: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for ann in anns:
        groups[ann["image_id"], ann["category_id"]].append(ann)
    return groups


def run_coco(dataset: dict[str, Any], results: list[dict[str, Any]], iou_type: str = "segm", *,
             evaluator: str = "port", dilation_ratio: float = 0.02, iou_thresholds: list[float] | None = None,
             rec_thresholds: list[float] | None = None, max_dets: list[int] | None = None,
             cat_ids: list[int] | None = None) -> COCOeval:
    """Evaluate and accumulate (no printing); ``evaluator="pycocotools"`` for the unmodified one (segm only).

    Returns the evaluator: ``.eval["precision"]`` :math:`(T, R, K, A, M)`, ``.eval["recall"]``, ``.params``.
    """
    gt = coco_from_dict(dataset)
    with contextlib.redirect_stdout(io.StringIO()):
        dt = gt.loadRes(copy.deepcopy(results)) if results else coco_from_dict({**dataset, "annotations": []})
        if evaluator == "pycocotools":
            if iou_type != "segm":
                raise ValueError("pycocotools has no boundary IoU")
            ev = COCOeval(gt, dt, "segm")
        else:
            ev = BoundaryCOCOeval(gt, dt, iou_type, dilation_ratio)
        if iou_thresholds is not None:
            ev.params.iouThrs = np.array(iou_thresholds, dtype=np.float64)
        if rec_thresholds is not None:
            ev.params.recThrs = np.array(rec_thresholds, dtype=np.float64)
        if max_dets is not None:
            ev.params.maxDets = list(max_dets)
        if cat_ids is not None:
            ev.params.catIds = list(cat_ids)
        ev.evaluate()
        ev.accumulate()
    return ev


def summary(ev: COCOeval, area: str = "all", iou: float | None = None, max_det: int | None = None,
            kind: str = "ap") -> float:
    """``np.mean(s[s > -1])`` of one slice (``COCOeval.summarize``'s ``_summarize``), any max-dets value."""
    p = ev.params
    a = p.areaRngLbl.index(area)
    m = p.maxDets.index(max_det if max_det is not None else p.maxDets[-1])
    s = ev.eval["precision"] if kind == "ap" else ev.eval["recall"]
    if iou is not None:
        s = s[np.where(iou == p.iouThrs)[0]]
    s = s[:, :, :, a, m] if kind == "ap" else s[:, :, a, m]
    return -1.0 if len(s[s > -1]) == 0 else float(np.mean(s[s > -1]))
