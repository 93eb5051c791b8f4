"""COCO and LVIS files as pycocotools and lvis read them: annotations, results, and every ``segmentation`` form
(compressed and uncompressed RLE, polygons) decoded bit for bit in torch."""
