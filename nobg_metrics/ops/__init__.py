"""Shared pure-torch primitives, each tested on its own against scipy/OpenCV."""

__all__ = [
    "arith", "band_width", "banded", "byte_counts", "ccm_search", "components", "contour_steps", "contours",
    "contours_fixed", "cross_morphology", "cv_resize", "disk_morphology", "distance", "ellipse", "envelope", "filters",
    "gt_reuse", "histogram", "host_reads", "lab", "label_boundary", "level_components", "levels", "morphology",
    "nearest_band", "numpy_sum", "polyline", "polyline_fixed", "row_bands", "run_overlap", "run_strips",
    "segment_bands", "thinning", "threads", "uint8_stats", "union_find",
]
"""Its modules (imported by path: ``nobg_metrics.ops.<module>``)."""
