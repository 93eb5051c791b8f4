"""Functional metrics: one call on a batch = the class's ``compute()`` after one ``update()``."""

from nobg_metrics.functional.boundary import boundary_iou
from nobg_metrics.functional.connectivity import connectivity_error
from nobg_metrics.functional.camouflage_degree import camouflage_degree
from nobg_metrics.functional.cityscapes_instances import cityscapes_instance_ap
from nobg_metrics.functional.context_measure import camouflage_context_measure, context_measure
from nobg_metrics.functional.family import (
    confusion_curves,
    fpr,
    kappa,
    pr_auc,
    precision,
    recall,
    roc_auc,
    specificity,
)
from nobg_metrics.functional.gradient import gradient_error
from nobg_metrics.functional.grey_boundary_iou import grey_boundary_iou
from nobg_metrics.functional.hce import hce, hce_per_image
from nobg_metrics.functional.hqsam import hqsam_boundary_iou, hqsam_iou, hqsam_metrics
from nobg_metrics.functional.mae import mae
from nobg_metrics.functional.mean_average_precision import mean_average_precision
from nobg_metrics.functional.matting import mse_metric, sad
from nobg_metrics.functional.matting_p3m import p3m_mad, p3m_mse, p3m_sad
from nobg_metrics.functional.mba import mean_boundary_accuracy
from nobg_metrics.functional.msiou import msiou, msiou_curve
from nobg_metrics.functional.overlap import accuracy, ber, dice, iou_metric
from nobg_metrics.functional.p3m_connectivity import p3m_connectivity_error
from nobg_metrics.functional.p3m_gradient import p3m_gradient_error
from nobg_metrics.functional.size_invariance import (
    si_mae,
    size_invariant,
    size_invariant_curves,
    size_invariant_values,
)
from nobg_metrics.functional.smeasure import s_measure
from nobg_metrics.functional.threshold_curves import (
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
from nobg_metrics.functional.weighted_f import weighted_f_measure

__all__ = [
    "ThresholdCurves",
    "accuracy",
    "ber",
    "boundary_iou",
    "confusion_curves",
    "connectivity_error",
    "camouflage_context_measure",
    "camouflage_degree",
    "cityscapes_instance_ap",
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
    "gradient_error",
    "grey_boundary_iou",
    "hce",
    "hce_per_image",
    "hqsam_boundary_iou",
    "hqsam_iou",
    "hqsam_metrics",
    "iou_metric",
    "kappa",
    "mae",
    "mean_average_precision",
    "mean_boundary_accuracy",
    "mse_metric",
    "msiou",
    "msiou_curve",
    "p3m_connectivity_error",
    "p3m_gradient_error",
    "p3m_mad",
    "p3m_mse",
    "p3m_sad",
    "pr_auc",
    "precision",
    "recall",
    "roc_auc",
    "s_measure",
    "sad",
    "si_mae",
    "size_invariant",
    "size_invariant_curves",
    "size_invariant_values",
    "specificity",
    "threshold_curves",
    "weighted_f_measure",
]
