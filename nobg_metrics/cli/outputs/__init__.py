"""What a run writes: results.json and the tables (Markdown, LaTeX, XLSX, CSV), the curves and their data, the
statistics and the report page (docs/tables.md, docs/statistics.md)."""

__all__ = [
    "aliases", "cells", "curve_data", "curve_kinds", "groups", "marks", "plot_style", "plots", "report",
    "report_gallery", "results", "run_outputs", "stats", "structured_report", "structured_report_data",
    "structured_report_images", "structured_report_page", "structured_report_svg", "summary_stats", "table_model",
    "tables", "xlsx",
]
"""Its modules (imported by path: ``nobg_metrics.cli.outputs.<module>``)."""
