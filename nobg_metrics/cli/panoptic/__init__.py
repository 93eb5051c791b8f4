"""``nobg-metrics panoptic``: PQ and Boundary PQ of COCO / Cityscapes panoptic PNG + JSON folders (docs/panoptic.md)."""

__all__ = ["command", "run", "stats"]
"""Its modules (imported by path: ``nobg_metrics.cli.panoptic.<module>``)."""
