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
   with its merging of zero-length runs, are this parity): sorted, they pair up into intervals.

:func:`polygon_intervals` walks many polygons of one image at once (no Python loop over points or edges; in
chunks of bounded memory) and gives their insides as intervals; :func:`polygon_masks` draws them.
:func:`nobg_metrics.io.coco.masks.segmentation_masks` unites an object's parts (pycocotools ``merge``) by
drawing all their intervals into the object's one mask.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import Tensor

from nobg_metrics.io.coco.intervals import intervals_to_masks
from nobg_metrics.io.errors import BadPolygon

SCALE = 5.0
"""maskApi.c's upsampling factor (``double scale=5``)."""

C_INT_MIN = -(2**31)
"""What x86's ``cvttsd2si`` (C's ``(int)`` of a double) gives for NaN: the y of a zero-length edge's point."""

MAX_COORDINATE = (2**31 - 1) / SCALE - 1
"""Coordinates beyond this overflow maskApi.c's ``int`` after upsampling; they are refused."""

CHUNK_POINTS = 1 << 21
"""Polygons are walked (step 2) in chunks of about this many points (memory: ~100 bytes a point)."""


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
    """Every polygon's used coordinates as one float64 tensor, and the point count of each."""
    points = torch.tensor([len(p) // 2 for p in polygons], dtype=torch.int64)
    used = [p if len(p) % 2 == 0 else p[:-1] for p in polygons]
    try:  # one conversion for all (numbers; JSON true/false read as 1/0, as numpy reads them for pycocotools)
        coords = torch.tensor(list(itertools.chain.from_iterable(used)), dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError, OverflowError):
        for index, polygon in enumerate(used):  # find the culprit
            try:
                torch.tensor(polygon, dtype=torch.float64)
            except (TypeError, ValueError, RuntimeError, OverflowError):
                raise BadPolygon(index, "its coordinates must be numbers") from None
        raise
    if coords.numel() and not bool(torch.isfinite(coords).all() and (coords.abs() <= MAX_COORDINATE).all()):
        bad = ~(torch.isfinite(coords) & (coords.abs() <= MAX_COORDINATE))
        owner = torch.repeat_interleave(torch.arange(points.numel()), 2 * points)
        raise BadPolygon(int(owner[bad.to(torch.uint8).argmax()]),
                         f"a coordinate is not finite or beyond +-{MAX_COORDINATE:.0f} (pycocotools' int overflows)")
    return coords, points


def _walk_lengths(coords: Tensor, points: Tensor) -> Tensor:
    """``(P,)``: how many points step 2 walks for each polygon (the sum of its edges' ``max(dx, dy) + 1``)."""
    n = points.numel()
    polygon = torch.repeat_interleave(torch.arange(n), points)
    first = torch.cumsum(points, 0) - points
    index = torch.arange(int(points.sum()))
    following = torch.where(index + 1 < first[polygon] + points[polygon], index + 1, first[polygon])
    x, y = _c_int(SCALE * coords[0::2] + 0.5), _c_int(SCALE * coords[1::2] + 0.5)
    steps = torch.maximum((x[following] - x).abs(), (y[following] - y).abs()) + 1
    return torch.zeros(n, dtype=torch.int64).index_add_(0, polygon, steps)


def polygon_intervals(polygons: Sequence[Sequence[float]], height: int,
                      width: int) -> tuple[Tensor, Tensor, Tensor]:
    """The inside of each polygon (step 4) as column-major intervals ``(polygon, start, stop)``.

    A polygon's crossings, sorted, pair up: ``[c0, c1)``, ``[c2, c3)``, ... (a last unpaired one runs to ``h * w``,
    pycocotools' final count) — the parity fill, duplicates included (``[a, b), [b, c)`` is ``[a, c)``).
    Polygons are walked in chunks of at most :data:`CHUNK_POINTS` points.

    Raises:
        BadPolygon: see :func:`polygon_masks`.
    """
    coords, points = _check(polygons)
    pixels = height * width
    n = points.numel()
    walk = _walk_lengths(coords, points)
    coord_offsets = torch.cat([points.new_zeros(1), torch.cumsum(2 * points, 0)]).tolist()
    chunk_of = (torch.cumsum(walk, 0) - walk) // CHUNK_POINTS
    bounds = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(torch.bincount(chunk_of), 0)]).tolist()
    keys = []
    for start, stop in itertools.pairwise(bounds):  # bounded memory: chunks of polygons
        if stop == start:
            continue
        owner, position = _crossings(coords[coord_offsets[start]:coord_offsets[stop]], points[start:stop], height,
                                     width)
        keys.append((owner + start) * (pixels + 1) + position)
    key = torch.sort(torch.cat(keys) if keys else torch.zeros(0, dtype=torch.int64)).values
    owner, position = key // (pixels + 1), key % (pixels + 1)
    count = torch.bincount(owner, minlength=n)
    rank = torch.arange(key.numel()) - (torch.cumsum(count, 0) - count)[owner]
    paired = torch.cat([owner[1:] == owner[:-1], owner.new_zeros(min(1, key.numel()), dtype=torch.bool)])
    following = torch.where(paired, torch.roll(position, -1), pixels)
    opens = rank % 2 == 0
    return owner[opens], position[opens], following[opens]


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

    Examples:
        >>> polygon_masks([[0.5, 0.5, 3.5, 0.5, 3.5, 2.5, 0.5, 2.5]], 4, 5)[0].int().tolist()
        [[0, 0, 0, 0, 0], [0, 1, 1, 1, 0], [0, 1, 1, 1, 0], [0, 0, 0, 0, 0]]
    """
    return intervals_to_masks(*polygon_intervals(polygons, height, width), len(polygons), height, width)
