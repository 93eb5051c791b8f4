"""``nobg-metrics panoptic``: PQ and Boundary PQ of COCO / Cityscapes panoptic PNG + JSON folders (docs/panoptic.md)."""
