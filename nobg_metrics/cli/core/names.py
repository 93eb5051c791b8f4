"""The command's names that the argument parser needs, importable without torch (``nobg-metrics --help`` is instant).

Tasks and protocols (:mod:`nobg_metrics.cli.eval.protocols` holds what each one means), the tier names (the keys of
:data:`nobg_metrics.collection.TIERS`, checked equal by a test) and BiRefNet's own columns.
"""

from __future__ import annotations

SOD_PROTOCOLS = ("pysodmetrics", "raw")
MATTING_PROTOCOLS = ("dim", "p3m")
BIREFNET_TASKS = ("DIS5K", "COD", "HRSOD", "General", "General-2K", "Matting")
TASKS = ("sod", "matting", *BIREFNET_TASKS)
PROTOCOLS = SOD_PROTOCOLS + MATTING_PROTOCOLS + ("birefnet",)

TIER_NAMES = ("cheap", "medium", "expensive")
"""The cost tiers of ``make_collection`` (cumulative)."""

PROTOCOL_ONLY_METRICS = ("birefnet_mse", "birefnet_mba", "birefnet_hce")
"""BiRefNet's own columns (not collection names): only with --protocol birefnet."""

PRESET_NAMES = ("sod", "dis", "cod", "hrsod", "matting")
"""``--preset``: the metric sets and column orders of the field's tables
(:data:`nobg_metrics.cli.eval.presets.PRESETS`)."""
LAYOUT_PRESETS = ("davis",)
"""``--preset`` values with a layout and tables of their own (``davis``: :mod:`nobg_metrics.cli.video.run`)."""

# ---------------------------------------------------------------------------------------------- paper labels
_LABELS: dict[str, tuple[str, str]] = {  # name -> (Markdown / Unicode, LaTeX), as the papers print them
    "s_measure": ("S_α", r"$S_\alpha$"),
    "weighted_f_measure": ("F^ω_β", r"$F^\omega_\beta$"),
    "mae": ("MAE", "MAE"),
    "f_measure_max": ("F^max_β", r"$F^{max}_\beta$"),
    "f_measure_mean": ("F^m_β", r"$F^{m}_\beta$"),
    "f_measure_adaptive": ("F^adp_β", r"$F^{adp}_\beta$"),
    "e_measure_max": ("E^max_φ", r"$E^{max}_\phi$"),
    "e_measure_mean": ("E^m_φ", r"$E^{m}_\phi$"),
    "e_measure_adaptive": ("E^adp_φ", r"$E^{adp}_\phi$"),
    "hce": ("HCE_γ", r"$HCE_\gamma$"),
    "birefnet_hce": ("HCE_γ", r"$HCE_\gamma$"),
    "mba": ("mBA", "mBA"),
    "birefnet_mba": ("mBA", "mBA"),
    "birefnet_mse": ("MSE", "MSE"),
    "grey_biou_max": ("maxBIoU", "maxBIoU"),
    "grey_biou_mean": ("meanBIoU", "meanBIoU"),
    "boundary_iou": ("BIoU", "BIoU"),
    "trimap_iou": ("TrimapIoU", "TrimapIoU"),
    "boundary_f_measure": ("BF", "BF"),
    "iou_metric": ("IoU", "IoU"),
    "dice": ("Dice", "Dice"),
    "accuracy": ("Acc", "Acc"),
    "ber": ("BER", "BER"),
    "context_measure": ("C_m", r"$C_m$"),
    "camouflage_context_measure": ("CC_m", r"$CC_m$"),
    "si_mae": ("SI-MAE", "SI-MAE"),
    "pr_auc": ("AUC-PR", "AUC-PR"),
    "roc_auc": ("AUC-ROC", "AUC-ROC"),
    "si_pr_auc": ("SI-AUC-PR", "SI-AUC-PR"),
    "si_roc_auc": ("SI-AUC-ROC", "SI-AUC-ROC"),
    # matting (the tables add the printed unit: SAD (÷1000))
    "sad": ("SAD", "SAD"), "mse_metric": ("MSE", "MSE"), "gradient_error": ("Grad", "Grad"),
    "connectivity_error": ("Conn", "Conn"), "p3m_sad": ("SAD", "SAD"), "p3m_mse": ("MSE", "MSE"),
    "p3m_mad": ("MAD", "MAD"), "p3m_gradient": ("Grad", "Grad"), "p3m_connectivity": ("Conn", "Conn"),
    "p3m_sad_trimap": ("SAD-T", "SAD-T"), "p3m_mse_trimap": ("MSE-T", "MSE-T"), "p3m_mad_trimap": ("MAD-T", "MAD-T"),
    "p3m_sad_fg": ("SAD-FG", "SAD-FG"), "p3m_sad_bg": ("SAD-BG", "SAD-BG"),
}

MATTING_NAMES = ("sad", "mse_metric", "gradient_error", "connectivity_error", "p3m_sad", "p3m_mse", "p3m_mad",
                 "p3m_gradient", "p3m_connectivity", "p3m_sad_trimap", "p3m_mse_trimap", "p3m_mad_trimap",
                 "p3m_sad_fg", "p3m_sad_bg")
"""The matting measures: a ``--task sod`` table prints them apart, in their benchmark's units (never a SAD sum
beside the SOD columns)."""
_MEASURES = {  # the confusion family's measures: (Markdown, LaTeX) of the letter the papers use
    "precision": ("P", "P"), "recall": ("R", "R"), "specificity": ("Spec", r"\mathrm{Spec}"),
    "fpr": ("FPR", r"\mathrm{FPR}"),
    "iou": ("IoU", r"\mathrm{IoU}"), "dice": ("Dice", r"\mathrm{Dice}"), "accuracy": ("Acc", r"\mathrm{Acc}"),
    "ber": ("BER", r"\mathrm{BER}"), "kappa": ("κ", r"\kappa"), "f1": ("F_1", "F_1"), "f_measure": ("F_β", r"F_\beta"),
    "msiou": ("MSIoU", r"\mathrm{MSIoU}"),
}
_MODES = {"max": "max", "mean": "m", "adaptive": "adp", "binary": "bin", "pooled": "pool", "max_overall": "max,all"}


def paper_label(name: str) -> tuple[str, str]:
    """``(Markdown, LaTeX)`` header of a metric as papers print it: Unicode for Markdown, math for LaTeX; never the
    escaped collection name (``iou\\_metric``). Unknown names print with spaces for underscores.

    Examples:
        >>> paper_label("s_measure"), paper_label("precision_max"), paper_label("si_f_measure_max")
        (('S_α', '$S_\\\\alpha$'), ('P^max', '$P^{max}$'), ('SI-F^max_β', 'SI-$F^{max}_\\\\beta$'))
    """
    if name in _LABELS:
        return _LABELS[name]
    prefix, base = ("SI-", name[3:]) if name.startswith("si_") else ("", name)
    for mode, short in sorted(_MODES.items(), key=lambda item: -len(item[0])):
        measure = base[: -len(mode) - 1]
        if base.endswith("_" + mode) and measure in _MEASURES:
            markdown, latex = _MEASURES[measure]
            head, _, sub = markdown.partition("_")
            tex_head, _, tex_sub = latex.partition("_")
            md = f"{head}^{short}" + (f"_{sub}" if sub else "")
            tex = f"{tex_head}^{{{short}}}" + (f"_{tex_sub}" if tex_sub else "")
            return prefix + md, f"{prefix}${tex}$"
    plain = name.replace("_", " ")
    return plain, plain
