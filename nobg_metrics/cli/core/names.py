"""The command's names that the argument parser needs, importable without torch (``nobg-metrics --help`` is instant).

Tasks and protocols (:mod:`nobg_metrics.cli.eval.protocols` holds what each one means) and the tier names (the keys
of :data:`nobg_metrics.collection.TIERS`, checked equal by a test). The metrics' labels, and which are BiRefNet's own
columns, are their catalog descriptors' (:func:`paper_label` reads the labels when a table is written).
"""

from __future__ import annotations

SOD_PROTOCOLS = ("pysodmetrics", "raw")
MATTING_PROTOCOLS = ("dim", "p3m")
BIREFNET_TASKS = ("DIS5K", "COD", "HRSOD", "General", "General-2K", "Matting")
TASKS = ("sod", "matting", *BIREFNET_TASKS)
PROTOCOLS = SOD_PROTOCOLS + MATTING_PROTOCOLS + ("birefnet",)

TIER_NAMES = ("cheap", "medium", "expensive")
"""The cost tiers of ``make_collection`` (cumulative)."""

PRESET_NAMES = ("sod", "dis", "cod", "hrsod", "matting")
"""``--preset``: the metric sets and column orders of the field's tables
(:data:`nobg_metrics.cli.eval.presets.PRESETS`)."""
LAYOUT_PRESETS = ("davis",)
"""``--preset`` values with a layout and tables of their own (``davis``: :mod:`nobg_metrics.cli.video.run`)."""


# ---------------------------------------------------------------------------------------------- paper labels
def paper_label(name: str) -> tuple[str, str]:
    """``(Markdown, LaTeX)`` header of a metric as papers print it: Unicode for Markdown, math for LaTeX; never the
    escaped collection name (``iou\\_metric``): the catalog's ``Descriptor.header``. Unknown names print by the
    confusion family's rule, else with spaces for underscores.

    Examples:
        >>> paper_label("s_measure"), paper_label("precision_max"), paper_label("si_f_measure_max")
        (('S_α', '$S_\\\\alpha$'), ('P^max', '$P^{max}$'), ('SI-F^max_β', 'SI-$F^{max}_\\\\beta$'))
    """
    # the catalog imports torch: only the tables (written after scoring) ask for labels, never the parser
    from nobg_metrics.catalog import CATALOG, derived_label

    return CATALOG[name].header if name in CATALOG else derived_label(name)
