"""The catalog's entries: every public metric class under its registered names, in the registry's order (the tiers'
members first, then the rest), with the header papers print each under and the matting protocols' printed units.

A new metric is one :func:`~nobg_metrics.catalog.descriptor.declare` line in :data:`DECLARED` (docs/adding_a_metric.md).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import nobg_metrics.functional as F
import nobg_metrics.metrics as M
from nobg_metrics.catalog.descriptor import Descriptor, declare
from nobg_metrics.functional.matting.p3m import PRINTED_SCALE as P3M_SCALE
from nobg_metrics.functional.sod.confusion_measures import MEASURES
from nobg_metrics.functional.sod.family import AUC_CURVES
from nobg_metrics.functional.sod.size_invariance import SI_ENTRIES
from nobg_metrics.metrics.sod.confusion import ConfusionMetric

_PYSOD = "PySODMetrics 1.6.2"
_DIM = "DIM MATLAB evaluation"
_P3M = "JizhiziLi/P3M core/evaluate.py"
_MATTING = {"task": "matting", "inputs": ("trimap",)}
_CURVES = {"statistic": "confusion", "reference": f"{_PYSOD} Fmeasure / Emeasure", "page": "confusion_family.md"}
_P3M_ERRORS = {**_MATTING, "statistic": "p3m_pixel_errors", "reference": _P3M, "page": "matting_protocols.md"}
_P3M_TRIMAP = {**_P3M_ERRORS, "requires": ("trimap",)}
_BIREFNET_PREFIX = {"max": "max", "mean": "mean", "adaptive": "adp"}
_BIREFNET_OWN = {"protocol": "birefnet"}
"""BiRefNet's own readings: its columns under ``--protocol birefnet`` only."""

_AUC_LABELS = {name: (text, text) for name, text in (("pr_auc", "AUC-PR"), ("roc_auc", "AUC-ROC"),
                                                      ("si_pr_auc", "SI-AUC-PR"), ("si_roc_auc", "SI-AUC-ROC"))}


_THRESHOLD_MEASURES = ("f1", "precision", "recall", "iou", "dice", "specificity")
"""PySODEvalToolkit's threshold measures named as ours (``BINARY_METRIC_MAPPING`` without ``bi``; its ``fmeasure`` is
our ``f_measure``): each name stands for the max, mean and adaptive entries."""
_BINARY_NAMES = {"f1": "bif1", "precision": "biprecision", "recall": "birecall", "iou": "biiou",
                 "accuracy": "bioa", "kappa": "bikappa"}
"""PySODEvalToolkit's ``bi*`` measures: the binary entry pooled over the dataset (``sample_based=False``)."""
_COLUMN_PREFIX = {"max": "max", "mean": "avg", "adaptive": "adp"}


def _toolkit(*names: str, mode: str, letter: str = "") -> tuple[str, ...]:
    """PySODEvalToolkit's names of the ``mode`` entry of its metrics ``names``: the names themselves and its result
    columns (``maxem``; the converter's ``maxE`` for ``letter`` E, kept in lower case: any case is taken)."""
    if mode not in _COLUMN_PREFIX:
        return ()
    prefix = _COLUMN_PREFIX[mode]
    return (*names, *(prefix + name for name in names), *((prefix + letter.lower(),) if letter else ()))


def _label(markdown: str, latex: str | None = None) -> dict[str, tuple[str, str]]:
    """The ``label`` field: the header papers print, ``(Markdown / Unicode, LaTeX)`` (the same text by default)."""
    return {"label": (markdown, markdown if latex is None else latex)}


def _printed(markdown: str, factor: float, decimals: int) -> dict[str, Any]:
    """The ``label`` and ``printed`` fields of a matting measure: its header and how its benchmark prints it."""
    return {**_label(markdown), "printed": (factor, decimals)}


_DECLARED: tuple[Descriptor, ...] = (
    # cheap
    declare("mae", M.MAE, F.mae, tier="cheap", **_label("MAE"), toolkit=("mae",), birefnet="MAE",
            reference=f"{_PYSOD} MAE", page="mae.md"),
    declare("iou_metric", M.IoU, F.iou_metric, tier="cheap", **_label("IoU"), statistic="confusion",
            reference=f"{_PYSOD} FmeasureV2 IOUHandler", page="overlap.md"),
    declare("dice", M.Dice, F.dice, tier="cheap", **_label("Dice"), statistic="confusion",
            reference=f"{_PYSOD} FmeasureV2 DICEHandler", page="overlap.md"),
    declare("accuracy", M.Accuracy, F.accuracy, tier="cheap", **_label("Acc"), statistic="confusion",
            reference=f"{_PYSOD} FmeasureV2 OverallAccuracyHandler", page="overlap.md"),
    declare("ber", M.BER, F.ber, tier="cheap", **_label("BER"), statistic="confusion",
            reference=f"{_PYSOD} FmeasureV2 BERHandler", page="overlap.md"),
    declare("sad", M.SAD, F.sad, tier="cheap", **_MATTING, **_printed("SAD", 1e-3, 2), statistic="sad_mse",
             reference=_DIM, page="matting.md"),
    declare("mse_metric", M.MSE, F.mse_metric, tier="cheap", **_MATTING, **_printed("MSE", 1e3, 2), statistic="sad_mse",
            reference=_DIM,
            page="matting.md"),
    declare("boundary_iou", M.BoundaryIoU, F.boundary_iou, tier="cheap", **_label("BIoU"), reference="boundary-iou-api",
            page="boundary_iou.md"),
    # medium
    *(declare(f"{measure}_{mode}", metric, functional, arguments={"mode": mode}, tier="medium", **_CURVES,
               label=(f"{letter}^{short}_{sub}", f"${letter}^{{{short}}}_\\{tex}$"),
              toolkit=_toolkit(measure[0] + "m", *(("fmeasure",) if letter == "F" else ()), mode=mode,
                               letter=letter), birefnet=f"{_BIREFNET_PREFIX[mode]}{letter}m")
      for measure, metric, functional, letter, sub, tex in (("f_measure", M.FMeasure, F.f_measure, "F", "β", "beta"),
                                                             ("e_measure", M.EMeasure, F.e_measure, "E", "φ", "phi"))
      for mode, short in (("max", "max"), ("mean", "m"), ("adaptive", "adp"))),
    declare("gradient_error", M.GradientError, F.gradient_error, tier="medium", **_MATTING, **_printed("Grad", 1e-3, 2),
            reference=_DIM,
            page="matting.md"),
    declare("trimap_iou", M.TrimapIoU, F.trimap_iou, tier="medium", **_label("TrimapIoU"),
            reference="the Boundary IoU paper's Trimap IoU",
            page="boundary_measures.md"),
    declare("boundary_f_measure", M.BoundaryFMeasure, F.boundary_f_measure, tier="medium", **_label("BF"),
            reference="the Boundary IoU paper's boundary F-measure", page="boundary_measures.md"),
    # expensive
    declare("s_measure", M.SMeasure, F.s_measure, tier="expensive", **_label("S_α", r"$S_\alpha$"),
            reference=f"{_PYSOD} Smeasure", toolkit=("sm",), birefnet="Smeasure",
            page="s_measure.md"),
    declare("weighted_f_measure", M.WeightedFMeasure, F.weighted_f_measure, tier="expensive",
             **_label("F^ω_β", r"$F^\omega_\beta$"), toolkit=("wfm",), birefnet="wFmeasure",
            reference=f"{_PYSOD} WeightedFmeasure", page="weighted_f_measure.md"),
    declare("connectivity_error", M.ConnectivityError, F.connectivity_error, tier="expensive", **_MATTING,
             **_printed("Conn", 1e-3, 2),
            reference=_DIM, page="matting.md"),
    *(declare(f"msiou_{mode}", M.MSIoU, F.msiou, arguments={"mode": mode}, tier="expensive" if mode in ("max", "mean")
              else None, statistic="msiou_curve" if mode in ("max", "mean") else None, reference=f"{_PYSOD} MSIoU",
              page="msiou.md", toolkit=_toolkit("msiou", mode=mode))
      for mode in ("max", "mean", "adaptive", "binary")),
    declare("context_measure", M.ContextMeasure, F.context_measure, tier="expensive", **_label("C_m", r"$C_m$"),
            reference=f"{_PYSOD} ContextMeasure", page="context_measure.md"),
    declare("hce", M.HCE, F.hce, tier="expensive", inputs=("gt_skeleton",), count=True,
            **_label("HCE_γ", r"$HCE_\gamma$"), reference=f"{_PYSOD} HumanCorrectionEffortMeasure", page="hce.md"),
    # by name
    declare("camouflage_context_measure", M.CamouflageContextMeasure, F.camouflage_context_measure, inputs=("image",),
            requires=("image",), **_label("CC_m", r"$CC_m$"), reference=f"{_PYSOD} CamouflageContextMeasure",
            page="context_measure.md"),
    declare("si_mae", M.SizeInvariantMAE, F.si_mae, **_label("SI-MAE"), reference=f"{_PYSOD} SizeInvarianceMAE",
             page="size_invariance.md"),
    *(Descriptor(name, M.SizeInvariantConfusion,
                  functools.partial(F.size_invariant, measure, mode=mode, sample_based=sample_based),
                  {"measure": measure, "mode": mode, "sample_based": sample_based}, statistic="size_invariant",
                  reference=f"{_PYSOD} SizeInvarianceFmeasureV2", page="size_invariance.md",
                  label=_AUC_LABELS.get(name))
      for name, (measure, mode, sample_based) in SI_ENTRIES.items()),
    # the P3M-10k / AM-2k / AIM-500 protocol (raw values)
    declare("p3m_sad", M.P3MSAD, F.p3m_sad, **_P3M_ERRORS, **_printed("SAD", P3M_SCALE["sad"], 2)),
    declare("p3m_sad_trimap", M.P3MSAD, F.p3m_sad, arguments={"region": "trimap"}, **_P3M_TRIMAP,
             **_printed("SAD-T", P3M_SCALE["sad_trimap"], 2)),
    declare("p3m_sad_fg", M.P3MSAD, F.p3m_sad, arguments={"region": "fg"}, **_P3M_TRIMAP,
             **_printed("SAD-FG", P3M_SCALE["sad_fg"], 2)),
    declare("p3m_sad_bg", M.P3MSAD, F.p3m_sad, arguments={"region": "bg"}, **_P3M_TRIMAP,
             **_printed("SAD-BG", P3M_SCALE["sad_bg"], 2)),
    declare("p3m_mse", M.P3MMSE, F.p3m_mse, **_P3M_ERRORS, **_printed("MSE", P3M_SCALE["mse"], 4)),
    declare("p3m_mse_trimap", M.P3MMSE, F.p3m_mse, arguments={"region": "trimap"}, **_P3M_TRIMAP,
             **_printed("MSE-T", P3M_SCALE["mse_trimap"], 4)),
    declare("p3m_mad", M.P3MMAD, F.p3m_mad, **_P3M_ERRORS, **_printed("MAD", P3M_SCALE["mad"], 4)),
    declare("p3m_mad_trimap", M.P3MMAD, F.p3m_mad, arguments={"region": "trimap"}, **_P3M_TRIMAP,
             **_printed("MAD-T", P3M_SCALE["mad_trimap"], 4)),
    declare("p3m_gradient", M.P3MGradientError, F.p3m_gradient_error, **_MATTING, reference=_P3M,
             **_printed("Grad", P3M_SCALE["grad"], 2),
            page="matting_protocols.md"),
    declare("p3m_connectivity", M.P3MConnectivityError, F.p3m_connectivity_error, **_MATTING, reference=_P3M,
             **_printed("Conn", P3M_SCALE["conn"], 2),
            page="matting_protocols.md"),
    # BiRefNet's boundary columns and its own readings
    declare("mba", M.MBA, F.mean_boundary_accuracy, **_label("mBA"), reference="CascadePSP compute_boundary_acc",
            page="birefnet_protocol.md"),
    *(declare(f"grey_biou_{mode}", M.GreyBoundaryIoU, F.grey_boundary_iou, arguments={"mode": mode},
               **_label(f"{mode}BIoU"), birefnet=f"{mode}BIoU",
              statistic="grey_boundary_curve", reference="BiRefNet evaluation/metrics.py", page="birefnet_protocol.md")
      for mode in ("max", "mean")),
    declare("birefnet_mse", M.BinarisedGtMSE, F.binarised_gt_mse, uint8_only=True, **_label("MSE"),
            **_BIREFNET_OWN, birefnet="MSE",
            reference="BiRefNet evaluation/metrics.py", page="birefnet_protocol.md"),
    declare("birefnet_hce", M.HCE, F.hce, arguments={"protocol": "dis", "normalize": False}, inputs=("gt_skeleton",),
             uint8_only=True, **_label("HCE_γ", r"$HCE_\gamma$"), **_BIREFNET_OWN, birefnet="HCE", stands_for="hce",
            count=True,
            reference="DIS hce_metric_main.py (BiRefNet's column)", page="birefnet_protocol.md"),
    declare("birefnet_mba", M.MBA, F.mean_boundary_accuracy, arguments={"empty_gt": "reference", "normalize": False},
             **_label("mBA"), **_BIREFNET_OWN, birefnet="mBA", stands_for="mba",
            reference="CascadePSP compute_boundary_acc (BiRefNet's column)", page="birefnet_protocol.md"),
    # HQ-SAM's training-time mIoU / mBIoU (SysCV/sam-hq train/utils/misc.py)
    declare("hqsam_iou", M.HQSAMIoU, F.hqsam_iou, reference="SysCV/sam-hq compute_iou", page="birefnet_protocol.md"),
    declare("hqsam_boundary_iou", M.HQSAMBoundaryIoU, F.hqsam_boundary_iou,
            reference="SysCV/sam-hq compute_boundary_iou", page="birefnet_protocol.md"),
    # structured inputs: no tier, no collection (each class takes its own inputs)
    declare("mean_average_precision", M.MeanAveragePrecision, F.mean_average_precision, kind="instances",
            preparer="nobg_metrics.functional.instance.inputs.prepare_instances",
            reference="pycocotools COCOeval / lvis-api LVISEval", page="instance_segmentation.md"),
    declare("cityscapes_instance_ap", M.CityscapesInstanceAP, F.cityscapes_instance_ap, kind="cityscapes",
            preparer="nobg_metrics.functional.instance.cityscapes_inputs.size_groups",
            reference="cityscapesScripts evalInstanceLevelSemanticLabeling", page="cityscapes_instances.md"),
    declare("panoptic_quality", M.PanopticQuality, F.panoptic_quality, kind="panoptic",
            preparer="nobg_metrics.functional.panoptic.inputs.prepare_panoptic",
            reference="panopticapi pq_compute", page="panoptic.md"),
    declare("modified_panoptic_quality", M.ModifiedPanopticQuality, F.modified_panoptic_quality, kind="panoptic",
            preparer="nobg_metrics.functional.panoptic.inputs.prepare_panoptic",
            reference="torchmetrics ModifiedPanopticQuality", page="panoptic.md"),
    *(declare(name, metric, functional, kind="video", preparer="nobg_metrics.functional.video.davis.prepare_davis",
              reference="davis2017-evaluation", page="boundary_measures.md")
      for name, metric, functional in (("davis_j", M.DavisJ, F.davis_j), ("davis_f", M.DavisF, F.davis_f),
                                        ("davis_j_and_f", M.DavisJAndF, F.davis_j_and_f))),
)


def _family() -> tuple[Descriptor, ...]:
    """``<measure>_<mode>`` entries of every confusion-family class (measures and modes from the classes and the
    measure registry), except those declared above (``iou_metric`` is IoU's binary mode, ``f_measure_max`` ...)."""

    def effective(metric: type[ConfusionMetric], arguments: Mapping[str, Any]) -> tuple[type, str, str]:
        return metric, arguments.get("mode", metric._default_mode), arguments.get("reduction", "mean")

    declared = {effective(d.metric, d.arguments) for d in _DECLARED
                if isinstance(d.metric, type) and issubclass(d.metric, ConfusionMetric)}
    entries: list[Descriptor] = []
    for name in sorted(M.__all__):  # the classes in name order (the registry's order of these entries)
        metric = getattr(M, name)
        measure = metric.__dict__.get("_measure") if isinstance(metric, type) else None
        if not (issubclass(metric, ConfusionMetric) and measure):
            continue
        fields = {"statistic": "confusion", "reference": f"{_PYSOD} FmeasureV2", "page": "confusion_family.md"}
        if measure in AUC_CURVES:
            entries.append(declare(measure, metric, metric.functional, **fields, label=_AUC_LABELS[measure]))
            continue
        modes: dict[str, dict[str, Any]] = {mode: {"mode": mode} for mode in ("max", "mean", "adaptive")}
        if MEASURES[measure].binary_reference:  # the E-measure's binary mode has no reference
            modes["binary"] = {"mode": "binary"}
            modes["pooled"] = {"mode": "binary", "reduction": "pooled"}
        for mode, arguments in modes.items():
            toolkit = _toolkit(measure, mode=mode) if measure in _THRESHOLD_MEASURES else ()
            if mode == "pooled" and measure in _BINARY_NAMES:
                toolkit = (_BINARY_NAMES[measure],)
            candidate = declare(f"{measure}_{mode}", metric, metric.functional, arguments=arguments, **fields,
                                toolkit=toolkit)
            if effective(metric, candidate.arguments) not in declared:
                entries.append(candidate)
    return tuple(entries)


ENTRIES: tuple[Descriptor, ...] = (*_DECLARED, *_family())
"""Every entry in the registry's order."""
