"""COCO polygon rasterisation in torch, bit for bit as pycocotools' ``frPyObjects`` / ``rleFrPoly`` (maskApi.c).

pycocotools draws a polygon ``[x0, y0, x1, y1, ...]`` (``k = len // 2`` points, a trailing odd coordinate unused)
on an ``h x w`` grid in four steps, reproduced here with the same float64 operations in the same order:

1. **Upsample by 5 and round**: ``x = (int)(5 * x + .5)``, the same for ``y`` — C's cast truncates toward zero
   (``-2.7 -> -2``), so points left of or above the image round differently from the ones inside.
2. **Walk each edge** (the last point joins the first) one step per unit of its longer axis: ``dx = |xe - xs|``,
   ``dy = |ye - ys|``; the edge is walked from the end with the smaller coordinate of that axis (``flip``) but
   its points are listed in the polygon's order; with ``s = (ye - ys) / dx`` (or ``(xe - xs) / dy``) the point
   ``t`` is ``(xs + t, (int)(ys + s * t + .5))`` (or ``((int)(xs + s * t + .5), ys + t)``). An edge of length 0
   gives one point whose ``y`` is C's cast of NaN (``INT_MIN``); it never forms a crossing.
3. **Keep the y-crossings of pixel centres**: wherever two consecutive points differ in ``x``, ``xd = (min(x) +
   .5) / 5 - .5`` must be a whole column in ``[0, w - 1]``; its row is ``ceil(clamp((min(y) + .5) / 5 - .5, 0,
   h))``.
4. **Fill by parity**: the crossings, as column-major positions ``col * h + row``, toggle the mask on and off;
   a pixel is inside when an odd number of crossings lie at or before it (pycocotools' sorted differences,
   with its merging of zero-length runs, are this parity).

:func:`polygon_masks` draws many polygons of one image at once (no Python loop over points or edges; polygons
are drawn in chunks of bounded memory). Merging the polygons of one object (pycocotools ``merge``: their union)
is :func:`nobg_metrics.cli.coco_masks.segmentation_masks`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

SCALE = 5.0
"""maskApi.c's upsampling factor (``double scale=5``)."""

C_INT_MIN = -(2**31)
"""What x86's ``cvttsd2si`` (C's ``(int)`` of a double) gives for NaN: the y of a zero-length edge's point."""

MAX_COORDINATE = (2**31 - 1) / SCALE - 1
"""Coordinates beyond this overflow maskApi.c's ``int`` after upsampling; they are refused."""

CHUNK_PIXELS = 1 << 25
"""At most this many mask pixels (polygons x h x w) are filled at once."""


class BadPolygon(ValueError):
    """A polygon that cannot be drawn; ``index`` is its position in the call, ``reason`` what is wrong."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"polygon {index}: {reason}")
        self.index, self.reason = index, reason


def _c_int(values: Tensor) -> Tensor:
    """C's ``(int)`` of a double: truncation toward zero."""
    return torch.trunc(values).to(torch.int64)


def _crossings(coords: Tensor, points: Tensor, height: int, width: int) -> tuple[Tensor, Tensor]:
    """The crossing positions of ``P`` polygons (steps 1-3): ``(polygon of each crossing, col * h + row)``.

    ``coords``: ``(2 * sum(points),)`` float64, every polygon's ``x0, y0, x1, y1, ...``; ``points``: ``(P,)``.
    """
    n_polygons = points.numel()
    total = int(points.sum())
    polygon = torch.repeat_interleave(torch.arange(n_polygons), points)
    first = torch.cumsum(points, 0) - points
    index = torch.arange(total)
    # x[j] = (int)(scale*xy[j*2+0]+.5); y[j] = (int)(scale*xy[j*2+1]+.5); x[k] = x[0]
    x = _c_int(SCALE * coords[0::2] + 0.5)
    y = _c_int(SCALE * coords[1::2] + 0.5)
    following = torch.where(index + 1 < first[polygon] + points[polygon], index + 1, first[polygon])
    xs, ys, xe, ye = x, y, x[following], y[following]
    dx, dy = (xe - xs).abs(), (ys - ye).abs()
    along_x = dx >= dy
    # flip = (dx>=dy && xs>xe) || (dx<dy && ys>ye); if(flip) swap the ends
    flip = (along_x & (xs > xe)) | (~along_x & (ys > ye))
    xs, xe = torch.where(flip, xe, xs), torch.where(flip, xs, xe)
    ys, ye = torch.where(flip, ye, ys), torch.where(flip, ys, ye)
    # s = dx>=dy ? (double)(ye-ys)/dx : (double)(xe-xs)/dy  (0/0 for a zero-length edge: see C_INT_MIN)
    steps = torch.maximum(dx, dy)
    degenerate = steps == 0
    slope = torch.where(along_x, (ye - ys).double(), (xe - xs).double()) / steps.clamp(min=1).double()
    # the walk: dx+1 (or dy+1) points per edge, t = flip ? dx-d : d
    edge = torch.repeat_interleave(torch.arange(total), steps + 1)
    d = torch.arange(edge.numel()) - (torch.cumsum(steps + 1, 0) - (steps + 1))[edge]
    t = torch.where(flip[edge], steps[edge] - d, d)
    rounded = _c_int(torch.where(along_x[edge], ys[edge], xs[edge]).double() + slope[edge] * t.double() + 0.5)
    u = torch.where(along_x[edge], t + xs[edge], rounded)  # u[m]=t+xs or (int)(xs+s*t+.5)
    v = torch.where(along_x[edge], rounded, t + ys[edge])  # v[m]=(int)(ys+s*t+.5) or t+ys
    v = torch.where(degenerate[edge], C_INT_MIN, v)
    # for j>=1: if(u[j]!=u[j-1]) { xd = (u[j]<u[j-1] ? u[j] : u[j]-1); xd = (xd+.5)/scale-.5; ... }
    owner = polygon[edge]
    pair = (owner[1:] == owner[:-1]) & (u[1:] != u[:-1])
    u_now, u_before, v_now, v_before = u[1:], u[:-1], v[1:], v[:-1]
    xd = (torch.where(u_now < u_before, u_now, u_now - 1).double() + 0.5) / SCALE - 0.5
    keep = pair & (torch.floor(xd) == xd) & (xd >= 0) & (xd <= width - 1)
    # yd = (v[j]<v[j-1] ? v[j] : v[j-1]); yd = (yd+.5)/scale-.5; clamp to [0, h]; ceil
    yd = (torch.where(v_now < v_before, v_now, v_before).double() + 0.5) / SCALE - 0.5
    yd = torch.ceil(yd.clamp(min=0.0, max=float(height)))
    position = xd.to(torch.int64) * height + yd.to(torch.int64)  # a[j] = x[j]*h + y[j]
    return owner[1:][keep], position[keep]


def _check(polygons: Sequence[Sequence[float]]) -> tuple[Tensor, Tensor]:
    points = torch.tensor([len(p) // 2 for p in polygons], dtype=torch.int64)
    flat: list[float] = []
    for index, polygon in enumerate(polygons):  # the JSON lists, once each
        used = polygon[: 2 * (len(polygon) // 2)]
        if not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in used):
            raise BadPolygon(index, "its coordinates must be numbers")
        flat.extend(used)
    coords = torch.tensor(flat, dtype=torch.float64)
    if coords.numel() and not bool(torch.isfinite(coords).all() and (coords.abs() <= MAX_COORDINATE).all()):
        bad = ~(torch.isfinite(coords) & (coords.abs() <= MAX_COORDINATE))
        owner = torch.repeat_interleave(torch.arange(points.numel()), 2 * points)
        raise BadPolygon(int(owner[bad.to(torch.uint8).argmax()]),
                         f"a coordinate is not finite or beyond +-{MAX_COORDINATE:.0f} (pycocotools' int overflows)")
    return coords, points


def polygon_masks(polygons: Sequence[Sequence[float]], height: int, width: int) -> Tensor:
    """Each polygon drawn alone on a ``height x width`` grid as pycocotools' ``frPyObjects([polygon], h, w)``.

    Args:
        polygons: ``P`` flat coordinate lists ``[x0, y0, x1, y1, ...]`` (numbers; fewer than 2 points draw
            nothing; a trailing odd coordinate is ignored, as pycocotools ignores it).
        height, width: the image size.

    Returns:
        ``(P, height, width)`` bool.

    Raises:
        BadPolygon: a coordinate that is not a finite number, or one beyond :data:`MAX_COORDINATE`.

    Example:
        >>> polygon_masks([[0.5, 0.5, 3.5, 0.5, 3.5, 2.5, 0.5, 2.5]], 4, 5)[0].int().tolist()
        [[0, 0, 0, 0, 0], [0, 1, 1, 1, 0], [0, 1, 1, 1, 0], [0, 0, 0, 0, 0]]
    """
    coords, points = _check(polygons)
    n = points.numel()
    pixels = height * width
    out = torch.empty(n, height, width, dtype=torch.bool)
    per_chunk = max(1, CHUNK_PIXELS // max(pixels, 1))
    coord_offsets = torch.cat([points.new_zeros(1), torch.cumsum(2 * points, 0)]).tolist()
    for start in range(0, n, per_chunk):  # bounded memory: chunks of polygons
        stop = min(n, start + per_chunk)
        chunk = coords[coord_offsets[start]:coord_offsets[stop]]
        owner, position = _crossings(chunk, points[start:stop], height, width)
        # one row of h*w + 1 per polygon: a crossing at position h*w (row h of the last column) changes nothing
        toggles = torch.zeros(stop - start, pixels + 1, dtype=torch.uint8)
        toggles.view(-1).index_add_(0, owner * (pixels + 1) + position, torch.ones_like(position, dtype=torch.uint8))
        inside = torch.cumsum(toggles[:, :pixels], 1, dtype=torch.uint8) & 1  # parity (uint8 wraps at 256: even)
        out[start:stop].copy_(inside.view(stop - start, width, height).transpose(1, 2))
    return out
