"""The worst-image thumbnails of the instances / panoptic report page: gt boundaries in green, prediction
boundaries in magenta (white where both lie), drawn on the RGB image when the run was given ``--image-folder``,
else on a grey canvas; at most :data:`THUMBNAIL` px on the longest side, as base64 PNG.

A boundary pixel is a pixel of an object with a 4-neighbour outside it (the image border counts as outside); for a
label map (panoptic), a pixel of a segment (id not 0) whose 4-neighbour holds another id. The boundaries are drawn
at full size and max-pooled to the thumbnail (a one-pixel line never vanishes when an image shrinks); small images
grow by a whole factor (nearest-neighbour), as the ``eval`` report's gallery does.

numpy and Pillow, imported by the commands once a report is written.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
from PIL import Image

from nobg_metrics.cli.outputs.report_gallery import thumbnail_size

THUMBNAIL = 160
"""Longest side of a thumbnail, in pixels."""
GT_COLOUR = (0, 200, 0)
PRED_COLOUR = (255, 0, 255)
BOTH_COLOUR = (255, 255, 255)
CANVAS = (96, 96, 96)


def mask_edges(masks: np.ndarray, height: int, width: int) -> np.ndarray:
    """:math:`(H, W)` bool: the boundary pixels of any of ``masks`` :math:`(N, H, W)` bool.

    Example:
        >>> square = np.zeros((1, 5, 5), bool); square[0, 1:4, 1:4] = True
        >>> mask_edges(square, 5, 5).astype(int).sum()  # the 3x3 square's 8 outer pixels
        np.int64(8)
    """
    if masks.shape[0] == 0:
        return np.zeros((height, width), bool)
    padded = np.pad(masks, ((0, 0), (1, 1), (1, 1)))
    inside = (padded[:, 1:-1, 1:-1] & padded[:, :-2, 1:-1] & padded[:, 2:, 1:-1] & padded[:, 1:-1, :-2]
              & padded[:, 1:-1, 2:])
    return (masks & ~inside).any(axis=0)


def label_edges(ids: np.ndarray) -> np.ndarray:
    """:math:`(H, W)` bool: the boundary pixels of the segments (ids other than 0) of a label map :math:`(H, W)`.

    Example:
        >>> ids = np.array([[1, 1, 2], [1, 1, 2], [0, 0, 0]])
        >>> label_edges(ids).astype(int).tolist()
        [[1, 1, 1], [1, 1, 1], [0, 0, 0]]
    """
    padded = np.pad(ids.astype(np.int64), 1, constant_values=-1)
    centre = padded[1:-1, 1:-1]
    differs = ((padded[:-2, 1:-1] != centre) | (padded[2:, 1:-1] != centre) | (padded[1:-1, :-2] != centre)
               | (padded[1:-1, 2:] != centre))
    return differs & (ids != 0)


def pooled(edges: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``edges`` :math:`(H, W)` at ``size`` ``(width, height)``: max-pooled when smaller, repeated when larger.

    Example:
        >>> edges = np.zeros((4, 4), bool); edges[1, 2] = True
        >>> pooled(edges, (2, 2)).astype(int).tolist()
        [[0, 1], [0, 0]]
    """
    width, height = size
    rows, cols = edges.shape
    if height >= rows and width >= cols:
        return edges.repeat(height // rows, axis=0).repeat(width // cols, axis=1)[:height, :width]
    row_starts = np.unique(np.arange(rows) * height // rows, return_index=True)[1]
    col_starts = np.unique(np.arange(cols) * width // cols, return_index=True)[1]
    out = np.logical_or.reduceat(edges, row_starts, axis=0)
    return np.logical_or.reduceat(out, col_starts, axis=1)[:height, :width]


def _background(image: Path | None, height: int, width: int, size: tuple[int, int]) -> np.ndarray:
    if image is not None:
        try:
            with Image.open(image) as opened:
                picture = opened.convert("RGB")
            if picture.size == (width, height):
                resample = Image.Resampling.NEAREST if size[0] > width else Image.Resampling.BILINEAR
                return np.asarray(picture.resize(size, resample)).copy()
        except OSError:  # decoration: an unreadable or missing image falls back to the canvas
            pass
    return np.broadcast_to(np.array(CANVAS, np.uint8), (size[1], size[0], 3)).copy()


def boundary_thumbnail(gt_edges: np.ndarray, pred_edges: np.ndarray, image: Path | None = None,
                       box: int = THUMBNAIL) -> str:
    """A base64 PNG of the gt / prediction boundaries :math:`(H, W)` bool (module notes), on ``image`` when it
    exists and has the masks' size.

    Example:
        >>> edges = np.zeros((10, 20), bool); edges[2, :] = True
        >>> base64.b64decode(boundary_thumbnail(edges, edges.T[:10, :20].copy()))[:4]
        b'\\x89PNG'
    """
    height, width = gt_edges.shape
    size = thumbnail_size(width, height, box)
    canvas = _background(image, height, width, size)
    gt, pred = pooled(gt_edges, size), pooled(pred_edges, size)
    canvas[gt & ~pred] = GT_COLOUR
    canvas[pred & ~gt] = PRED_COLOUR
    canvas[gt & pred] = BOTH_COLOUR
    buffer = io.BytesIO()
    Image.fromarray(canvas).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def panoptic_ids(path: Path) -> np.ndarray | None:
    """The segment ids of a COCO panoptic PNG (``R + 256 G + 256² B``), or None when it cannot be read."""
    try:
        with Image.open(path) as opened:
            rgb = np.asarray(opened.convert("RGB"), dtype=np.int64)
    except OSError:
        return None
    return rgb[..., 0] + 256 * rgb[..., 1] + 256 * 256 * rgb[..., 2]
