"""Functional metrics: one call on a batch = the class's ``compute()`` after one ``update()``.

The public functions of every module of this package (each module's ``__all__``) are exported here, so a new
metric's module is its only registration: ``nobg_metrics.functional.mae``, ``nobg_metrics.functional.s_measure``,
... (docs/metric_names.md lists them with their classes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nobg_metrics._lazy import lazy_attributes

# The names below are written by tools/exports.py from the modules' __all__; do not edit by hand.
if TYPE_CHECKING:  # the names as static tools see them; at run time, __getattr__ below imports them
    from nobg_metrics.functional.boundary import (
        boundary_f_measure,
        boundary_iou,
        grey_boundary_iou,
        hqsam_boundary_iou,
        hqsam_iou,
        mean_boundary_accuracy,
        trimap_iou,
    )
    from nobg_metrics.functional.instance import (
        ResamplingRecords,
        cityscapes_instance_ap,
        mean_average_precision,
        resampling_records,
        tide_errors,
        weighted_summary,
    )
    from nobg_metrics.functional.matting import (
        connectivity_error,
        gradient_error,
        mse_metric,
        p3m_connectivity_error,
        p3m_gradient_error,
        p3m_mad,
        p3m_mse,
        p3m_sad,
        sad,
    )
    from nobg_metrics.functional.panoptic import (
        modified_panoptic_quality,
        panoptic_quality,
    )
    from nobg_metrics.functional.sod import (
        ThresholdCurves,
        accuracy,
        ber,
        binarised_gt_mse,
        birefnet_inputs,
        camouflage_context_measure,
        camouflage_degree,
        confusion_curves,
        context_measure,
        dice,
        e_measure,
        e_measure_adaptive,
        e_measure_max,
        e_measure_mean,
        f_measure,
        f_measure_adaptive,
        f_measure_max,
        f_measure_mean,
        fpr,
        hce,
        hce_per_image,
        iou_metric,
        kappa,
        mae,
        msiou,
        msiou_curve,
        pr_auc,
        precision,
        recall,
        roc_auc,
        s_measure,
        si_mae,
        size_invariant,
        size_invariant_curves,
        size_invariant_values,
        specificity,
        threshold_curves,
        weighted_f_measure,
    )
    from nobg_metrics.functional.video import (
        davis_contour_accuracy,
        davis_f,
        davis_j,
        davis_j_and_f,
        davis_region_similarity,
        davis_statistics,
    )

__all__ = [
    "ResamplingRecords",
    "ThresholdCurves",
    "accuracy",
    "ber",
    "binarised_gt_mse",
    "birefnet_inputs",
    "boundary_f_measure",
    "boundary_iou",
    "camouflage_context_measure",
    "camouflage_degree",
    "cityscapes_instance_ap",
    "confusion_curves",
    "connectivity_error",
    "context_measure",
    "davis_contour_accuracy",
    "davis_f",
    "davis_j",
    "davis_j_and_f",
    "davis_region_similarity",
    "davis_statistics",
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
    "iou_metric",
    "kappa",
    "mae",
    "mean_average_precision",
    "mean_boundary_accuracy",
    "modified_panoptic_quality",
    "mse_metric",
    "msiou",
    "msiou_curve",
    "p3m_connectivity_error",
    "p3m_gradient_error",
    "p3m_mad",
    "p3m_mse",
    "p3m_sad",
    "panoptic_quality",
    "pr_auc",
    "precision",
    "recall",
    "resampling_records",
    "roc_auc",
    "s_measure",
    "sad",
    "si_mae",
    "size_invariant",
    "size_invariant_curves",
    "size_invariant_values",
    "specificity",
    "threshold_curves",
    "tide_errors",
    "trimap_iou",
    "weighted_f_measure",
    "weighted_summary",
]

_DOMAINS: dict[str, tuple[str, ...]] = {
    "nobg_metrics.functional.boundary": (
        "boundary_f_measure", "boundary_iou", "grey_boundary_iou", "hqsam_boundary_iou", "hqsam_iou",
        "mean_boundary_accuracy", "trimap_iou",
    ),
    "nobg_metrics.functional.instance": (
        "ResamplingRecords", "cityscapes_instance_ap", "mean_average_precision", "resampling_records", "tide_errors",
        "weighted_summary",
    ),
    "nobg_metrics.functional.matting": (
        "connectivity_error", "gradient_error", "mse_metric", "p3m_connectivity_error", "p3m_gradient_error",
        "p3m_mad", "p3m_mse", "p3m_sad", "sad",
    ),
    "nobg_metrics.functional.panoptic": (
        "modified_panoptic_quality", "panoptic_quality",
    ),
    "nobg_metrics.functional.sod": (
        "ThresholdCurves", "accuracy", "ber", "binarised_gt_mse", "birefnet_inputs", "camouflage_context_measure",
        "camouflage_degree", "confusion_curves", "context_measure", "dice", "e_measure", "e_measure_adaptive",
        "e_measure_max", "e_measure_mean", "f_measure", "f_measure_adaptive", "f_measure_max", "f_measure_mean", "fpr",
        "hce", "hce_per_image", "iou_metric", "kappa", "mae", "msiou", "msiou_curve", "pr_auc", "precision", "recall",
        "roc_auc", "s_measure", "si_mae", "size_invariant", "size_invariant_curves", "size_invariant_values",
        "specificity", "threshold_curves", "weighted_f_measure",
    ),
    "nobg_metrics.functional.video": (
        "davis_contour_accuracy", "davis_f", "davis_j", "davis_j_and_f", "davis_region_similarity", "davis_statistics",
    ),
}
"""Each domain package and the names it gives: imported on the first use of one of them."""

if not TYPE_CHECKING:  # static tools see the imports above, and no catch-all attribute
    __getattr__, __dir__ = lazy_attributes(__name__, _DOMAINS, __all__)
