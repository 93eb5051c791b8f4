"""COCO and LVIS files as pycocotools and lvis read them: annotations, results, and every ``segmentation`` form
(compressed and uncompressed RLE, polygons) decoded bit for bit in torch."""

__all__ = [
    "annotations", "forms", "intervals", "masks", "polygons", "results", "rle", "rle_runs", "rle_text",
    "torchmetrics_format",
]
"""Its modules (imported by path: ``nobg_metrics.io.coco.<module>``)."""
