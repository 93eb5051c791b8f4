"""``nobg-metrics instances``: COCO / LVIS / Cityscapes mask AP and Boundary AP of results files
(docs/instance_segmentation.md, docs/cityscapes_instances.md)."""

__all__ = [
    "back_share", "cityscapes_command", "cityscapes_run", "claims", "command", "errors", "extras", "pipe_messages",
    "reader_process", "reading", "run", "shared_scoring", "stats", "summary",
]
"""Its modules (imported by path: ``nobg_metrics.cli.instances.<module>``)."""
