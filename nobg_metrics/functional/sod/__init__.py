"""Salient, dichotomous and camouflaged object detection: MAE, the confusion family (F, E, IoU, Dice, ... in every
mode), the S-measure, the weighted F-measure, the size-invariant metrics, multi-scale IoU, the context measures and
HCE.
"""

from __future__ import annotations

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
from nobg_metrics.functional.sod.birefnet import (
    binarised_gt_mse,
    birefnet_inputs,
)
from nobg_metrics.functional.sod.camouflage_degree import camouflage_degree
from nobg_metrics.functional.sod.context_measure import (
    camouflage_context_measure,
    context_measure,
)
from nobg_metrics.functional.sod.family import (
    confusion_curves,
    fpr,
    kappa,
    pr_auc,
    precision,
    recall,
    roc_auc,
    specificity,
)
from nobg_metrics.functional.sod.hce import (
    hce,
    hce_per_image,
)
from nobg_metrics.functional.sod.mae import mae
from nobg_metrics.functional.sod.msiou import (
    msiou,
    msiou_curve,
)
from nobg_metrics.functional.sod.overlap import (
    accuracy,
    ber,
    dice,
    iou_metric,
)
from nobg_metrics.functional.sod.size_invariance import (
    si_mae,
    size_invariant,
    size_invariant_curves,
    size_invariant_values,
)
from nobg_metrics.functional.sod.smeasure import s_measure
from nobg_metrics.functional.sod.threshold_curves import (
    ThresholdCurves,
    e_measure,
    e_measure_adaptive,
    e_measure_max,
    e_measure_mean,
    f_measure,
    f_measure_adaptive,
    f_measure_max,
    f_measure_mean,
    threshold_curves,
)
from nobg_metrics.functional.sod.weighted_f import weighted_f_measure

__all__ = [
    "ThresholdCurves",
    "accuracy",
    "ber",
    "binarised_gt_mse",
    "birefnet_inputs",
    "camouflage_context_measure",
    "camouflage_degree",
    "confusion_curves",
    "context_measure",
    "dice",
    "e_measure",
    "e_measure_adaptive",
    "e_measure_max",
    "e_measure_mean",
    "f_measure",
    "f_measure_adaptive",
    "f_measure_max",
    "f_measure_mean",
    "fpr",
    "hce",
    "hce_per_image",
    "iou_metric",
    "kappa",
    "mae",
    "msiou",
    "msiou_curve",
    "pr_auc",
    "precision",
    "recall",
    "roc_auc",
    "s_measure",
    "si_mae",
    "size_invariant",
    "size_invariant_curves",
    "size_invariant_values",
    "specificity",
    "threshold_curves",
    "weighted_f_measure",
]
