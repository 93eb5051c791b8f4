"""File formats: every file the reference pipelines read, read as they read it — a library layer the command,
the examples and the benchmarks share (docs/adding_a_format.md).

- ``images`` — grey maps, trimaps and RGB images as OpenCV's ``imread`` reads them (``png_grey``: libpng's colour to
  grey), predictions resized as ``cv2.resize(INTER_LINEAR)``; ``folders`` — which files of a folder are scored;
- ``coco/`` — COCO / LVIS annotation and results files, RLE, polygons and masks as pycocotools reads them;
- ``cityscapes`` — the Cityscapes instance layout; ``panoptic`` — COCO panoptic PNG + JSON; ``davis`` — DAVIS 2017
  frames;
- ``errors`` — :class:`~nobg_metrics.io.errors.InputError` and the read errors every reader raises;
- ``json_stream`` — a JSON file whose top level is an array (a results file), decoded one element at a time.

A reader returns arrays or tensors and raises an ``InputError`` naming the file and what is wrong in it; it never
computes a metric.
"""

__all__ = [
    "cityscapes", "coco", "davis", "errors", "folders", "images", "json_stream", "labelme", "panoptic", "png_grey",
]
"""Its modules (imported by path: ``nobg_metrics.io.<module>``)."""
