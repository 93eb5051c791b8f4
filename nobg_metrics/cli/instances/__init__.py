"""``nobg-metrics instances``: COCO / LVIS / Cityscapes mask AP and Boundary AP of results files
(docs/instance_segmentation.md, docs/cityscapes_instances.md)."""
