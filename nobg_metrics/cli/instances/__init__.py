"""``nobg-metrics instances``: COCO / LVIS / Cityscapes mask AP and Boundary AP of results files
(docs/instance_segmentation.md, docs/cityscapes_instances.md)."""

__all__ = [
    "cityscapes_command", "cityscapes_run", "command", "errors", "extras", "reader_process", "reading", "run", "stats",
    "summary",
]
"""Its modules (imported by path: ``nobg_metrics.cli.instances.<module>``)."""
